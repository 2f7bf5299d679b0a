/**
 * Replay: re-evaluates recorded decisions against a candidate policy, each on the session's state
 * as it was at that decision's position in the history and at the decision's own `now`.
 *
 * One pass over the tenant's events in seq order (or one session's, with a session filter).
 * Sessions are rebuilt on demand from their stored versions and conflicts plus their own events
 * before the decision, then moved forward by the pass; a bounded cache holds them, so memory
 * stays flat however many decisions are replayed. Nothing is written here.
 *
 * The pass runs in slices that yield to the event loop, within a time budget (then it stops as
 * `limit` stops it, saying where to continue), and ends when its `signal` aborts (see
 * {@link ReplayPacer}).
 */
import { GatehouseError } from '../errors.js';
import { compileActionPattern } from '../gate/actionMatcher.js';
import type { CompiledPolicy, GateReason, Verdict } from '../gate/gateTypes.js';
import { KEY_SET_READ } from '../gate/stateReads.js';
import { isErased } from '../history/commitments.js';
import type { Decision, EventType } from '../schemas.js';
import { maskSecrets } from '../state/maskSecrets.js';
import type { StoredEvent, StoreReader } from '../store.js';
import type { ReplayReport } from './lifecycleSchemas.js';
import { withRecordedApproval } from './replayApprovals.js';
import { ReplayPacer } from './replayPacer.js';
import { type DecisionOutcome, firedRules, type ReplayComparison, ReplayTally } from './replayReport.js';
import { SessionTimeline, STATE_EVENT_TYPES } from './sessionTimeline.js';

/** Events read per query. */
const PAGE = 1000;
/** Clocks of several instances may disagree this much: time filters search with this slack. */
const CLOCK_SLACK_MS = 60_000;

/** What {@link replayDecisions} replays. */
export interface ReplayDecisionsOptions {
  store: StoreReader;
  tenantId: string;
  candidate: CompiledPolicy;
  /** ISO 8601: only decisions evaluated at or after. */
  since?: string | undefined;
  /** ISO 8601: only decisions evaluated before. */
  until?: string | undefined;
  sessionId?: string | undefined;
  /** An action name or glob. */
  action?: string | undefined;
  /** At most this many decisions; then `next_after_seq` says where to continue. */
  limit?: number | undefined;
  /** Start after this seq. */
  afterSeq?: number | undefined;
  /** @default 10 */
  examples?: number;
  /**
   * Version rows (plus conflicts) of the sessions kept between decisions; past it the least
   * recently used session is dropped and rebuilt if needed again.
   * @default 200000
   */
  cacheRows?: number;
  /** Called for every replayed decision (tests compare every field; benchmarks count). */
  onDecision?: (replayed: ReplayedDecision) => void;
  /**
   * Stops the replay: it rejects with the signal's reason (an `AbortError`), and reports nothing.
   * The HTTP face aborts it when the client disconnects.
   */
  signal?: AbortSignal | undefined;
  /**
   * Past this much time the replay stops at the next event (once it has read at least one, so
   * each call goes further; it may have replayed no decision when its filters match none), with
   * `stopped_by: 'time_budget'` and `next_after_seq` to continue.
   * @default REPLAY_TIME_BUDGET_MS (20 s)
   */
  timeBudgetMs?: number | undefined;
  /** A monotonic clock in milliseconds, for the slices and the budget. @default performance.now */
  timer?: (() => number) | undefined;
}

/** One replayed decision, as {@link ReplayDecisionsOptions.onDecision} sees it. */
export interface ReplayedDecision {
  seq: number;
  recorded: Decision;
  /** The candidate's result, masked like a recorded decision. */
  replayed: DecisionOutcome;
  comparison: ReplayComparison;
  pinned: boolean;
}

const STATE_EVENTS = new Set<string>(STATE_EVENT_TYPES);

/** Replays recorded decisions; returns the report (without an `event_id`: the caller records it). */
export async function replayDecisions(
  options: ReplayDecisionsOptions,
): Promise<Omit<ReplayReport, 'event_id'>> {
  const { store, tenantId, candidate } = options;
  const pacer = new ReplayPacer(options);
  const examples = options.examples ?? 10;
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const matchesAction = options.action === undefined ? () => true : actionFilter(options.action);
  const sinceMs = options.since === undefined ? undefined : Date.parse(options.since);
  const untilMs = options.until === undefined ? undefined : Date.parse(options.until);
  const tally = new ReplayTally({
    examples,
    candidateRules: [...new Set(candidate.rules.map((r) => r.name))],
  });

  const [head] = await store.queryEvents(tenantId, { order: 'desc', limit: 1 });
  const endSeq = head?.seq ?? 0;
  // Seqs start at 1: a later first one means the oldest events were pruned.
  const [first] = await store.queryEvents(tenantId, { order: 'asc', limit: 1 });
  const pruned = (first?.seq ?? 1) > 1;
  const sessions = new SessionCache(options.cacheRows ?? 200_000);
  /** A session's rows, and its state at its first kept event. */
  const start = async (sessionId: string): Promise<SessionTimeline> => {
    const timeline = await SessionTimeline.load(store, tenantId, sessionId);
    if (pruned) await timeline.startAfterPrune(keptStateEvents(store, tenantId, sessionId, pacer));
    return timeline;
  };
  const load = async (sessionId: string, beforeSeq: number): Promise<SessionTimeline> => {
    const timeline = await start(sessionId);
    for await (const event of sessionEvents(store, tenantId, sessionId, 0, beforeSeq - 1)) {
      timeline.apply(event);
      await pacer.step();
    }
    return timeline;
  };

  let fromSeq = options.afterSeq ?? 0;
  if (options.afterSeq === undefined && sinceMs !== undefined && options.sessionId === undefined) {
    fromSeq = await lastSeqBefore(store, tenantId, sinceMs - CLOCK_SLACK_MS, endSeq);
  }
  // With a session filter the pass reads only that session's events, from its first: cheap, and
  // the state is then built by the pass itself.
  const events =
    options.sessionId === undefined
      ? tenantEvents(store, tenantId, fromSeq, endSeq)
      : sessionEvents(store, tenantId, options.sessionId, 0, endSeq);
  if (options.sessionId !== undefined) {
    sessions.put(options.sessionId, await start(options.sessionId));
  }

  let lastSeq = fromSeq;
  let nextAfterSeq: number | null = null;
  let stoppedBy: ReplayReport['stopped_by'] = null;
  const unreplayable = { inputs_erased: 0, state_erased: 0 };
  for await (const event of events) {
    await pacer.step();
    if (event.type === 'gate_evaluation' && event.seq > fromSeq) {
      if (untilMs !== undefined && Date.parse(event.occurred_at) >= untilMs + CLOCK_SLACK_MS) break;
      if (tally.decisions >= limit) {
        nextAfterSeq = lastSeq;
        stoppedBy = 'limit';
        break;
      }
    }
    // At any event once the pass has moved on, not only at a decision replayed: a filter that
    // matches nothing would otherwise read the whole history in one call.
    if (event.seq > fromSeq && lastSeq > fromSeq && pacer.outOfTime) {
      nextAfterSeq = lastSeq;
      stoppedBy = 'time_budget';
      break;
    }
    if (event.seq > lastSeq) lastSeq = event.seq;
    if (STATE_EVENTS.has(event.type)) {
      sessions.peek(event.session_id)?.apply(event);
      continue;
    }
    if (event.type !== 'gate_evaluation' || event.seq <= fromSeq) continue;
    const recorded = event.data as unknown as Decision & {
      params?: Record<string, unknown>;
      context?: Record<string, unknown>;
    };
    const at = Date.parse(recorded.evaluated_at);
    if (sinceMs !== undefined && at < sinceMs) continue;
    if (untilMs !== undefined && at >= untilMs) continue;
    if (!matchesAction(recorded.action)) continue;
    // Its inputs were erased (and with them its session's state): counted, not replayed.
    if (isErased(recorded.params) || isErased(recorded.context)) {
      unreplayable.inputs_erased += 1;
      continue;
    }

    let timeline = sessions.get(event.session_id);
    if (!timeline) {
      timeline = await load(event.session_id, event.seq);
      sessions.put(event.session_id, timeline);
    }
    timeline.closeErasedConflicts(recorded.evaluated_at);
    const view = timeline.view(recorded.state_versions);
    const result = candidate.evaluate({
      action: recorded.action,
      params: recorded.params ?? {},
      context: recorded.context ?? {},
      state: view.state,
      conflicts: view.conflicts,
      now: new Date(at),
    });
    // A value it read (as recorded, or now) was erased after this position: its verdict rested on
    // a value no longer known. Counted, not compared.
    if (readsAny(view.erased, recorded.state_versions) || readsAny(view.erased, result.stateVersions)) {
      unreplayable.state_erased += 1;
      continue;
    }
    // Masked as evaluate masks a decision, so messages compare with the recorded ones.
    const secrets = new Set<string>();
    for (const item of Object.values(view.state)) {
      if (timeline.secrets.has(item.value)) secrets.add(item.value);
    }
    const before: DecisionOutcome = {
      verdict: recorded.verdict as Verdict,
      reason: recorded.reason,
      reasons: (recorded.reasons ?? []) as GateReason[],
      shadow: (recorded.shadow ?? []) as GateReason[],
    };
    const replayed = withRecordedApproval(
      { ...before, approval: recorded.approval },
      maskSecrets(
        { verdict: result.verdict, reason: result.reason, reasons: result.reasons, shadow: result.shadow },
        'decision',
        secrets,
      ) as DecisionOutcome,
      result,
    );
    const comparison = tally.add({
      before,
      after: replayed,
      revision: recorded.policy?.revision ?? 'unknown',
      pinned: view.pinnedKeys > 0,
      example: () => ({
        decision_id: recorded.decision_id,
        seq: event.seq,
        session_id: event.session_id,
        action: recorded.action,
        evaluated_at: recorded.evaluated_at,
        before: { verdict: before.verdict, reason: before.reason, rules: firedRules(before) },
        after: {
          verdict: replayed.verdict,
          reason: String(maskSecrets(replayed.reason, 'reason', timeline.secrets)),
          rules: firedRules(replayed),
        },
      }),
    });
    options.onDecision?.({
      seq: event.seq,
      recorded,
      replayed,
      comparison,
      pinned: view.pinnedKeys > 0,
    });
  }

  return {
    candidate: { revision: candidate.revision },
    filters: {
      since: options.since ?? null,
      until: options.until ?? null,
      session_id: options.sessionId ?? null,
      action: options.action ?? null,
    },
    ...tally.summary(),
    unreplayable: unreplayable.inputs_erased + unreplayable.state_erased,
    unreplayable_reasons: unreplayable,
    from_seq: fromSeq,
    to_seq: lastSeq,
    next_after_seq: nextAfterSeq,
    stopped_by: stoppedBy,
  };
}

/** The `action` filter as a matcher. @throws {GatehouseError} `invalid_request` for a pattern refused */
function actionFilter(pattern: string): (action: string) => boolean {
  try {
    return compileActionPattern(pattern);
  } catch (error) {
    const message = `Invalid action pattern: ${(error as Error).message}`;
    throw new GatehouseError('invalid_request', message, { errors: [{ path: 'action', message }] });
  }
}

/** A tenant's events after `after` up to `end`, in seq order. */
async function* tenantEvents(
  store: StoreReader,
  tenantId: string,
  after: number,
  end: number,
): AsyncIterable<StoredEvent> {
  let position = after;
  while (position < end) {
    const page = await store.queryEvents(tenantId, { after_seq: position, order: 'asc', limit: PAGE });
    if (page.length === 0) return;
    for (const event of page) {
      if (event.seq > end) return;
      yield event;
    }
    position = page[page.length - 1]!.seq;
  }
}

/** True when `reads` (a decision's `state_versions`) names one of `keys` or enumerated them all. */
function readsAny(keys: readonly string[], reads: Readonly<Record<string, number>> | undefined): boolean {
  if (keys.length === 0 || reads === undefined) return false;
  return Object.hasOwn(reads, KEY_SET_READ) || keys.some((key) => Object.hasOwn(reads, key));
}

/** One session's events after `after` up to `end` (of one type when given), in seq order. */
async function* sessionEvents(
  store: StoreReader,
  tenantId: string,
  sessionId: string,
  after: number,
  end: number,
  type?: EventType,
): AsyncIterable<StoredEvent> {
  let position = after;
  while (position < end) {
    const page = await store.queryEvents(tenantId, {
      session_id: sessionId,
      type,
      after_seq: position,
      order: 'asc',
      limit: PAGE,
    });
    if (page.length === 0) return;
    for (const event of page) {
      if (event.seq > end) return;
      yield event;
    }
    position = page[page.length - 1]!.seq;
  }
}

/** Every kept event of a session that moves its state, by type (each on its own index). */
async function* keptStateEvents(
  store: StoreReader,
  tenantId: string,
  sessionId: string,
  pacer: ReplayPacer,
): AsyncIterable<StoredEvent> {
  for (const type of STATE_EVENT_TYPES) {
    for await (const event of sessionEvents(store, tenantId, sessionId, 0, Number.POSITIVE_INFINITY, type)) {
      yield event;
      await pacer.step();
    }
  }
}

/**
 * The last seq whose event occurred before `ms`, by binary search over seq (events are appended
 * in time order, give or take the instances' clocks): about 20 point reads for a million events.
 */
async function lastSeqBefore(store: StoreReader, tenantId: string, ms: number, end: number): Promise<number> {
  const occurredAt = async (seq: number): Promise<number | undefined> => {
    const [event] = await store.queryEvents(tenantId, { after_seq: seq - 1, order: 'asc', limit: 1 });
    return event === undefined ? undefined : Date.parse(event.occurred_at);
  };
  let low = 0; // known: before ms (or the start)
  let high = end + 1; // known: at or after ms (or past the end)
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    const at = await occurredAt(middle);
    if (at !== undefined && at < ms) low = middle;
    else high = middle;
  }
  return low;
}

/** Sessions by ID, least recently used first, bounded by their rows. */
class SessionCache {
  readonly #entries = new Map<string, SessionTimeline>();
  readonly #limit: number;
  #rows = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Without refreshing its place: state events should not keep a session that is never evaluated. */
  peek(sessionId: string): SessionTimeline | undefined {
    return this.#entries.get(sessionId);
  }

  get(sessionId: string): SessionTimeline | undefined {
    const timeline = this.#entries.get(sessionId);
    if (timeline) {
      this.#entries.delete(sessionId);
      this.#entries.set(sessionId, timeline);
    }
    return timeline;
  }

  put(sessionId: string, timeline: SessionTimeline): void {
    this.#entries.set(sessionId, timeline);
    this.#rows += timeline.weight;
    for (const [id, oldest] of this.#entries) {
      if (this.#rows <= this.#limit || id === sessionId) break;
      this.#entries.delete(id);
      this.#rows -= oldest.weight;
    }
  }
}
