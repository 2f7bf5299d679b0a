/**
 * The webhook sender: drains the transactional outbox. Deliveries are claimed with a lease (so
 * several instances never send one attempt twice, and a crashed instance's work is picked up
 * when its lease ends), POSTed through the SSRF-guarded agent with hard timeouts, and their
 * outcome recorded: 2xx delivered, 410 disables the endpoint, anything else is retried on the
 * backoff schedule until it is exhausted and the delivery is marked failed.
 */

import type { Logger } from 'pino';
import { type Dispatcher, request } from 'undici';
import {
  buildWebhookPayload,
  type ClaimedDelivery,
  classifyDeliveryResponse,
  isSecretActive,
  nextRetryDelay,
  type OutboxStore,
  parseRetryAfter,
  webhookSignatureHeader,
} from '../../src/index.js';
import { deliveryTraceHeaders, inDeliverySpan, noteDeliveryOutcome } from './deliverySpan.js';
import type { Resolver, WebhookUrlPolicy } from './destinationPolicy.js';
import { createWebhookAgent } from './guardedConnector.js';

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
  /** Attempts in flight at once. @default 8 */
  concurrency?: number;
  /** How long a claimed delivery is reserved for this instance. @default 60 s */
  leaseMs?: number;
  /** Hard limit for one attempt (connect, headers and body). @default 15 s */
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
  /** Stops claiming, waits for attempts in flight up to `deadlineMs` (default 10 s); safe twice. */
  close(deadlineMs?: number): Promise<void>;
}

const USER_AGENT = 'Gatehouse-Webhooks/1';

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
  const inFlight = new Set<Promise<void>>();
  let running = false;
  let closed = false;
  let loop: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;
  let woken = false;

  async function attempt(claimed: ClaimedDelivery): Promise<void> {
    const { delivery, webhook, event, tenant_id: tenantId } = claimed;
    const started = clock();
    const nowIso = started.toISOString();
    const secrets = webhook.secrets.filter((s) => isSecretActive(s, nowIso)).map((s) => s.secret);
    const body = buildWebhookPayload(event);
    const timestamp = Math.floor(started.getTime() / 1000);
    let statusCode: number | null = null;
    let retryAfter: number | undefined;
    let error: string | null = null;
    try {
      const res = await request(webhook.url, {
        method: 'POST',
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': USER_AGENT,
          'webhook-id': event.event_id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': webhookSignatureHeader(secrets, event.event_id, timestamp, body),
          ...deliveryTraceHeaders(),
        },
        dispatcher: agent,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
      });
      statusCode = res.statusCode;
      const header = res.headers['retry-after'];
      retryAfter = parseRetryAfter(Array.isArray(header) ? header[0] : header, clock());
      await res.body.dump().catch(() => undefined);
    } catch (e) {
      error = describeError(e);
    }
    const attempts = delivery.attempts + 1;
    const at = clock();
    const outcome = statusCode === null ? 'retry' : classifyDeliveryResponse(statusCode);
    if (outcome === 'delivered') {
      await store.recordDeliveryAttempt(tenantId, delivery.delivery_id, {
        status: 'delivered',
        attempts,
        next_attempt_at: null,
        last_status_code: statusCode,
        last_error: null,
        delivered_at: at.toISOString(),
        updated_at: at.toISOString(),
      });
    } else if (outcome === 'disable') {
      await store.disableWebhook(tenantId, webhook.id, at.toISOString());
      await store.recordDeliveryAttempt(tenantId, delivery.delivery_id, {
        status: 'failed',
        attempts,
        next_attempt_at: null,
        last_status_code: statusCode,
        last_error: 'the endpoint answered 410 Gone: the webhook is disabled',
        delivered_at: null,
        updated_at: at.toISOString(),
      });
      options.logger?.warn({ webhook_id: webhook.id }, 'webhook disabled: the endpoint answered 410');
    } else {
      const delay = nextRetryDelay(attempts, { random, retryAfterSeconds: retryAfter });
      await store.recordDeliveryAttempt(tenantId, delivery.delivery_id, {
        status: delay === null ? 'failed' : 'pending',
        attempts,
        next_attempt_at: delay === null ? null : new Date(at.getTime() + delay).toISOString(),
        last_status_code: statusCode,
        last_error: error ?? `the endpoint answered HTTP ${statusCode}`,
        delivered_at: null,
        updated_at: at.toISOString(),
      });
    }
    const status = outcome === 'delivered' ? 'delivered' : outcome === 'disable' ? 'failed' : 'pending';
    noteDeliveryOutcome(status, statusCode);
    options.onAttempt?.({ deliveryId: delivery.delivery_id, status, statusCode });
  }

  function launch(claimed: ClaimedDelivery): void {
    const p = inDeliverySpan(claimed, () => attempt(claimed))
      .catch((e: unknown) => options.onError?.(e))
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }

  /** Claims what is due and free slots allow; returns how many were launched. */
  async function claimAndLaunch(): Promise<number> {
    const free = concurrency - inFlight.size;
    if (free <= 0) return 0;
    const now = clock();
    const claimed = await store.claimDueDeliveries({
      now: now.toISOString(),
      leaseUntil: new Date(now.getTime() + leaseMs).toISOString(),
      limit: free,
    });
    for (const c of claimed) launch(c);
    return claimed.length;
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (woken) {
        woken = false;
        resolve();
        return;
      }
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeUp = undefined;
        woken = false;
        resolve();
      }
      wakeUp = done;
    });
  }

  async function run(): Promise<void> {
    while (running) {
      try {
        const launched = await claimAndLaunch();
        if (launched > 0) continue;
        if (inFlight.size >= concurrency) {
          await Promise.race(inFlight);
          continue;
        }
        const next = await store.nextDueAt();
        const wait =
          next === null ? pollMs : Math.min(pollMs, Math.max(0, Date.parse(next) - clock().getTime()));
        await sleep(Math.max(wait, 10));
      } catch (error) {
        options.onError?.(error);
        await sleep(pollMs);
      }
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
      let total = 0;
      for (;;) {
        const launched = await claimAndLaunch();
        total += launched;
        if (launched === 0 && inFlight.size === 0) return total;
        if (inFlight.size > 0) await Promise.race(inFlight);
      }
    },
    async close(deadlineMs = 10_000) {
      if (closed) return;
      closed = true;
      running = false;
      wakeUp?.();
      await loop;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...inFlight]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, deadlineMs);
        }),
      ]);
      clearTimeout(timer);
      await ownAgent?.close().catch(() => undefined);
    },
  };
}
