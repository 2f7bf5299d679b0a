/**
 * `gatehouse serve`: the /v1 API, /mcp, and the webhook dispatcher on one port.
 */
import { watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import Keyv from 'keyv';
import pino, { type Logger } from 'pino';
import { parse as parseYaml } from 'yaml';
import {
  type Checkpoint,
  createFirstApiKey,
  createIdGenerator,
  createTokenAuthenticator,
  type Gatehouse,
  GatehouseError,
  parseIdentityConfig,
  startRetentionSchedule,
  systemRandomBytes,
  type TokenAuthenticator,
} from '../../src/index.js';
import {
  createHttpApp,
  createMetrics,
  protectedResourceUrls,
  type RunningServer,
  startHttpServer,
  stepUpChallenge,
} from '../http/index.js';
import { createMcpHttpHandler, defaultAllowedHosts, isWildcardAddress } from '../mcp/index.js';
import {
  assertWebhookUrlAllowed,
  createWebhookDispatcher,
  type WebhookDispatcher,
} from '../webhooks/index.js';
import { writableDirectoryProblem } from './checkpointFile.js';
import type { ServeConfig } from './config.js';
import { describeStore, loadPolicy, openGatehouse, policyOriginOf } from './openService.js';
import { checkpointDirOf, writeCheckpointFile } from './retentionCommand.js';

/** A running service, for tests and embedding. */
export interface RunningService {
  url: string;
  gatehouse: Gatehouse;
  /** The admin key created on first start (undefined when keys already existed). */
  bootstrapKey: string | undefined;
  reloadPolicy(): Promise<boolean>;
  /** Runs every tenant's retention now (after a run in progress), as the schedule does; none when it is off. */
  runRetention(): Promise<void>;
  close(): Promise<void>;
}

/** The message when Redis is configured but `@keyv/redis` is not installed. */
export const REDIS_MISSING = 'REDIS_URL (--redis-url) needs @keyv/redis: npm install @keyv/redis@5';

/** Creates the TTL store when Redis is configured; without it the app keeps TTL data in bounded memory. */
async function openTtlStore(redisUrl: string | undefined, log: Logger): Promise<Keyv | undefined> {
  if (!redisUrl) return undefined;
  let KeyvRedis: typeof import('@keyv/redis').default;
  try {
    KeyvRedis = (await import('@keyv/redis')).default;
  } catch (error) {
    // An optional peer: only an instance configured for Redis needs it.
    if ((error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND') {
      throw new GatehouseError('unavailable', REDIS_MISSING, { cause: error });
    }
    throw error;
  }
  const ttl = new Keyv({ store: new KeyvRedis(redisUrl), namespace: 'gatehouse' });
  ttl.on('error', (err: unknown) => log.error({ err }, 'TTL store error'));
  return ttl;
}

/**
 * Reads `--identity-config` into an authenticator.
 * @throws {GatehouseError} `invalid_request` naming the file and every broken rule, or a missing `--public-url`
 */
export async function loadIdentity(config: Pick<ServeConfig, 'identityConfig' | 'publicUrl'>): Promise<
  | {
      tokens: TokenAuthenticator;
      publicUrl: string;
      consoleSignIn?: { issuer: string; client_id: string; scope: string; resource: string };
    }
  | undefined
> {
  if (config.identityConfig === undefined) return undefined;
  const file = config.identityConfig;
  if (config.publicUrl === undefined) {
    throw new GatehouseError(
      'invalid_request',
      '--identity-config needs --public-url (env GATEHOUSE_PUBLIC_URL): the resource identifier of /mcp is built from it.',
    );
  }
  let document: unknown;
  try {
    document = parseYaml(await readFile(file, 'utf8'));
  } catch (error) {
    throw new GatehouseError('invalid_request', `--identity-config ${file}: ${(error as Error).message}`);
  }
  let parsed: ReturnType<typeof parseIdentityConfig>;
  try {
    parsed = parseIdentityConfig(document);
  } catch (error) {
    throw new GatehouseError('invalid_request', `--identity-config ${file}: ${(error as Error).message}`);
  }
  const tokens = createTokenAuthenticator({
    config: parsed,
    mcpResource: protectedResourceUrls(config.publicUrl).resource,
  });
  const signIn = parsed.console;
  const audiences = parsed.issuers.find((i) => i.issuer === signIn?.issuer)?.audiences ?? [];
  const resource = signIn?.resource ?? audiences[0];
  return {
    tokens,
    publicUrl: config.publicUrl,
    ...(signIn && resource !== undefined
      ? {
          consoleSignIn: {
            issuer: signIn.issuer,
            client_id: signIn.client_id,
            scope: signIn.scope,
            resource,
          },
        }
      : {}),
  };
}

/** Starts the service and returns once it listens. */
export async function startService(
  config: ServeConfig,
  log: Logger = pino({ level: config.logLevel }, pino.destination(2)),
): Promise<RunningService> {
  let dispatcher: WebhookDispatcher | undefined;
  const urlPolicy = { allowInsecureLoopback: config.allowInsecureLoopbackWebhooks };
  if (urlPolicy.allowInsecureLoopback) {
    log.warn(
      'DEVELOPMENT SETTING ON: webhooks may use plain http:// to loopback addresses. Never enable this in production.',
    );
  }
  // Configuration first (a missing optional peer fails before the database is touched).
  const identity = await loadIdentity(config);
  const ttlStore = await openTtlStore(config.redisUrl, log);
  const gatehouse = await openGatehouse(
    config,
    {
      ...config.checkpointKeys,
      policyOrigin: policyOriginOf(config),
      checkWebhookUrl: (url) => assertWebhookUrlAllowed(url, { policy: urlPolicy }),
      onDeliveriesQueued: () => dispatcher?.wake(),
    },
    { create: true },
  ).catch(async (error: unknown) => {
    await ttlStore?.disconnect().catch(() => undefined);
    throw error;
  });
  const store = gatehouse.store;

  if (config.mcpAllowedHosts === undefined && isWildcardAddress(config.host)) {
    log.warn(
      { host: config.host },
      '/mcp accepts only the Host names localhost, 127.0.0.1 and [::1]: list the names clients use with --mcp-allowed-hosts (env GATEHOUSE_MCP_ALLOWED_HOSTS)',
    );
  }
  const app = createHttpApp({
    gatehouse,
    logger: log,
    maxBodyBytes: config.maxBodyBytes,
    rateLimit: config.rateLimit === 0 ? false : { ratePerSecond: config.rateLimit },
    ...(ttlStore ? { ttlStore } : {}),
    idempotency: { maxEntries: config.idempotencyMaxEntries, maxBytes: config.idempotencyMaxBytes },
    metrics: createMetrics({ defaults: true }),
    console: config.ui && identity?.consoleSignIn ? { signIn: identity.consoleSignIn } : config.ui,
    ...(identity ? { identity: { tokens: identity.tokens, publicUrl: identity.publicUrl } } : {}),
    mcp: createMcpHttpHandler({
      ...(identity
        ? {
            insufficientScopeChallenge: stepUpChallenge({
              tokens: identity.tokens,
              resourceMetadataUrl: protectedResourceUrls(identity.publicUrl).metadata,
            }),
          }
        : {}),
      gatehouse,
      logger: log,
      maxBodyBytes: config.maxBodyBytes,
      allowedHosts: config.mcpAllowedHosts ?? defaultAllowedHosts(config.host),
      ...(config.mcpAllowedOrigins === undefined ? {} : { allowedOrigins: config.mcpAllowedOrigins }),
    }),
  });
  let server: RunningServer;
  let bootstrapKey: string | undefined;
  try {
    server = await startHttpServer(app, { host: config.host, port: config.port });
  } catch (error) {
    app.close();
    await ttlStore?.disconnect().catch(() => undefined);
    await store.close();
    throw error;
  }
  // Only once the server listens: a start that fails (the port taken) must not leave behind an
  // admin key whose secret nobody saw, and the next start would then not print one.
  try {
    const bootstrap = await createFirstApiKey(
      store,
      { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
      { name: 'bootstrap admin', scopes: ['admin'] },
    );
    bootstrapKey = bootstrap?.secret;
  } catch (error) {
    await server.close();
    app.close();
    await ttlStore?.disconnect().catch(() => undefined);
    await store.close();
    throw error;
  }

  dispatcher = createWebhookDispatcher({
    store,
    urlPolicy,
    onError: (err) => log.error({ err }, 'webhook dispatcher error'),
    logger: log,
  });
  dispatcher.start();

  const checkpointDir = checkpointDirOf(config.checkpointDir);
  /**
   * The prune happened and its checkpoint is stored. No prune runs while the directory cannot be
   * written (`pruneHeld` below); should the write still fail, the checkpoint is logged with it.
   */
  const keepCheckpoint = (checkpoint: Checkpoint) => {
    try {
      const file = writeCheckpointFile(checkpointDir, checkpoint);
      log.info({ file, tenantId: checkpoint.tenant_id, seq: checkpoint.seq }, 'checkpoint written');
    } catch (err) {
      log.error({ err, checkpoint }, 'checkpoint file not written: keep this checkpoint elsewhere');
    }
  };
  const retention =
    config.retentionIntervalMinutes === 0
      ? undefined
      : startRetentionSchedule({
          gatehouse,
          intervalMs: (config.retentionIntervalMinutes ?? 60) * 60_000,
          onError: (err, tenantId) => log.error({ err, tenantId }, 'retention run failed'),
          pruneHeld: () => writableDirectoryProblem(checkpointDir, 'the checkpoint directory'),
          onReport: (report) => {
            log.info({ retention: report }, 'retention run');
            if (report.pruned) keepCheckpoint(report.pruned.checkpoint);
          },
        });

  async function reloadPolicy(): Promise<boolean> {
    try {
      const policy = await loadPolicy(config);
      gatehouse.setPolicy(policy);
      log.info({ revision: policy.revision }, 'policy reloaded');
      return true;
    } catch (err) {
      log.error({ err: (err as Error).message }, 'policy reload failed; the previous policy stays in force');
      return false;
    }
  }

  let debounce: NodeJS.Timeout | undefined;
  const watcher = config.policy
    ? watch(config.policy, () => {
        clearTimeout(debounce);
        debounce = setTimeout(() => void reloadPolicy(), 200);
      })
    : undefined;
  watcher?.on('error', (err) => log.warn({ err: err.message }, 'policy file watch stopped'));

  let closed: Promise<void> | undefined;
  return {
    url: server.url,
    gatehouse,
    bootstrapKey,
    reloadPolicy,
    runRetention: async () => retention?.runNow(),
    close() {
      closed ??= (async () => {
        watcher?.close();
        clearTimeout(debounce);
        app.close();
        await server.close();
        await retention?.close();
        await dispatcher?.close();
        await ttlStore?.disconnect().catch(() => undefined);
        await store.close();
      })();
      return closed;
    },
  };
}

/** The banner `serve` prints on stdout: where it runs and how to use it. */
export function banner(service: RunningService, config: ServeConfig): string {
  const lines = [
    `Gatehouse is listening on ${service.url}`,
    `  store:   ${describeStore(config)}`,
    `  policy:  ${config.policy ?? 'built-in default'} (revision ${service.gatehouse.policy.revision.slice(0, 12)})`,
    `  MCP:     ${service.url}/mcp (Streamable HTTP, same bearer key)`,
    ...(config.ui ? [`  Console: ${service.url}/ui/ (sign in with an API key)`] : []),
    ...(config.identityConfig
      ? [`  Tokens:  issuers of ${config.identityConfig}; /mcp resource ${config.publicUrl}/mcp`]
      : []),
    '',
  ];
  if (service.bootstrapKey) {
    lines.push(
      'First start: an admin API key was created. It is shown only this once; keep it:',
      '',
      `  export GATEHOUSE_KEY=${service.bootstrapKey}`,
      '',
      'Try it:',
      `  curl -s -X POST ${service.url}/v1/state/items -H "Authorization: Bearer $GATEHOUSE_KEY" -H 'content-type: application/json' \\`,
      `    -d '{"session_id":"demo","key":"budget.limit","value":"5000","type":"fact","source":"user_input"}'`,
      `  curl -s -X POST ${service.url}/v1/gates/evaluate -H "Authorization: Bearer $GATEHOUSE_KEY" -H 'content-type: application/json' \\`,
      `    -d '{"session_id":"demo","action":"payments.transfer","params":{"amount":9000}}'`,
      '',
    );
  } else {
    lines.push('API keys exist already; create another with `gatehouse keys create --help`.', '');
  }
  lines.push(
    config.policy
      ? 'Stop with Ctrl-C. Reload the policy with SIGHUP (or just save the file).'
      : 'Stop with Ctrl-C.',
  );
  return lines.join('\n');
}
