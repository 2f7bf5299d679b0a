/**
 * Which events a webhook subscription receives.
 */

import { EVENT_TYPES } from '../schemas.js';

/** The history event types a subscription may name (or `'*'` for all): every event type. */
export const WEBHOOK_EVENT_TYPES = EVENT_TYPES;

/** One of {@link WEBHOOK_EVENT_TYPES}. */
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The parts of a subscription that decide what it receives. */
export interface SubscriptionMatch {
  /** Event types, or `'*'` for every type. */
  events: readonly string[];
  /** Optional narrowing; `null` (or an empty object) narrows nothing. */
  filter: { verdicts?: readonly string[]; session_id?: string } | null;
}

/** The parts of an event a subscription is matched against. */
export interface MatchableEvent {
  type: string;
  session_id: string;
  data: unknown;
}

/**
 * True when `sub` should receive `event`: its `events` list the type or `'*'`, and every filter
 * given holds. `filter.session_id` must equal the event's session. `filter.verdicts` keeps only
 * events whose `data.verdict` is one of the listed strings (exact, case-sensitive), so events
 * without a verdict never match it, and an empty list matches nothing.
 * @example
 * matchesSubscription({ events: ['*'], filter: { verdicts: ['Block'] } },
 *   { type: 'gate_evaluation', session_id: 's1', data: { verdict: 'Block' } }) // true
 */
export function matchesSubscription(sub: SubscriptionMatch, event: MatchableEvent): boolean {
  if (!sub.events.includes('*') && !sub.events.includes(event.type)) return false;
  const filter = sub.filter;
  if (filter === null) return true;
  if (filter.session_id !== undefined && filter.session_id !== event.session_id) return false;
  if (filter.verdicts !== undefined) {
    const verdict = verdictOf(event.data);
    if (verdict === undefined || !filter.verdicts.includes(verdict)) return false;
  }
  return true;
}

function verdictOf(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined;
  const verdict = (data as { verdict?: unknown }).verdict;
  return typeof verdict === 'string' ? verdict : undefined;
}
