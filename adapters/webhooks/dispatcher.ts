/**
 * The webhook sender: drains the transactional outbox. Deliveries are claimed with a lease (so
 * several instances never send one attempt twice, and a crashed instance's work is picked up
 * when its lease ends), POSTed through the SSRF-guarded agent with hard timeouts, and their
 * outcome recorded: 2xx delivered, 410 disables the endpoint, anything else is retried on the
 * backoff schedule until it is exhausted and the delivery is marked failed.
 *
 * A delivery is claimed only when a slot is free to send it, never ahead: the claim reads its
 * webhook (URL, secrets, status) and its event with the event's values as they are then, and the
 * attempt starts at once. So what was deleted, disabled (a 410 seen by any instance), rotated or
 * erased before an attempt starts is what that attempt sees. The store is still met in batches,
 * not once per delivery: the outcomes that arrive in one event-loop turn are recorded with one
 * commit, and the slots that commit frees are filled by one claim. A delivery is marked delivered
 * only once its 2xx is in; until its outcome is committed it stays leased (and holds its slot), so
 * a crash in between sends it again (at least once, never lost). An outcome is recorded only over
 * the lease its attempt was claimed with: an attempt that outlived its lease (sent again by
 * another instance since) or whose delivery a redeliver reset meanwhile leaves what came after.
 *
 * Slots are shared between tenants, not handed out in due order alone: a free slot goes to the
 * tenant holding the fewest, and no tenant holds more than `perTenant` (all but one slot by
 * default). So a tenant whose endpoint never answers, with thousands of deliveries due, holds at
 * most that many slots for a timeout each, and another tenant's event goes out in the slot left:
 * at once, or, behind that backlog, once a claim's walk over the tenants with pending deliveries
 * (16 a claim, a claim every 100 ms meanwhile) reaches its tenant (src/webhooks/fairShare.ts).
 */

import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import {
  buildWebhookPayload,
  type ClaimedDelivery,
  type ClaimShare,
  classifyDeliveryResponse,
  type DeliveryAttempt,
  type DeliveryLease,
  isoTime,
  isSecretActive,
  nextRetryDelay,
  type OutboxStore,
  parseRetryAfter,
  type RecordedDeliveryAttempt,
  webhookShareKey,
  webhookSignatureHeader,
} from '../../src/index.js';
import { createAttemptDeadlines } from './attemptDeadlines.js';
import { deliveryTraceHeaders, inDeliverySpan, noteDeliveryOutcome } from './deliverySpan.js';
import type { Resolver, WebhookUrlPolicy } from './destinationPolicy.js';
import { createWebhookAgent } from './guardedConnector.js';
import { postDelivery } from './postDelivery.js';

/** Options for {@link createWebhookDispatcher}. */
export interface WebhookDispatcherOptions {
  store: OutboxStore;
  /** The SSRF policy; `allowInsecureLoopback` is for development only. */
  urlPolicy: WebhookUrlPolicy;
  /** DNS resolver for the SSRF guard (tests inject one). @default dns.lookup */
  resolve?: Resolver;
  /** Sends the requests. @default an SSRF-guarded undici Agent */
  dispatcher?: Dispatcher;
  /** @default () => new Date() */
  clock?: () => Date;
  /** @default Math.random */
  random?: () => number;
  /**
   * Deliveries held at once: each from its claim until its outcome is recorded (so at most this
   * many attempts in flight). After a crash, those wait for their lease to end. @default 8
   */
  concurrency?: number;
  /**
   * Most deliveries one tenant holds at once, so that a tenant whose endpoint is slow or never
   * answers cannot take every slot, a timeout each. Free slots go to the tenant holding the
   * fewest (then to its webhook holding the fewest), earliest due first among equals.
   * @default concurrency - 1 (1 when concurrency is 1)
   */
  perTenant?: number;
  /** How long a claimed delivery is reserved for this instance. @default 60 s */
  leaseMs?: number;
  /**
   * Hard limit for one attempt (name resolution, connect, headers and body), enforced within a
   * tenth of itself (at most 1 s) late. @default 15 s
   */
  timeoutMs?: number;
  /** Longest sleep between looks at the outbox (other instances add work too). @default 1 s */
  pollIntervalMs?: number;
  /** Called with any failure of the loop itself; attempts' failures are recorded, not raised. */
  onError?: (error: unknown) => void;
  /** Called after each recorded attempt (metrics, tests). */
  onAttempt?: (attempt: {
    deliveryId: string;
    status: 'pending' | 'delivered' | 'failed';
    statusCode: number | null;
  }) => void;
  logger?: Logger;
}

/** A running sender. */
export interface WebhookDispatcher {
  /** Starts the background loop. */
  start(): void;
  /** Looks at the outbox now (called when a transaction queued deliveries). */
  wake(): void;
  /** Sends everything due now and waits for those attempts (tests, CLI). */
  drain(): Promise<number>;
  /**
   * Stops claiming, waits for attempts in flight up to `deadlineMs` (default 10 s), then aborts
   * those still waiting for their endpoint (through its own HTTP client; one passed as
   * `dispatcher` is the caller's to close); safe twice.
   */
  close(deadlineMs?: number): Promise<void>;
}

const USER_AGENT = 'Gatehouse-Webhooks/1';

/** Longest an outcome waits for others to share its commit. */
const RECORD_WAIT_MS = 2;

/** How long `close()` waits for the outcomes of the attempts it aborted to be recorded. */
const ABORTED_RECORD_MS = 1000;

/** How soon the sender looks again while a tenant holds its cap and slots are free. */
const CAPPED_LOOK_MS = 100;

/** Most outcomes recorded by one commit. */
const RECORD_BATCH_MAX = 64;

/** A webhook's failed attempts are logged at most once per this long (the rest are counted). */
const FAILURE_LOG_INTERVAL_MS = 60_000;

/** An attempt's outcome, waiting to be recorded. */
interface Outcome extends RecordedDeliveryAttempt {
  webhookId: string;
  statusCode: number | null;
}

/** Adds `by` to `key`'s count, dropping it at zero. */
function tally(counts: Map<string, number>, key: string, by: 1 | -1): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}

/** Describes an error for `last_error` without leaking internals. */
function describeError(error: unknown): string {
  const e = error as { code?: string; name?: string; message?: string };
  if (
    e?.name === 'TimeoutError' ||
    e?.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    e?.code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return 'timeout: the endpoint did not answer in time';
  }
  const text = `${e?.code ? `${e.code}: ` : ''}${e?.message ?? String(error)}`;
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}

/**
 * The secrets that sign at `now`: every one without an expiry, and those inside their rotation
 * overlap. The clock is formatted only when a secret has an expiry to compare it with.
 */
function activeSecrets(webhook: ClaimedDelivery['webhook'], now: Date): string[] {
  const secrets: string[] = [];
  let nowIso: string | undefined;
  for (const s of webhook.secrets) {
    if (s.expires_at !== null) {
      nowIso ??= now.toISOString();
      if (!isSecretActive(s, nowIso)) continue;
    }
    secrets.push(s.secret);
  }
  return secrets;
}

/**
 * Creates the outbox dispatcher.
 * @example
 * const dispatcher = createWebhookDispatcher({ store, urlPolicy: { allowInsecureLoopback: false } });
 * dispatcher.start();
 */
export function createWebhookDispatcher(options: WebhookDispatcherOptions): WebhookDispatcher {
  const store = options.store;
  const clock = options.clock ?? (() => new Date());
  const random = options.random ?? Math.random;
  const concurrency = options.concurrency ?? 8;
  const perTenant = options.perTenant ?? Math.max(1, concurrency - 1);
  if (!Number.isInteger(perTenant) || perTenant < 1) {
    throw new RangeError(`perTenant must be a positive integer (got ${perTenant}): 0 would send nothing.`);
  }
  const leaseMs = options.leaseMs ?? 60_000;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const pollMs = options.pollIntervalMs ?? 1000;
  const ownAgent = options.dispatcher
    ? undefined
    : createWebhookAgent({
        policy: options.urlPolicy,
        ...(options.resolve ? { resolve: options.resolve } : {}),
        headersTimeoutMs: timeoutMs,
        bodyTimeoutMs: timeoutMs,
      });
  const agent: Dispatcher = options.dispatcher ?? ownAgent!;
  const deadlines = createAttemptDeadlines(timeoutMs);
  /** Attempts in flight (request sent or about to be). */
  const slots = new Set<Promise<void>>();
  /** Slots promised to claims under way (two claims at once must not fill one slot twice). */
  let claiming = 0;
  /** What {@link held} holds, per tenant and per webhook: what the claim shares slots by. */
  const heldByTenant = new Map<string, number>();
  const heldByWebhook = new Map<string, number>();
  const share: ClaimShare = { heldByTenant, heldByWebhook, perTenant };
  /** Outcomes not committed yet (queued or being written). */
  const outcomes: Outcome[] = [];
  let recording = 0;
  let flushing: Promise<void> | undefined;
  /** Ends the gathering of the next commit's outcomes early. */
  let flushSoon: (() => void) | undefined;
  /** Attempts started, for drain()'s count. */
  let launched = 0;
  /** Leases being given back: a drain waits for them, since they make deliveries due again. */
  const releasing = new Set<Promise<void>>();
  let running = false;
  let closed = false;
  let loop: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;
  let woken = false;
  let progressWaiters: Array<() => void> = [];
  /** Who waits for a held delivery to be let go (a tenant at its cap may then take another). */
  let freedWaiters: Array<() => void> = [];

  /** Per webhook: when its last failed attempt was logged, and how many failed since unlogged. */
  const failureLogs = new Map<string, { at: number; unlogged: number }>();

  /**
   * Logs a failed attempt, at most once per {@link FAILURE_LOG_INTERVAL_MS} per webhook: an
   * endpoint that is down fails every queued delivery. The endpoint is named by its host only
   * (a webhook URL's path or query may carry a token).
   */
  function logFailure(webhook: ClaimedDelivery['webhook'], failure: Record<string, unknown>): void {
    const logger = options.logger;
    if (!logger) return;
    const now = clock().getTime();
    const last = failureLogs.get(webhook.id);
    if (last && now - last.at < FAILURE_LOG_INTERVAL_MS) {
      last.unlogged += 1;
      return;
    }
    failureLogs.set(webhook.id, { at: now, unlogged: 0 });
    let host: string;
    try {
      host = new URL(webhook.url).host;
    } catch {
      host = '(unparsable URL)';
    }
    logger.warn(
      {
        webhook_id: webhook.id,
        host,
        ...failure,
        ...(last?.unlogged ? { failed_since_last_log: last.unlogged } : {}),
      },
      failure['next_attempt_at']
        ? 'webhook delivery failed; it will be retried'
        : 'webhook delivery failed; no retries left',
    );
  }

  /** The slots taken: every delivery this sender holds a lease on and has not recorded. */
  const held = () => slots.size + recording;

  /** Counts a delivery held (from its claim until its outcome is recorded), or no longer held. */
  function hold(tenantId: string, webhookId: string, by: 1 | -1): void {
    tally(heldByTenant, tenantId, by);
    tally(heldByWebhook, webhookShareKey(tenantId, webhookId), by);
    if (by === -1) {
      const waiters = freedWaiters;
      freedWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  function nextFreed(): Promise<void> {
    return new Promise((resolve) => freedWaiters.push(resolve));
  }

  /** Some tenant holds its cap: a claim may have left due deliveries of its for a slot to free. */
  const anyAtCap = () => {
    for (const n of heldByTenant.values()) if (n >= perTenant) return true;
    return false;
  };

  /** Reported on a later microtask, as a rejected attempt was: a throwing `onError` stops nothing here. */
  function report(error: unknown): void {
    queueMicrotask(() => options.onError?.(error));
  }

  /** Wakes whoever waits for a slot to free up or an outcome to be recorded. */
  function progressed(): void {
    const waiters = progressWaiters;
    progressWaiters = [];
    for (const resolve of waiters) resolve();
  }

  function nextProgress(): Promise<void> {
    return new Promise((resolve) => progressWaiters.push(resolve));
  }

  /**
   * Sends one attempt; resolves to its outcome for the store (a 410 disables the webhook now),
   * recorded only while the delivery still holds the lease `leaseUntil` it was claimed with.
   */
  async function attempt(claimed: ClaimedDelivery, leaseUntil: string): Promise<Outcome> {
    const { delivery, webhook, event, tenant_id: tenantId } = claimed;
    const started = clock();
    const secrets = activeSecrets(webhook, started);
    const body = buildWebhookPayload(event, claimed.event_data_json);
    const timestamp = Math.floor(started.getTime() / 1000);
    let statusCode: number | null = null;
    let retryAfter: number | undefined;
    let error: string | null = null;
    let errorType: string | undefined;
    let done: (() => void) | undefined;
    try {
      const res = await postDelivery(
        agent,
        webhook.url,
        {
          body,
          headers: {
            'content-type': 'application/json',
            'user-agent': USER_AGENT,
            'webhook-id': event.event_id,
            'webhook-timestamp': String(timestamp),
            'webhook-signature': webhookSignatureHeader(secrets, event.event_id, timestamp, body),
            ...deliveryTraceHeaders(),
          },
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        },
        (request) => {
          done = deadlines.start((reason) => request.abort(reason));
        },
      );
      statusCode = res.statusCode;
      if (res.retryAfter !== undefined) retryAfter = parseRetryAfter(res.retryAfter, clock());
    } catch (e) {
      error = describeError(e);
      const code = (e as { code?: unknown } | null)?.code;
      errorType = typeof code === 'string' ? code : 'request_failed';
    } finally {
      done?.();
    }
    const attempts = delivery.attempts + 1;
    const at = clock();
    const atIso = isoTime(at);
    const outcome = statusCode === null ? 'retry' : classifyDeliveryResponse(statusCode);
    let status: DeliveryAttempt['status'] = 'failed';
    let nextAttemptAt: string | null = null;
    let lastError: string | null = null;
    if (outcome === 'delivered') {
      status = 'delivered';
    } else if (outcome === 'disable') {
      await store.disableWebhook(tenantId, webhook.id, atIso);
      lastError = 'the endpoint answered 410 Gone: the webhook is disabled';
      options.logger?.warn({ webhook_id: webhook.id }, 'webhook disabled: the endpoint answered 410');
    } else {
      const delay = nextRetryDelay(attempts, { random, retryAfterSeconds: retryAfter });
      if (delay !== null) {
        status = 'pending';
        nextAttemptAt = new Date(at.getTime() + delay).toISOString();
      }
      lastError = error ?? `the endpoint answered HTTP ${statusCode}`;
      logFailure(webhook, {
        delivery_id: delivery.delivery_id,
        attempts,
        error: lastError,
        next_attempt_at: nextAttemptAt,
      });
    }
    noteDeliveryOutcome(
      outcome === 'retry' ? 'pending' : status,
      statusCode,
      outcome === 'delivered' ? undefined : (errorType ?? String(statusCode)),
    );
    return {
      tenantId,
      webhookId: webhook.id,
      deliveryId: delivery.delivery_id,
      leaseUntil,
      statusCode,
      attempt: {
        status,
        attempts,
        next_attempt_at: nextAttemptAt,
        last_status_code: statusCode,
        last_error: lastError,
        delivered_at: status === 'delivered' ? atIso : null,
        updated_at: atIso,
      },
    };
  }

  /** Queues an outcome; the outcomes of one event-loop turn are committed together. */
  function record(outcome: Outcome): void {
    outcomes.push(outcome);
    recording += 1;
    flushing ??= flush();
    if (gatheredEnough()) flushSoon?.();
  }

  /** A slot's worth of outcomes, or no other attempt in flight (the one recording still counts), or closing. */
  function gatheredEnough(): boolean {
    return outcomes.length >= concurrency || slots.size <= 1 || closed;
  }

  /**
   * Waits for outcomes to gather before a commit ({@link gatheredEnough}), {@link RECORD_WAIT_MS}
   * at most.
   * A commit (with its BEGIN) cost about as much as five of its updates, and the answers of a
   * drain arrive a few per turn.
   */
  function gathered(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(go, RECORD_WAIT_MS);
      function go() {
        clearTimeout(timer);
        flushSoon = undefined;
        // Still a turn later, so that the answers of this one join.
        setImmediate(resolve);
      }
      flushSoon = go;
      if (gatheredEnough()) go();
    });
  }

  async function flush(): Promise<void> {
    await gathered();
    while (outcomes.length > 0) {
      const batch = outcomes.splice(0, RECORD_BATCH_MAX);
      try {
        await store.recordDeliveryAttempts(batch);
        for (const o of batch) {
          options.onAttempt?.({
            deliveryId: o.deliveryId,
            status: o.attempt.status,
            statusCode: o.statusCode,
          });
        }
      } catch (error) {
        // Not recorded: each stays leased and is sent again once its lease ends.
        report(error);
      } finally {
        recording -= batch.length;
        for (const o of batch) hold(o.tenantId, o.webhookId, -1);
        progressed();
      }
    }
    flushing = undefined;
  }

  /** Returns leases of deliveries that were never attempted, so they are due again now. */
  function release(leases: readonly DeliveryLease[]): void {
    const p = store
      .releaseDeliveries(leases)
      .catch(report)
      .finally(() => releasing.delete(p));
    releasing.add(p);
  }

  function launch(claimed: ClaimedDelivery, leaseUntil: string): void {
    launched += 1;
    hold(claimed.tenant_id, claimed.webhook.id, 1);
    const p = inDeliverySpan(claimed, () => attempt(claimed, leaseUntil))
      .then(record, (error) => {
        hold(claimed.tenant_id, claimed.webhook.id, -1);
        report(error);
      })
      .finally(() => {
        slots.delete(p);
        progressed();
      });
    slots.add(p);
  }

  /**
   * Claims up to `limit` due deliveries and starts them all at once: what the claim read of their
   * webhooks and events is what they send.
   */
  async function claim(limit: number): Promise<number> {
    const now = clock();
    const leaseUntil = new Date(now.getTime() + leaseMs).toISOString();
    claiming += limit;
    let claimed: ClaimedDelivery[];
    try {
      claimed = await store.claimDueDeliveries({ now: isoTime(now), leaseUntil, limit, share });
    } finally {
      claiming -= limit;
      // What it promised and did not take is free again for whoever waits for a slot.
      progressed();
    }
    // Closed while this claim ran: straight back, due again now for the next instance.
    if (closed) {
      if (claimed.length > 0) {
        release(
          claimed.map((c) => ({ tenantId: c.tenant_id, deliveryId: c.delivery.delivery_id, leaseUntil })),
        );
      }
      return 0;
    }
    for (const c of claimed) launch(c, leaseUntil);
    return claimed.length;
  }

  /**
   * How many to claim now: the free slots. A slot is free once its outcome is recorded, so the
   * slots one commit frees share one claim.
   */
  function claimable(): number {
    return Math.max(0, concurrency - held() - claiming);
  }

  /** Sleeps `ms`, or until a wake; with `orFreed` also until a held delivery is let go. */
  function sleep(ms: number, orFreed = false): Promise<void> {
    return new Promise((resolve) => {
      if (woken) {
        woken = false;
        resolve();
        return;
      }
      let over = false;
      const timer = setTimeout(done, ms);
      function done() {
        if (over) return;
        over = true;
        clearTimeout(timer);
        wakeUp = undefined;
        woken = false;
        resolve();
      }
      wakeUp = done;
      if (orFreed) freedWaiters.push(done);
    });
  }

  async function run(): Promise<void> {
    while (running) {
      try {
        const limit = claimable();
        if (limit === 0) {
          await nextProgress();
          continue;
        }
        const got = await claim(limit);
        if (got === limit) continue;
        if (anyAtCap()) {
          // A tenant at its cap may have left due deliveries: worth a look once it lets one go
          // (an attempt that ends is not enough: its slot is held until its outcome is recorded),
          // and soon anyway: each claim walks only the next 16 tenants with pending deliveries, so
          // another tenant's event may be found only a few claims on.
          await sleep(Math.min(pollMs, CAPPED_LOOK_MS), true);
          continue;
        }
        // Fewer than asked: nothing else is due now. Sleep until the next one is, or a wake.
        const next = await store.nextDueAt();
        const dueIn = next === null ? pollMs : Date.parse(next) - clock().getTime();
        // Due already, yet the claim took nothing (taken elsewhere in between, or a store whose
        // nextDueAt counts what its claim skips): looking again at once would spin.
        const wait = dueIn <= 0 && got === 0 ? pollMs : Math.min(pollMs, Math.max(0, dueIn));
        await sleep(Math.max(wait, 10));
      } catch (error) {
        options.onError?.(error);
        await sleep(pollMs);
      }
    }
  }

  /** Resolves once an attempt in flight or a recording has finished (at once if one already has). */
  async function anySettled(): Promise<void> {
    const pending: Array<Promise<unknown>> = [...slots, ...releasing];
    if (flushing) pending.push(flushing);
    if (pending.length > 0) await Promise.race(pending);
  }

  /** True once nothing is in flight or waiting to be recorded, false if `ms` passed first. */
  async function settledWithin(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([
      settled().then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), ms);
      }),
    ]);
    clearTimeout(timer);
    return inTime;
  }

  /** Resolves once nothing is in flight or waiting to be recorded. */
  async function settled(): Promise<void> {
    while (slots.size > 0 || flushing || releasing.size > 0) {
      await Promise.allSettled([...slots, ...releasing]);
      if (flushing) await flushing;
    }
  }

  return {
    start() {
      if (running || closed) return;
      running = true;
      loop = run();
    },
    wake() {
      if (wakeUp) wakeUp();
      else woken = true;
    },
    async drain() {
      const before = launched;
      for (;;) {
        // Once closed, only what is in flight is seen through.
        const limit = closed ? 0 : claimable();
        const got = limit > 0 ? await claim(limit) : 0;
        if (got === 0 && held() === 0 && releasing.size === 0) return launched - before;
        if (got === limit) await anySettled();
        // Short of a tenant's cap: its next delivery let go may leave room for more of its own.
        else if (anyAtCap()) await nextFreed();
        else await settled();
      }
    },
    async close(deadlineMs = 10_000) {
      if (closed) return;
      closed = true;
      running = false;
      // A loop about to sleep must not: it sees `woken` and returns at once.
      if (wakeUp) wakeUp();
      else woken = true;
      progressed();
      flushSoon?.();
      await loop;
      if (await settledWithin(deadlineMs)) {
        await ownAgent?.close().catch(() => undefined);
        return;
      }
      // An attempt still hangs: abort it (a graceful close would wait for it, up to its timeout),
      // and give its failure a moment to be recorded. Not recorded, its lease ends and it is
      // sent again.
      await ownAgent?.destroy().catch(() => undefined);
      await settledWithin(ABORTED_RECORD_MS);
    },
  };
}
