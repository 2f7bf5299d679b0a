/**
 * The webhook body: what is signed is exactly what is sent.
 */
import { z } from 'zod';

/** The body every Gatehouse webhook delivers. `id` equals the `webhook-id` header. */
export const WebhookEventSchema = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  occurred_at: z.string(),
  session_id: z.string(),
  data: z.unknown(),
});

/** A delivered webhook event, as {@link buildWebhookPayload} writes it. */
export type WebhookEvent = z.infer<typeof WebhookEventSchema>;

/** The history event fields a webhook carries. */
export interface WebhookSourceEvent {
  event_id: string;
  type: string;
  occurred_at: string;
  session_id: string;
  /** Left out where the caller passes `dataJson` instead (a missing `data` is sent as `null`). */
  data?: unknown;
}

/**
 * Serialises the body of a delivery: `{id, type, occurred_at, session_id, data}` as JSON, in that
 * key order. Sign and send this exact string; never re-serialise it. Secret values must already be
 * masked in `data` (history events are). `data: undefined` is sent as `null`.
 * @param dataJson `JSON.stringify(event.data)`, where the caller has it already (a store keeps an
 *   event's data as that text): the same body, without serialising `data` again — most of the
 *   body, and a visible share of a webhook drain's CPU.
 * @throws TypeError if `data` cannot be serialised to JSON (a BigInt, a cycle).
 * @example
 * buildWebhookPayload({ event_id: 'evt_1', type: 'gate_evaluation', occurred_at: '2025-01-01T00:00:00.000Z',
 *   session_id: 's1', data: { verdict: 'Block' } })
 * // '{"id":"evt_1","type":"gate_evaluation",…,"data":{"verdict":"Block"}}'
 */
export function buildWebhookPayload(event: WebhookSourceEvent, dataJson?: string): string {
  if (dataJson !== undefined) {
    // What JSON.stringify writes for the object below, with `data` already written.
    return `{"id":${JSON.stringify(event.event_id)},"type":${JSON.stringify(event.type)},"occurred_at":${JSON.stringify(event.occurred_at)},"session_id":${JSON.stringify(event.session_id)},"data":${dataJson}}`;
  }
  const body: WebhookEvent = {
    id: event.event_id,
    type: event.type,
    occurred_at: event.occurred_at,
    session_id: event.session_id,
    data: event.data === undefined ? null : event.data,
  };
  return JSON.stringify(body);
}
