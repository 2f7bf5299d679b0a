/**
 * `gatehouse policy history | test | replay`: the policy lifecycle from the command line.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { Option } from 'commander';
import {
  type CompiledPolicy,
  compilePolicy,
  DEFAULT_POLICY_YAML,
  defaultPolicy,
  GatehouseError,
  parsePolicyTestFile,
  runPolicyTests,
} from '../../src/index.js';
import { readServiceConfig, readStoreConfig } from './config.js';
import { openGatehouse } from './openService.js';
import { formatReplay, formatTestRun, formatTestRunJunit } from './policyReports.js';
import { terminalText } from './terminalText.js';

/** `builtin` names the built-in policy wherever a policy file is expected. */
const BUILTIN = 'builtin';

function loadCandidate(file: string): CompiledPolicy {
  if (file === BUILTIN && !existsSync(file)) return defaultPolicy();
  return compilePolicy(readFile(file), { source: file });
}

function readFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new GatehouseError(
      'invalid_request',
      `Cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
}

/** What the text report says when no test file was given or found. */
function whereTestsGo(policyFile: string, builtin: boolean): string {
  if (builtin) {
    return `pass test files after '${BUILTIN}' (the repository's examples/policies/builtin.test.yaml tests it).`;
  }
  const sibling = policyFile.replace(/\.ya?ml$/, '.test.yaml');
  return sibling === policyFile
    ? 'pass test files after the policy.'
    : `pass test files after the policy, or put ${sibling} next to it.`;
}

/** `7d`, `12h`, `30m` before now, or an ISO 8601 time. */
export function parseSince(value: string, now = Date.now()): string {
  const relative = /^(\d+)([dhm])$/.exec(value);
  if (relative) {
    const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[relative[2] as 'd' | 'h' | 'm'];
    return new Date(now - Number(relative[1]) * unit).toISOString();
  }
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) {
    throw new GatehouseError('invalid_request', `'${value}' is not a time: use ISO 8601 or 7d, 12h, 30m.`);
  }
  return new Date(ms).toISOString();
}

function positiveInteger(value: string, flag: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) {
    throw new GatehouseError('invalid_request', `${flag} must be a whole number, got '${value}'.`);
  }
  return parsed;
}

/** How `main` declares the flags shared with other commands. */
export interface SharedOptions {
  /** Adds the database flags. */
  storeOptions(cmd: Command): Command;
  /** Adds `--policy`, saying what the command uses it for. */
  policyOption(cmd: Command, use?: string): Command;
}

/** Adds the lifecycle commands to `gatehouse policy`. */
export function registerPolicyCommands(policy: Command, { storeOptions, policyOption }: SharedOptions): void {
  policyOption(storeOptions(policy.command('history')), ' in force where no activation is recorded')
    .description('list policy activations, newest first (the active one marked)')
    .option('--tenant <id>', 'tenant', 'default')
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'one JSON line per activation (its policy.activated history event), newest first')
    .action(async (flags) => {
      const gatehouse = await openGatehouse(readServiceConfig(flags));
      const ctx = { tenantId: flags.tenant as string };
      try {
        const limit = positiveInteger(String(flags.limit), '--limit');
        const page = await gatehouse.readHistory(
          { type: 'policy.activated', limit: Math.min(limit, 500) },
          ctx,
        );
        const active = await gatehouse.getActivePolicy(ctx);
        if (flags.json) {
          for (const e of page.events) process.stdout.write(`${JSON.stringify(e)}\n`);
          return;
        }
        if (page.events.length === 0) {
          process.stdout.write(
            terminalText`No activation recorded yet; in force: revision ${active.revision.slice(0, 12)} (the instance policy).\n`,
          );
          return;
        }
        process.stdout.write(
          `${'seq'.padStart(8)}  ${'activated at'.padEnd(24)}  ${'revision'.padEnd(12)}  by\n`,
        );
        for (const e of page.events) {
          const revision = String(e.data['revision']);
          const mark = e.seq === active.seq ? '  (active)' : '';
          process.stdout.write(
            terminalText`${String(e.seq).padStart(8)}  ${e.occurred_at.padEnd(24)}  ${revision.slice(0, 12)}  ${String(e.data['activated_by'])}${mark}\n`,
          );
        }
      } finally {
        await gatehouse.store.close();
      }
    });

  policy
    .command('test')
    .description('run YAML test cases against a policy; exit 1 when a case fails')
    .argument('<policy>', `policy YAML file, or '${BUILTIN}' for the built-in policy`)
    .argument('[tests...]', 'test files (default: <policy name>.test.yaml next to the policy)')
    .addOption(new Option('--format <format>', 'output').choices(['text', 'json', 'junit']).default('text'))
    .option('--fail-on-empty', 'exit 1 when there is no case to run')
    .action(async (policyFile: string, tests: string[], flags) => {
      const compiled = loadCandidate(policyFile);
      let paths = tests;
      if (paths.length === 0) {
        const sibling = policyFile.replace(/\.ya?ml$/, '.test.yaml');
        if (sibling !== policyFile && existsSync(sibling)) paths = [sibling];
      }
      const files = paths.map((path) => parsePolicyTestFile(readFile(path), { path }));
      const { openSqliteStore } = await import('../sqlite/index.js');
      const run = await runPolicyTests({ policy: compiled, files, openStore: () => openSqliteStore() });
      const builtin = policyFile === BUILTIN && !existsSync(policyFile);
      const name = builtin ? 'built-in' : policyFile;
      process.stdout.write(
        flags.format === 'json'
          ? `${JSON.stringify(run, null, 2)}\n`
          : flags.format === 'junit'
            ? formatTestRunJunit(run)
            : formatTestRun(run, { policyName: name, whereTestsGo: whereTestsGo(policyFile, builtin) }),
      );
      if (run.totals.failed > 0) process.exitCode = 1;
      if (run.totals.cases === 0 && flags.failOnEmpty) {
        process.stderr.write('gatehouse: no test cases were run (--fail-on-empty)\n');
        process.exitCode = 1;
      }
    });

  storeOptions(policy.command('replay'))
    .description(
      'try a candidate policy on the recorded decisions (as each was made) and report what would change',
    )
    .argument(
      '<candidate>',
      `the policy to try: a YAML file, '${BUILTIN}', or a stored revision (64 hex digits)`,
    )
    .option('--tenant <id>', 'tenant', 'default')
    .option('--since <time>', 'only decisions at or after: ISO 8601, or 7d / 12h / 30m ago')
    .option('--until <time>', 'only decisions before: ISO 8601, or 7d / 12h / 30m ago')
    .option('--session <id>', 'only this session')
    .option('--action <name>', 'only this action, or a glob (payments.*)')
    .option('--limit <n>', 'replay at most this many decisions')
    .option('--after-seq <seq>', 'start after this history seq (continue a limited replay)')
    .option('--examples <n>', 'changed decisions to show', '10')
    .option('--json', 'the report as JSON')
    .action(async (candidate: string, flags) => {
      const gatehouse = await openGatehouse(readStoreConfig(flags));
      try {
        const source = /^[0-9a-f]{64}$/.test(candidate)
          ? { revision: candidate }
          : {
              policy:
                candidate === BUILTIN && !existsSync(candidate) ? DEFAULT_POLICY_YAML : readFile(candidate),
            };
        const report = await gatehouse.replayPolicy(
          {
            ...source,
            ...(flags.since ? { since: parseSince(flags.since as string) } : {}),
            ...(flags.until ? { until: parseSince(flags.until as string) } : {}),
            ...(flags.session ? { session_id: flags.session as string } : {}),
            ...(flags.action ? { action: flags.action as string } : {}),
            ...(flags.limit ? { limit: positiveInteger(flags.limit as string, '--limit') } : {}),
            ...(flags.afterSeq
              ? { after_seq: positiveInteger(flags.afterSeq as string, '--after-seq') }
              : {}),
            examples: positiveInteger(String(flags.examples), '--examples'),
          },
          { tenantId: flags.tenant as string, actor: 'cli' },
        );
        process.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatReplay(report));
      } finally {
        await gatehouse.store.close();
      }
    });
}
