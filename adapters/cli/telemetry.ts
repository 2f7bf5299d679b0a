/**
 * OpenTelemetry for `gatehouse serve` and `gatehouse mcp`: the Node SDK with OTLP exporters,
 * started only when the standard variables name an OTLP endpoint, and loaded only then (the SDK
 * is an optional peer dependency, ~48 MB with gRPC, that a library user embedding the core never
 * needs). Everything else — protocol, headers, sampler, service name, resource — is the SDK's own
 * reading of the standard `OTEL_*` variables.
 */
import { type DiagLogger, DiagLogLevel, diag } from '@opentelemetry/api';
import type { Logger } from 'pino';

/** A started SDK: flush and stop it on shutdown. */
export interface Telemetry {
  /** Exports what is buffered and stops; safe twice, never throws. */
  shutdown(): Promise<void>;
}

/** Options for {@link startTelemetry}. */
export interface StartTelemetryOptions {
  /** Where the SDK's own warnings go (stderr: `gatehouse mcp` keeps stdout for the protocol). */
  logger: Logger;
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
  /** stdout carries a protocol (MCP over stdio): `console` exporters would corrupt it. */
  stdoutIsProtocol?: boolean;
}

const TRACES = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] as const;
const METRICS = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT'] as const;

function isSet(env: NodeJS.ProcessEnv, names: readonly string[]): boolean {
  return names.some((name) => (env[name] ?? '').trim() !== '');
}

/** True when the environment asks for OTLP export (and has not switched the SDK off). */
export function telemetryRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env['OTEL_SDK_DISABLED'] ?? '').trim().toLowerCase() === 'true') return false;
  return isSet(env, TRACES) || isSet(env, METRICS);
}

/** The SDK's diagnostics into the service log, at `OTEL_LOG_LEVEL` (default warn). */
function diagLogger(logger: Logger): DiagLogger {
  const log = logger.child({ component: 'opentelemetry' });
  // The SDK puts a component name first and the substance in the arguments.
  const text = (message: string, args: unknown[]) =>
    [message, ...args.map((a) => (a instanceof Error ? a.message : String(a)))].join(' ');
  return {
    error: (message, ...args) => log.error(text(message, args)),
    warn: (message, ...args) => log.warn(text(message, args)),
    info: (message, ...args) => log.info(text(message, args)),
    debug: (message, ...args) => log.debug(text(message, args)),
    verbose: (message, ...args) => log.trace(text(message, args)),
  };
}

function diagLevel(env: NodeJS.ProcessEnv): DiagLogLevel {
  const name = (env['OTEL_LOG_LEVEL'] ?? '').trim().toUpperCase();
  const level = DiagLogLevel[name as keyof typeof DiagLogLevel];
  return typeof level === 'number' ? level : DiagLogLevel.WARN;
}

/**
 * Runs `build` with `OTEL_LOG_LEVEL` out of `process.env`: with it set, the SDK's constructor puts
 * a console logger in place of ours and logs through it while it is built, to stdout for debug
 * and info (into the MCP stdio protocol, which a client then cannot parse).
 */
function withoutLogLevelVariable<T>(build: () => T): T {
  const level = process.env['OTEL_LOG_LEVEL'];
  delete process.env['OTEL_LOG_LEVEL'];
  try {
    return build();
  } finally {
    if (level !== undefined) process.env['OTEL_LOG_LEVEL'] = level;
  }
}

/**
 * Starts the Node SDK when {@link telemetryRequested}; otherwise does nothing (and loads nothing).
 * Traces go out when a traces (or the general) endpoint is set, metrics when a metrics (or the
 * general) endpoint is. Never throws: without the SDK installed it logs how to add it and the
 * service runs untraced.
 */
export async function startTelemetry(options: StartTelemetryOptions): Promise<Telemetry | undefined> {
  const env = options.env ?? process.env;
  const log = options.logger;
  if (!telemetryRequested(env)) return undefined;
  const exporters = `${env['OTEL_TRACES_EXPORTER'] ?? ''},${env['OTEL_METRICS_EXPORTER'] ?? ''}`;
  if (options.stdoutIsProtocol && /\bconsole\b/i.test(exporters)) {
    log.error('OpenTelemetry off: a console exporter would write into the MCP stdio protocol');
    return undefined;
  }
  let sdkModule: typeof import('@opentelemetry/sdk-node');
  try {
    sdkModule = await import('@opentelemetry/sdk-node');
  } catch {
    log.error(
      'OTEL_EXPORTER_OTLP_* is set but @opentelemetry/sdk-node is not installed: npm install @opentelemetry/sdk-node@~0.223.0 (running without telemetry)',
    );
    return undefined;
  }
  const { NodeSDK, resources } = sdkModule;
  // Ours first, so what the SDK says while it is built goes to the log too.
  diag.setLogger(diagLogger(log), { logLevel: diagLevel(env), suppressOverrideMessage: true });
  const named =
    (env['OTEL_SERVICE_NAME'] ?? '') !== '' ||
    /(^|,)\s*service\.name=/.test(env['OTEL_RESOURCE_ATTRIBUTES'] ?? '');
  const sdk = withoutLogLevelVariable(
    () =>
      new NodeSDK({
        // Not the process detector: `process.command_args` would export `--database-url` with its password.
        resourceDetectors: [resources.envDetector, resources.hostDetector],
        ...(named ? {} : { serviceName: 'gatehouse' }),
        ...(isSet(env, TRACES) ? {} : { spanProcessors: [] }),
        ...(isSet(env, METRICS) ? {} : { metricReaders: [] }),
        // Gatehouse logs through pino; an OTLP log pipeline would only ever be empty.
        logRecordProcessors: [],
      }),
  );
  try {
    sdk.start();
  } catch (error) {
    log.error(
      { err: (error as Error).message },
      'OpenTelemetry SDK did not start; running without telemetry',
    );
    return undefined;
  }
  log.info(
    { traces: isSet(env, TRACES), metrics: isSet(env, METRICS) },
    'OpenTelemetry: exporting over OTLP',
  );
  let stopped: Promise<void> | undefined;
  return {
    shutdown() {
      stopped ??= sdk.shutdown().catch((error: unknown) => {
        log.warn({ err: (error as Error).message }, 'OpenTelemetry shutdown failed');
      });
      return stopped;
    },
  };
}
