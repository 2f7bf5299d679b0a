/**
 * OpenTelemetry through the API only: the tracer, the meter and the attribute names Gatehouse
 * uses. Until a host registers an SDK every call here is the API's no-op; a library never
 * installs an SDK for its host (`gatehouse serve` and `gatehouse mcp` start one when the
 * standard `OTEL_*` variables ask for it).
 *
 * Attributes carry names, IDs, verdicts and counts — never a param, context or state value,
 * and never an error message (messages can quote values): those may be secrets.
 */
import {
  type Attributes,
  type Context,
  type Counter,
  context,
  type Histogram,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  type Link,
  type MeterProvider,
  metrics,
  ProxyTracerProvider,
  propagation,
  type Span,
  type SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { isGatehouseError } from './errors.js';

/** The instrumentation scope of every Gatehouse span and instrument. */
export const TELEMETRY_SCOPE = 'gatehouse';

/**
 * The GenAI semantic-convention names for tool execution. They are of Development status, so
 * they are pinned here as strings: the values of `@opentelemetry/semantic-conventions` 1.45.0
 * (`incubating`: `ATTR_GEN_AI_OPERATION_NAME`, `GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL`,
 * `ATTR_GEN_AI_TOOL_NAME`, `ATTR_GEN_AI_TOOL_CALL_ID`, `ATTR_GEN_AI_TOOL_TYPE`), checked by a
 * test against that exact version. Importing the incubating entry would load all of it.
 */
export const GEN_AI_ATTRIBUTES = {
  operationName: 'gen_ai.operation.name',
  executeTool: 'execute_tool',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
} as const;

/** Gatehouse's own span attributes. */
export const SPAN_ATTRIBUTES = {
  action: 'gatehouse.action',
  sessionId: 'gatehouse.session.id',
  decisionId: 'gatehouse.decision.id',
  verdict: 'gatehouse.decision.verdict',
  /** The rules behind the verdict (built-in checks by their code: `required_missing`, …). */
  rules: 'gatehouse.decision.rules',
  /** Shadow rules that matched (recorded, not enforced). */
  shadowRules: 'gatehouse.decision.shadow_rules',
  policyRevision: 'gatehouse.policy.revision',
  stateKey: 'gatehouse.state.key',
  stateOutcome: 'gatehouse.state.outcome',
  stateVersion: 'gatehouse.state.version',
  historyCount: 'gatehouse.history.count',
  webhookId: 'gatehouse.webhook.id',
  deliveryId: 'gatehouse.delivery.id',
  eventId: 'gatehouse.event.id',
  eventType: 'gatehouse.event.type',
  deliveryAttempt: 'gatehouse.delivery.attempt',
  deliveryStatus: 'gatehouse.delivery.status',
  /** Stable OTel name for the failure's class; Gatehouse errors give their `code`. */
  errorType: 'error.type',
} as const;

/** The tracer; a no-op until an SDK is registered (the API's proxy picks it up then). */
export const tracer = trace.getTracer(TELEMETRY_SCOPE);

/** What the API's proxy delegates to while no SDK is registered (its no-op provider, one object). */
const UNREGISTERED = new ProxyTracerProvider().getDelegate();
/** The span {@link inSpan} hands out while nothing records: the API's own non-recording span. */
const NOT_RECORDING = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * False while no tracer provider is registered: then every span is a no-op, and starting one
 * (a context, a span object and an async context switch per call) was ~5 % of an in-process
 * evaluation for nothing. Checked per call, so an SDK registered later is used from then on.
 */
export function tracingActive(): boolean {
  const provider = trace.getTracerProvider();
  // A provider from another copy of the API is not ours to look into: assume it records.
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== UNREGISTERED;
}

/**
 * One set of instruments per registered meter provider. Unlike the tracer, the API has no proxy
 * meter: a meter taken before the host registers its SDK stays a no-op, so instruments are
 * looked up per use (a WeakMap hit) rather than made once at import.
 */
const instrumentSets = new WeakMap<MeterProvider, Instruments>();

interface Instruments {
  decisions: Counter;
  httpDuration: Histogram;
}

function instruments(): Instruments {
  const provider = metrics.getMeterProvider();
  let set = instrumentSets.get(provider);
  if (!set) {
    const meter = provider.getMeter(TELEMETRY_SCOPE);
    set = {
      decisions: meter.createCounter('gatehouse.decisions', {
        description: 'Gate decisions by verdict (every face).',
        unit: '{decision}',
      }),
      // The stable HTTP semantic-convention instrument, in seconds with its advised buckets.
      httpDuration: meter.createHistogram('http.server.request.duration', {
        description: 'Duration of HTTP server requests.',
        unit: 's',
        advice: {
          explicitBucketBoundaries: [
            0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
          ],
        },
      }),
    };
    instrumentSets.set(provider, set);
  }
  return set;
}

/** The `gatehouse.decisions` counter (attribute {@link SPAN_ATTRIBUTES.verdict}). */
export function decisionsCounter(): Counter {
  return instruments().decisions;
}

/** The `http.server.request.duration` histogram (`http.request.method`, `http.route`, `http.response.status_code`). */
export function httpDurationHistogram(): Histogram {
  return instruments().httpDuration;
}

/** Options for {@link inSpan}. */
export interface InSpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent; @default the active context */
  parent?: Context | undefined;
  /** Spans this one relates to without being their child. */
  links?: Link[];
}

/**
 * Runs `fn` in a new active span, ending it when `fn` settles. A throw marks the span as an
 * error with `error.type` (the Gatehouse error code, or the error's name) and no message.
 */
export function inSpan<T>(name: string, options: InSpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  if (!tracingActive()) return fn(NOT_RECORDING);
  const parent = options.parent ?? context.active();
  return tracer.startActiveSpan(
    name,
    {
      ...(options.kind === undefined ? {} : { kind: options.kind }),
      ...(options.attributes === undefined ? {} : { attributes: options.attributes }),
      ...(options.links === undefined ? {} : { links: options.links }),
    },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        markSpanFailed(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** Marks `span` failed by `error`'s type only: messages can quote values. */
export function markSpanFailed(span: Span, error: unknown): void {
  const type = isGatehouseError(error) ? error.code : error instanceof Error ? error.name : 'error';
  span.setAttribute(SPAN_ATTRIBUTES.errorType, type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/**
 * The active context's W3C `traceparent`, or undefined when no span is recording one (always
 * so without an SDK). Outbox rows keep it so a later delivery joins the trace that queued it.
 */
export function activeTraceparent(): string | undefined {
  const span = trace.getActiveSpan();
  if (!span || !isSpanContextValid(span.spanContext())) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier['traceparent'];
}

/** The context a stored `traceparent` (and optional `tracestate`) describes; the active one without it. */
export function contextFromTraceparent(traceparent: string | null | undefined, tracestate?: string): Context {
  if (!traceparent) return context.active();
  const carrier: Record<string, string> = { traceparent };
  if (tracestate) carrier['tracestate'] = tracestate;
  return propagation.extract(context.active(), carrier);
}
