#!/usr/bin/env node
/**
 * The `gatehouse` command.
 */
import { once } from 'node:events';
import { createReadStream, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { setFlagsFromString } from 'node:v8';
import { Command, Option } from 'commander';
import pino from 'pino';
import {
  compilePolicy,
  createApiKey,
  createIdGenerator,
  DEFAULT_KEY_SOURCES,
  DEFAULT_POLICY_YAML,
  EVENT_TYPES,
  type HistoryEvent,
  packageVersion,
  parseCheckpoint,
  SCOPES,
  type Scope,
  summarizeEvent,
  systemRandomBytes,
} from '../../src/index.js';
import { DEFAULT_MCP_SOURCES, runStdioServer } from '../mcp/index.js';
import { registerApprovalsCommands } from './approvalsCommand.js';
import {
  checkpointKeyOptions,
  isPrunedHistory,
  NO_PUBLIC_KEY,
  readCheckpointKeys,
  registerCheckpointCommands,
  registerHoldCommands,
} from './checkpointCommands.js';
import { list, listOfChoices, readServeConfig, readServiceConfig, readStoreConfig } from './config.js';
import { endRecordLine, readDumpRecords } from './dumpFile.js';
import { CLOSED_PIPE_STATUS, errorMessage, isClosedPipe, stopWhenReaderGoes } from './errorOutput.js';
import { assertNotTheDatabase, type ExportFile, openExportFile } from './exportFile.js';
import { openGatehouse, openStore, policyOriginOf } from './openService.js';
import { registerPolicyCommands } from './policyCommands.js';
import { checkpointDirOf, registerRetentionCommand } from './retentionCommand.js';
import { banner, startService } from './serve.js';
import { startTelemetry } from './telemetry.js';
import { terminalLines, terminalText } from './terminalText.js';

// Policies may use CEL `matches()`, which runs on the backtracking RegExp engine: a pattern with
// nested quantifiers and a crafted 16 KiB string could stall the process for hours. With this V8
// setting a match that backtracks too much is finished by the linear-time engine instead (same
// results for every pattern it supports). The CLI owns the process, so it is set here, first.
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

const program = new Command();
program
  .name('gatehouse')
  .description('Governed state and an action gate for AI agents.')
  .version(packageVersion(), '-V, --version', 'print the version')
  .showHelpAfterError('(run with --help for usage)');

/** The database flags, for every command that opens the database. */
function storeOptions(cmd: Command): Command {
  return cmd
    .option('--database <file>', 'SQLite file (env GATEHOUSE_DB)', undefined)
    .option('--database-url <url>', 'PostgreSQL URL instead of SQLite (env DATABASE_URL)')
    .option('--database-schema <name>', 'PostgreSQL schema (env GATEHOUSE_DB_SCHEMA)', undefined);
}

/** `--policy`, for the commands that use the instance policy. */
function policyOption(cmd: Command, use = ''): Command {
  return cmd.option(
    '--policy <file>',
    `policy YAML file${use} (env GATEHOUSE_POLICY); the built-in policy when unset`,
  );
}

/** What `serve` and `mcp` share: the database, the policy and the log. */
function serviceOptions(cmd: Command): Command {
  return policyOption(storeOptions(cmd)).option(
    '--log-level <level>',
    'fatal, error, warn, info, debug (env GATEHOUSE_LOG_LEVEL)',
  );
}

const serve = checkpointKeyOptions(serviceOptions(program.command('serve')));
serve
  .description(
    'run the /v1 HTTP API, /mcp and the webhook sender (default 127.0.0.1:8787, SQLite .gatehouse/gatehouse.db)',
  )
  .option('--host <host>', 'address to bind (env GATEHOUSE_HOST)')
  .option('--port <port>', 'port; 0 picks a free one (env GATEHOUSE_PORT)')
  .option('--redis-url <url>', 'Redis for shared TTL data across instances (env REDIS_URL)')
  .option('--rate-limit <n>', 'requests per second per API key, 0 = off (env GATEHOUSE_RATE_LIMIT)')
  .option('--max-body-bytes <n>', 'largest request body (env GATEHOUSE_MAX_BODY_BYTES)')
  .option(
    '--idempotency-max-entries <n>',
    'idempotent responses kept in memory without Redis, oldest out first (env GATEHOUSE_IDEMPOTENCY_MAX_ENTRIES; default 10000)',
  )
  .option(
    '--idempotency-max-bytes <n>',
    'bytes of idempotent responses kept in memory without Redis (env GATEHOUSE_IDEMPOTENCY_MAX_BYTES; default 32 MiB)',
  )
  .addOption(
    new Option('--durability <mode>', 'SQLite: normal (crash-safe) or full (power-loss-safe)').choices([
      'normal',
      'full',
    ]),
  )
  .option(
    '--retention-interval <minutes>',
    "minutes between runs of each tenant's policy retention: (env GATEHOUSE_RETENTION_INTERVAL; default 60, 0 = off)",
  )
  .option(
    '--checkpoint-dir <dir>',
    'where scheduled retention writes the checkpoint of each prune (env GATEHOUSE_CHECKPOINT_DIR; default .gatehouse/checkpoints)',
  )
  .option('--allow-insecure-loopback-webhooks', 'DEVELOPMENT ONLY: allow http:// webhooks to loopback')
  .option('--no-ui', 'do not serve the web console at /ui/ (env GATEHOUSE_UI=0)')
  .option(
    '--mcp-allowed-hosts <list>',
    'comma-separated Host values /mcp accepts, name or name:port (env GATEHOUSE_MCP_ALLOWED_HOSTS; default: localhost, 127.0.0.1, [::1] and a specific --host)',
  )
  .option(
    '--mcp-allowed-origins <list>',
    'comma-separated Origin values /mcp accepts (env GATEHOUSE_MCP_ALLOWED_ORIGINS; default: origins on the allowed hosts)',
  )
  .option(
    '--identity-config <file>',
    'trusted token issuers, YAML or JSON: OIDC/OAuth access tokens on /v1 and /mcp besides API keys (env GATEHOUSE_IDENTITY_CONFIG; see docs/identity.md)',
  )
  .option(
    '--public-url <url>',
    "this service's public base URL; /mcp's OAuth resource is <url>/mcp (env GATEHOUSE_PUBLIC_URL; needed with --identity-config)",
  )
  .action(async (flags) => {
    const interval = Number(flags.retentionInterval ?? (process.env['GATEHOUSE_RETENTION_INTERVAL'] || 60));
    if (!Number.isSafeInteger(interval) || interval < 0) {
      throw new Error('--retention-interval must be a whole number of minutes (0: off).');
    }
    const config = {
      ...readServeConfig(flags),
      checkpointKeys: readCheckpointKeys(flags),
      retentionIntervalMinutes: interval,
      checkpointDir: checkpointDirOf(flags.checkpointDir),
    };
    const log = pino({ level: config.logLevel }, pino.destination(2));
    // Before the service: the SDK must be registered before anything takes a meter.
    const telemetry = await startTelemetry({ logger: log });
    const service = await startService(config, log);
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'shutting down');
      service
        .close()
        .then(() => telemetry?.shutdown())
        .then(
          () => {
            process.stdout.write('Gatehouse stopped.\n');
            process.exit(0);
          },
          (err: unknown) => {
            log.error({ err }, 'shutdown failed');
            process.exit(1);
          },
        );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGHUP', () => void service.reloadPolicy());
    // Printed last: whoever reads the banner may signal at once, and the handlers are in place.
    process.stdout.write(`${banner(service, config)}\n`);
  });

const mcp = serviceOptions(program.command('mcp'));
mcp
  .description('run the MCP server over stdio (stdout carries only the protocol; logs go to stderr)')
  .option('--session <id>', 'default session_id for tools called without one')
  .option(
    '--sources <list>',
    `comma-separated sources the client may claim (default: ${DEFAULT_MCP_SOURCES.join(',')})`,
  )
  .action(async (flags) => {
    const config = readServiceConfig(flags);
    const log = pino({ level: config.logLevel }, pino.destination(2));
    const telemetry = await startTelemetry({ logger: log, stdoutIsProtocol: true });
    const gatehouse = await openGatehouse(config, { policyOrigin: policyOriginOf(config) }, { create: true });
    const sources = list(flags.sources);
    await runStdioServer({
      gatehouse,
      ...(flags.session ? { defaultSessionId: flags.session as string } : {}),
      ...(sources ? { allowedSources: sources } : {}),
      logger: log,
    });
    await telemetry?.shutdown();
  });

const keys = program.command('keys').description('manage API keys');
policyOption(storeOptions(keys.command('create')), ' whose sources --sources may name')
  .description('create an API key (printed once); creates the database when there is none yet')
  .option('--tenant <id>', 'tenant the key belongs to', 'default')
  .option('--name <name>', 'what to call the key: shown by `keys list` and GET /v1/me', 'key')
  .option('--scopes <list>', `comma-separated: ${SCOPES.join(', ')}`, 'admin')
  .option(
    '--sources <list>',
    "comma-separated sources the key may write, each defined by the tenant's policy",
    DEFAULT_KEY_SOURCES.join(','),
  )
  .option(
    '--label <label>',
    'a label policy approvers can name (repeat for several)',
    (label: string, all: string[]) => [...all, label],
    [] as string[],
  )
  .action(async (flags) => {
    const scopes = listOfChoices(String(flags.scopes), { flag: '--scopes', noun: 'scope', allowed: SCOPES });
    const gatehouse = await openGatehouse(readServiceConfig(flags), {}, { create: true });
    const store = gatehouse.store;
    try {
      // Each write the key makes is checked against the tenant's policy: it may name only its sources.
      const { source } = await gatehouse.getActivePolicy({ tenantId: flags.tenant as string });
      const sources = listOfChoices(String(flags.sources), {
        flag: '--sources',
        noun: 'source',
        allowed: Object.keys(compilePolicy(source).sources),
      });
      const { secret, key } = await createApiKey(
        store,
        { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
        {
          tenantId: flags.tenant,
          name: flags.name,
          scopes: scopes as Scope[],
          sources,
          labels: flags.label as string[],
        },
      );
      const labels = key.labels.length > 0 ? terminalText`, labels ${key.labels.join(',')}` : '';
      process.stdout.write(
        `${secret}\n\n${terminalText`id ${key.id}, tenant ${key.tenant_id}, scopes ${key.scopes.join(',')}, sources ${key.sources.join(',')}`}${labels}\nThe key is shown only once.\n`,
      );
    } finally {
      await store.close();
    }
  });
storeOptions(keys.command('list'))
  .description('list API keys (never their secrets)')
  .option('--tenant <id>', 'only this tenant')
  .action(async (flags) => {
    const store = await openStore(readStoreConfig(flags));
    try {
      const rows = await store.listApiKeys(flags.tenant);
      for (const k of rows) {
        process.stdout.write(
          terminalText`${k.id}  ${k.prefix}…  tenant=${k.tenant_id}  name=${k.name}  scopes=${k.scopes.join(',')}  sources=${k.sources.join(',')}${k.labels.length > 0 ? `  labels=${k.labels.join(',')}` : ''}  ${k.revoked_at ? `revoked ${k.revoked_at}` : 'active'}\n`,
        );
      }
      if (rows.length === 0) process.stdout.write('no keys\n');
    } finally {
      await store.close();
    }
  });
storeOptions(keys.command('revoke'))
  .description('revoke an API key by id')
  .argument('<id>', 'key id (key_…)')
  .action(async (id: string, flags) => {
    const store = await openStore(readStoreConfig(flags));
    try {
      if (!(await store.revokeApiKey(id, new Date().toISOString()))) {
        throw new Error(`No active key ${id}.`);
      }
      process.stdout.write(terminalText`revoked ${id}\n`);
    } finally {
      await store.close();
    }
  });

/** One history event as a line: its summary renders what callers and agents wrote, escaped. */
function formatEvent(e: HistoryEvent): string {
  return terminalText`${String(e.seq).padStart(6)}  ${e.occurred_at}  ${e.session_id.padEnd(16)}  ${e.type.padEnd(17)}  ${summarizeEvent(e)}`;
}

storeOptions(program.command('history'))
  .description('print history events, newest first (or follow new ones)')
  .option('--tenant <id>', 'tenant', 'default')
  .option('--session <id>', 'only this session')
  .addOption(new Option('--type <type>', 'only this event type').choices([...EVENT_TYPES]))
  .option('--decision <id>', 'only this decision')
  .option('--limit <n>', 'how many', '20')
  .option('--json', 'one JSON event per line')
  .option('--follow', 'keep printing new events (Ctrl-C to stop)')
  .action(async (flags) => {
    const gatehouse = await openGatehouse(readStoreConfig(flags));
    const ctx = { tenantId: flags.tenant as string };
    const print = (e: HistoryEvent) =>
      process.stdout.write(`${flags.json ? JSON.stringify(e) : formatEvent(e)}\n`);
    const filters = {
      ...(flags.session ? { session_id: flags.session as string } : {}),
      ...(flags.type ? { type: flags.type } : {}),
      ...(flags.decision ? { decision_id: flags.decision as string } : {}),
    };
    const page = await gatehouse.readHistory({ ...filters, limit: Number(flags.limit) }, ctx);
    const events = flags.follow ? [...page.events].reverse() : page.events;
    for (const e of events) print(e);
    if (!flags.follow) return gatehouse.store.close();
    let last = page.events[0]?.seq ?? 0;
    for (;;) {
      await new Promise((r) => setTimeout(r, 1000));
      const next = await gatehouse.store.queryEvents(ctx.tenantId, {
        ...filters,
        after_seq: last,
        order: 'asc',
        limit: 500,
      });
      for (const { decision_id: _d, ...e } of next) {
        print(e);
        last = e.seq;
      }
    }
  });

checkpointKeyOptions(storeOptions(program.command('verify')))
  .description(
    "recompute the history's hash chain (a pruned one from its signed checkpoint); exit 1 when it is broken",
  )
  .option('--tenant <id>', 'only this tenant (default: every tenant)')
  .option(
    '--checkpoint <file>',
    'start from this checkpoint kept elsewhere instead of the stored one (with --public-key: the key that signed it)',
  )
  .action(async (flags) => {
    const keys = readCheckpointKeys(flags);
    const external = flags.checkpoint
      ? parseCheckpoint(readFileSync(flags.checkpoint as string, 'utf8'))
      : null;
    const publicKey = keys.checkpointPublicKey ?? keys.checkpointSigner?.publicKey;
    if (external !== null && publicKey === undefined) {
      throw new Error('--checkpoint needs --public-key (the key that signed it).');
    }
    const gatehouse = await openGatehouse(readStoreConfig(flags), keys);
    try {
      const tenants = external
        ? [external.tenant_id]
        : flags.tenant
          ? [flags.tenant as string]
          : await gatehouse.store.listTenants();
      let ok = true;
      for (const tenantId of tenants) {
        if (publicKey === undefined && (await isPrunedHistory(gatehouse, tenantId))) {
          ok = false;
          process.stdout.write(terminalText`tenant ${tenantId}: ${NO_PUBLIC_KEY}\n`);
          continue;
        }
        const r =
          external && publicKey
            ? await gatehouse.verifyFromCheckpoint(
                { checkpoint: external, public_key: publicKey },
                { tenantId },
              )
            : await gatehouse.verifyHistory({ tenantId });
        ok &&= r.ok;
        process.stdout.write(
          r.ok
            ? terminalText`tenant ${tenantId}: ok, ${r.checked} events${r.pruned_through === undefined ? '' : ` after the checkpoint at seq ${r.pruned_through}`}, ${r.verified_fields} values verified, ${r.erased_fields} erased, head ${r.head ?? '-'}\n`
            : terminalText`tenant ${tenantId}: BROKEN at seq ${r.first_bad_seq}: ${r.problem}\n`,
        );
      }
      if (tenants.length === 0) process.stdout.write('no events yet\n');
      process.exitCode = ok ? 0 : 1;
    } finally {
      await gatehouse.store.close();
    }
  });

storeOptions(program.command('erase'))
  .description(
    "erase what callers wrote into a session, or into every session tagged with a subject (history values, state, conflicts, approvals); the chain's envelopes stay",
  )
  .option('--session <id>', 'the session to erase')
  .option('--subject <id>', 'erase every session tagged with this pseudonymous subject, and the tags')
  .option('--tenant <id>', 'tenant', 'default')
  .option(
    '--reference <ref>',
    'the request reference (a ticket ID, not personal data), recorded in the event',
  )
  .option('--dry-run', 'list what would be erased; erase nothing')
  .option('--override-hold', 'erase although a legal hold covers it (recorded as legal_hold.overridden)')
  .option('--json', 'print the report as JSON')
  .action(async (flags) => {
    if (Boolean(flags.session) === Boolean(flags.subject))
      throw new Error('Give --session or --subject (one).');
    const gatehouse = await openGatehouse(readStoreConfig(flags));
    try {
      const common = {
        ...(flags.dryRun ? { dry_run: true } : {}),
        ...(flags.reference ? { reference: flags.reference as string } : {}),
        ...(flags.overrideHold ? { override_hold: true } : {}),
      };
      const ctx = { tenantId: flags.tenant as string, actor: 'cli' };
      const reports = flags.subject
        ? (await gatehouse.eraseSubject({ subject: flags.subject as string, ...common }, ctx)).sessions
        : [await gatehouse.eraseSession({ session_id: flags.session as string, ...common }, ctx)];
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify(flags.subject ? { subject: flags.subject, sessions: reports } : reports[0])}\n`,
        );
        return;
      }
      if (flags.subject)
        process.stdout.write(terminalText`subject ${flags.subject}: ${reports.length} session(s)\n`);
      for (const report of reports) {
        const verb = report.dry_run ? 'would erase' : 'erased';
        process.stdout.write(
          terminalText`${verb} ${report.fields} field(s) of ${report.events.length} event(s) in session ${report.session_id}\n`,
        );
        for (const e of report.events)
          process.stdout.write(terminalText`  seq ${e.seq} ${e.type}: ${e.paths.join(' ')}\n`);
        process.stdout.write(terminalText`state items: ${report.state_items.join(', ') || '-'}\n`);
        process.stdout.write(
          terminalText`pending approvals (denied): ${report.pending_approvals.join(', ') || '-'}\n`,
        );
        process.stdout.write(
          terminalText`approved approvals (expired): ${report.approved_approvals.join(', ') || '-'}\n`,
        );
        process.stdout.write(`pending webhook deliveries: ${report.pending_deliveries.length}\n`);
        for (const hold of report.legal_holds) {
          const covers = hold.session_id === null ? 'the whole tenant' : `session ${hold.session_id}`;
          process.stdout.write(
            terminalText`legal hold ${hold.hold_id} (${hold.reference}) covers ${covers}: ${report.dry_run ? 'the erasure will be refused without --override-hold' : 'overridden'}\n`,
          );
        }
        if (report.erasure) {
          process.stdout.write(
            terminalText`erasure.completed: seq ${report.erasure.seq} ${report.erasure.event_id}\n`,
          );
        }
      }
    } finally {
      await gatehouse.store.close();
    }
  });

storeOptions(program.command('export'))
  .description(
    'write every row of the database as JSON lines, then an end record (to move it, e.g. SQLite → PostgreSQL)',
  )
  .option('--output <file>', 'write here instead of stdout (replaced only once the whole dump is written)')
  .action(async (flags) => {
    const config = readStoreConfig(flags);
    if (flags.output) assertNotTheDatabase(flags.output as string, config);
    const store = await openStore(config);
    let file: ExportFile | undefined;
    let count = 0;
    try {
      file = flags.output ? await openExportFile(flags.output as string) : undefined;
      const out = file?.stream ?? process.stdout;
      const write = async (line: string) => {
        if (!out.write(line)) await once(out, 'drain');
      };
      for await (const record of store.dumpRows()) {
        await write(`${JSON.stringify(record)}\n`);
        count += 1;
      }
      await write(endRecordLine(count));
      await file?.commit();
    } finally {
      await file?.discard();
      await store.close();
    }
    process.stderr.write(`exported ${count} rows\n`);
  });

checkpointKeyOptions(storeOptions(program.command('import')))
  .description(
    'load a file written by `gatehouse export` into a new, empty database, then verify it (a pruned history needs --public-key)',
  )
  .argument('<file>', 'JSON lines from `gatehouse export` (- for stdin)')
  .option(
    '--no-end-record',
    'accept a dump without the end record (written by an older gatehouse export): nothing then shows whether it was cut short',
  )
  .action(async (file: string, flags) => {
    const keys = readCheckpointKeys(flags);
    const canVerifyCheckpoints = (keys.checkpointPublicKey ?? keys.checkpointSigner?.publicKey) !== undefined;
    const gatehouse = await openGatehouse(readStoreConfig(flags), keys, { create: true });
    try {
      // Created only when the store starts reading: readline drops lines emitted before iteration.
      async function* lines() {
        const input = file === '-' ? process.stdin : createReadStream(file);
        yield* createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
      }
      // A bad line, a pruned history without a key, or a missing end record throws inside the
      // load's transaction: nothing is committed.
      const count = await gatehouse.store.loadRows(
        readDumpRecords(lines(), {
          file,
          canVerifyCheckpoints,
          allowMissingEnd: flags.endRecord === false,
        }),
      );
      process.stdout.write(`imported ${count} rows\n`);
      for (const tenantId of await gatehouse.store.listTenants()) {
        if (!canVerifyCheckpoints && (await isPrunedHistory(gatehouse, tenantId))) {
          process.stdout.write(terminalText`tenant ${tenantId}: ${NO_PUBLIC_KEY}\n`);
          process.exitCode = 1;
          continue;
        }
        const r = await gatehouse.verifyHistory({ tenantId });
        process.stdout.write(
          terminalText`tenant ${tenantId}: ${r.ok ? `chain ok, ${r.checked} events${r.pruned_through === undefined ? '' : ` after the checkpoint at seq ${r.pruned_through}`}` : `BROKEN: ${r.problem}`}\n`,
        );
        if (!r.ok) process.exitCode = 1;
      }
    } finally {
      await gatehouse.store.close();
    }
  });

registerApprovalsCommands(program);
registerCheckpointCommands(program, { storeOptions });
registerHoldCommands(program, { storeOptions });
registerRetentionCommand(program, { storeOptions, policyOption });

const policy = program.command('policy').description('work with policy files');
policy
  .command('check')
  .description('validate a policy file; exit 1 with every problem when it is wrong')
  .argument('<file>', 'policy YAML')
  .action((file: string) => {
    const compiled = compilePolicy(readFileSync(file, 'utf8'), { source: file });
    process.stdout.write(terminalText`${file}: ok (revision ${compiled.revision})\n`);
  });

policy
  .command('default')
  .description('print the built-in policy (a starting point for your own)')
  .action(() => {
    process.stdout.write(DEFAULT_POLICY_YAML);
  });

registerPolicyCommands(policy, { storeOptions, policyOption });

// A command that prints a report stops at once, quietly, when its reader goes away
// (`gatehouse export | head`). `serve` and `mcp` keep running: mcp ends its session its own way.
program.hook('preAction', (_program, command) => {
  if (command !== serve && command !== mcp) process.stdout.on('error', stopWhenReaderGoes);
});

program.parseAsync(process.argv).catch((error: unknown) => {
  if (isClosedPipe(error)) process.exit(CLOSED_PIPE_STATUS);
  // A message may carry a value (a server's answer, a policy's text); its line breaks are ours.
  process.stderr.write(`gatehouse: ${terminalLines(errorMessage(error))}\n`);
  process.exitCode = 1;
});
