/**
 * `gatehouse retention run`: applies each tenant's policy `retention:` once (what `serve` does on
 * its schedule), writing the checkpoint of each prune to a file to keep elsewhere.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { Checkpoint } from '../../src/index.js';
import { checkpointKeyOptions, readCheckpointKeys } from './checkpointCommands.js';
import { assertWritableDirectory, printUnwrittenCheckpoint } from './checkpointFile.js';
import { readServiceConfig } from './config.js';
import { openGatehouse } from './openService.js';
import { terminalText } from './terminalText.js';

/** Where checkpoints of retention's prunes go unless told otherwise. */
export const DEFAULT_CHECKPOINT_DIR = '.gatehouse/checkpoints';

/** `--checkpoint-dir`, else env GATEHOUSE_CHECKPOINT_DIR, else {@link DEFAULT_CHECKPOINT_DIR}. */
export function checkpointDirOf(flag: unknown): string {
  return typeof flag === 'string' && flag !== ''
    ? flag
    : process.env['GATEHOUSE_CHECKPOINT_DIR'] || DEFAULT_CHECKPOINT_DIR;
}

/** Where {@link writeCheckpointFile} writes a checkpoint: `dir/<tenant>-<seq>.json`. */
export function checkpointFileOf(dir: string, checkpoint: Checkpoint): string {
  return join(dir, `${checkpoint.tenant_id}-${checkpoint.seq}.json`);
}

/**
 * Writes a prune's checkpoint to `dir/<tenant>-<seq>.json` (the directory made if missing).
 * @returns the file's path
 */
export function writeCheckpointFile(dir: string, checkpoint: Checkpoint): string {
  mkdirSync(dir, { recursive: true });
  const file = checkpointFileOf(dir, checkpoint);
  writeFileSync(file, `${JSON.stringify(checkpoint, null, 2)}\n`);
  return file;
}

/** Registers `retention run`. */
export function registerRetentionCommand(
  program: Command,
  helpers: { storeOptions(cmd: Command): Command; policyOption(cmd: Command, use?: string): Command },
): void {
  const retention = program.command('retention').description("apply the policy's retention: block");
  checkpointKeyOptions(helpers.policyOption(helpers.storeOptions(retention.command('run'))))
    .description(
      'erase values older than values_after and prune history older than history_after (behind a signed checkpoint), per tenant',
    )
    .option('--tenant <id>', 'only this tenant (default: every tenant)')
    .option(
      '--checkpoint-dir <dir>',
      `where to write the checkpoint of each prune (env GATEHOUSE_CHECKPOINT_DIR; default ${DEFAULT_CHECKPOINT_DIR})`,
    )
    .option('--json', 'one JSON line per tenant')
    .action(async (flags) => {
      const gatehouse = await openGatehouse(readServiceConfig(flags), readCheckpointKeys(flags));
      try {
        const tenants = flags.tenant ? [flags.tenant as string] : await gatehouse.store.listTenants();
        const dir = checkpointDirOf(flags.checkpointDir);
        // Checked before any tenant is pruned: a prune cannot be repeated to get its checkpoint.
        assertWritableDirectory(dir, '--checkpoint-dir');
        let ok = true;
        for (const tenantId of tenants) {
          const r = await gatehouse.runRetention({ tenantId, actor: 'cli' });
          if (r.pruned) {
            const { checkpoint } = r.pruned;
            try {
              writeCheckpointFile(dir, checkpoint);
            } catch (error) {
              // The prune is done: hand its checkpoint over and go on with the other tenants.
              printUnwrittenCheckpoint(checkpointFileOf(dir, checkpoint), checkpoint, {
                done: `the prune of tenant ${tenantId} is done`,
                reason: (error as NodeJS.ErrnoException).code ?? String(error),
              });
              ok = false;
            }
          }
          ok &&= r.problem === null;
          process.stdout.write(
            flags.json
              ? `${JSON.stringify(r)}\n`
              : terminalText`tenant ${tenantId}: ${
                  r.finished_prune > 0
                    ? `finished an earlier prune (${r.finished_prune} event(s) deleted), `
                    : ''
                }erased ${r.erased.fields} field(s) of ${r.erased.events} event(s)${
                  r.erased_items.items > 0 ? `, cleared ${r.erased_items.items} state item(s)` : ''
                }${
                  r.erased_records.erasures.length > 0
                    ? `, erased the values of ${r.erased_records.conflicts} conflict(s) and ${r.erased_records.approvals} approval(s)`
                    : ''
                }${
                  r.pruned
                    ? `, pruned events ${r.pruned.from_seq}-${r.pruned.through_seq} behind checkpoint ${r.pruned.checkpoint.hash}`
                    : ''
                }${r.problem ? `; prune refused: ${r.problem}` : ''}\n`,
          );
        }
        process.exitCode = ok ? 0 : 1;
      } finally {
        await gatehouse.store.close();
      }
    });
}
