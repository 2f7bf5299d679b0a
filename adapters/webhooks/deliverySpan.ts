/**
 * The span of one webhook delivery attempt, and the `traceparent` it sends: the attempt joins
 * the trace that queued the delivery (its outbox row's `traceparent`), so a receiver that
 * continues the header lands in the same trace as the evaluate or write that caused the event.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { type ClaimedDelivery, inSpan, SPAN_ATTRIBUTES, tracingActive } from '../../src/index.js';

/** Webhook URLs whose host is remembered: parsing a URL per attempt was a visible share of a drain. */
const HOSTS_KEPT = 1024;
const hosts = new Map<string, string | undefined>();

/** The host of a webhook URL, or undefined when it does not parse. */
function hostOf(url: string): string | undefined {
  if (hosts.has(url)) return hosts.get(url);
  let host: string | undefined;
  try {
    host = new URL(url).hostname;
  } catch {
    host = undefined;
  }
  if (hosts.size >= HOSTS_KEPT) hosts.clear();
  hosts.set(url, host);
  return host;
}

/** Runs one attempt in a `gatehouse.webhook.deliver` client span. */
export function inDeliverySpan<T>(claimed: ClaimedDelivery, fn: () => Promise<T>): Promise<T> {
  // Nothing records: skip the parent's extraction and the attributes too (inSpan would only
  // drop them), a few µs of a delivery's CPU.
  if (!tracingActive()) return fn();
  const { delivery, webhook, event } = claimed;
  // Without a stored trace the attempt starts its own: it must not join whatever the dispatcher's
  // loop happens to run in.
  const parent = claimed.traceparent
    ? propagation.extract(ROOT_CONTEXT, { traceparent: claimed.traceparent })
    : ROOT_CONTEXT;
  const host = hostOf(webhook.url);
  const attributes = {
    // The host only: a webhook URL's path or query may hold a token.
    ...(host === undefined ? {} : { 'server.address': host }),
    'http.request.method': 'POST',
    [SPAN_ATTRIBUTES.webhookId]: webhook.id,
    [SPAN_ATTRIBUTES.deliveryId]: delivery.delivery_id,
    [SPAN_ATTRIBUTES.eventId]: event.event_id,
    [SPAN_ATTRIBUTES.eventType]: event.type,
    [SPAN_ATTRIBUTES.deliveryAttempt]: delivery.attempts + 1,
  };
  return inSpan('gatehouse.webhook.deliver', { kind: SpanKind.CLIENT, attributes, parent }, fn);
}

/** The trace headers of the active delivery span (`traceparent`, `tracestate`); none without an SDK. */
export function deliveryTraceHeaders(): Record<string, string> {
  const headers: Record<string, string> = {};
  propagation.inject(context.active(), headers);
  return headers;
}

/**
 * Puts an attempt's outcome on the active delivery span; one that did not deliver is an error,
 * with `error.type` (the status code, or the transport error's code: never its message).
 */
export function noteDeliveryOutcome(status: string, statusCode: number | null, errorType?: string): void {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return;
  span.setAttributes({
    [SPAN_ATTRIBUTES.deliveryStatus]: status,
    ...(statusCode === null ? {} : { 'http.response.status_code': statusCode }),
    ...(errorType === undefined ? {} : { 'error.type': errorType }),
  });
  if (errorType !== undefined) span.setStatus({ code: SpanStatusCode.ERROR });
}
