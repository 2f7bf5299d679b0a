/**
 * `gatehouse checkpoint keygen|create` and `gatehouse prune`, and the checkpoint keys every
 * command that signs or verifies checkpoints reads (`--checkpoint-key FILE` or
 * `GATEHOUSE_CHECKPOINT_KEY`; `--public-key FILE` or `GATEHOUSE_CHECKPOINT_PUBLIC_KEY`).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import {
  type Gatehouse,
  GatehouseError,
  type GatehouseOptions,
  generateCheckpointKeyPair,
  loadCheckpointPublicKey,
  loadCheckpointSigner,
} from '../../src/index.js';
import { openCheckpointFile } from './checkpointFile.js';
import { readStoreConfig } from './config.js';
import { openGatehouse } from './openService.js';
import { terminalText } from './terminalText.js';

type Flags = Record<string, unknown>;

/** `--checkpoint-key` and `--public-key`, for the commands that sign or verify checkpoints. */
export function checkpointKeyOptions(cmd: Command): Command {
  return cmd
    .option(
      '--checkpoint-key <file>',
      'Ed25519 private key (PKCS #8 PEM) that signs checkpoints (env GATEHOUSE_CHECKPOINT_KEY: a file or the PEM)',
    )
    .option(
      '--public-key <file>',
      'Ed25519 public key (PEM) that verifies checkpoints (env GATEHOUSE_CHECKPOINT_PUBLIC_KEY; default: the checkpoint key’s)',
    );
}

/** A PEM from a flag or an environment variable holding either a file name or the PEM itself. */
function pemFrom(flag: unknown, envName: string): string | undefined {
  const value = typeof flag === 'string' && flag !== '' ? flag : process.env[envName] || undefined;
  if (value === undefined) return undefined;
  if (value.includes('-----BEGIN')) return value;
  if (!existsSync(value)) throw new GatehouseError('invalid_request', `No key file at ${value}.`);
  return readFileSync(value, 'utf8');
}

/** The checkpoint keys of the Gatehouse options, from the flags and the environment. */
export function readCheckpointKeys(
  flags: Flags,
): Pick<GatehouseOptions, 'checkpointSigner' | 'checkpointPublicKey'> {
  const privatePem = pemFrom(flags['checkpointKey'], 'GATEHOUSE_CHECKPOINT_KEY');
  const publicPem = pemFrom(flags['publicKey'], 'GATEHOUSE_CHECKPOINT_PUBLIC_KEY');
  return {
    ...(privatePem === undefined ? {} : { checkpointSigner: loadCheckpointSigner(privatePem) }),
    ...(publicPem === undefined ? {} : { checkpointPublicKey: loadCheckpointPublicKey(publicPem) }),
  };
}

/** What `verify` and `import` print for a pruned history when no public key is configured. */
export const NO_PUBLIC_KEY =
  'cannot verify: no checkpoint public key is configured (the history is pruned and is verified from its signed checkpoint: pass --public-key or set GATEHOUSE_CHECKPOINT_PUBLIC_KEY)';

/**
 * True when the tenant's history is pruned (its events start after seq 1, and a `retention.pruned`
 * event says why), so verifying it needs the checkpoint public key.
 */
export async function isPrunedHistory(gatehouse: Gatehouse, tenantId: string): Promise<boolean> {
  // Events missing at the start with no prune in the chain to account for them are a break, which
  // verify reports as one whatever key is configured: only a prune is waiting for its key.
  return gatehouse.store.transaction(async (tx) => {
    const first = await tx.firstEventSeq(tenantId);
    return first !== null && first > 1 && (await tx.prunedThrough(tenantId)) !== null;
  });
}

/** Registers `hold place|release|list`. */
export function registerHoldCommands(
  program: Command,
  helpers: { storeOptions(cmd: Command): Command },
): void {
  const hold = program
    .command('hold')
    .description('legal holds: what one covers is neither erased nor pruned unless overridden');
  helpers
    .storeOptions(hold.command('place'))
    .description('place a hold on a session, or (without --session) on the whole tenant')
    .option('--session <id>', 'the session to hold (default: the tenant)')
    .requiredOption('--reference <ref>', 'the matter (a case ID, not personal data), recorded in the chain')
    .option('--tenant <id>', 'tenant', 'default')
    .action(async (flags) => {
      const gatehouse = await openGatehouse(readStoreConfig(flags));
      try {
        const h = await gatehouse.placeHold(
          {
            reference: flags.reference as string,
            ...(flags.session ? { session_id: flags.session as string } : {}),
          },
          { tenantId: flags.tenant as string, actor: 'cli' },
        );
        process.stdout.write(
          terminalText`${h.hold_id}: ${h.session_id ? `session ${h.session_id}` : 'the tenant'} (${h.reference})\n`,
        );
      } finally {
        await gatehouse.store.close();
      }
    });
  helpers
    .storeOptions(hold.command('release'))
    .description('release a hold')
    .argument('<id>', 'the hold ID')
    .option('--tenant <id>', 'tenant', 'default')
    .action(async (id: string, flags) => {
      const gatehouse = await openGatehouse(readStoreConfig(flags));
      try {
        const h = await gatehouse.releaseHold(id, { tenantId: flags.tenant as string, actor: 'cli' });
        process.stdout.write(terminalText`${h.hold_id} released\n`);
      } finally {
        await gatehouse.store.close();
      }
    });
  helpers
    .storeOptions(hold.command('list'))
    .description('the holds in force')
    .option('--tenant <id>', 'tenant', 'default')
    .action(async (flags) => {
      const gatehouse = await openGatehouse(readStoreConfig(flags));
      try {
        const { holds } = await gatehouse.listHolds({ tenantId: flags.tenant as string });
        for (const h of holds) {
          // Tabs separate the columns: a tab inside a value is escaped, so it cannot shift them.
          process.stdout.write(
            terminalText`${h.hold_id}\t${h.session_id ?? '(tenant)'}\t${h.reference}\t${h.placed_by}\t${h.placed_at}\n`,
          );
        }
      } finally {
        await gatehouse.store.close();
      }
    });
}

/** Registers `checkpoint keygen`, `checkpoint create` and `prune`. */
export function registerCheckpointCommands(
  program: Command,
  helpers: { storeOptions(cmd: Command): Command },
): void {
  const { storeOptions } = helpers;
  const checkpoint = program
    .command('checkpoint')
    .description('signed checkpoints of the history, which pruning needs and verify starts from');

  checkpoint
    .command('keygen')
    .description('write a new Ed25519 key pair: FILE (private, PKCS #8 PEM, mode 0600) and FILE.pub')
    .requiredOption('--out <file>', 'where to write the private key')
    .action((flags) => {
      const out = flags.out as string;
      if (existsSync(out)) throw new GatehouseError('invalid_request', `${out} exists: not overwritten.`);
      const pair = generateCheckpointKeyPair();
      writeFileSync(out, pair.privateKey, { mode: 0o600 });
      writeFileSync(`${out}.pub`, pair.publicKey);
      process.stdout.write(terminalText`key ${pair.keyId}: ${out}, ${out}.pub\n`);
    });

  checkpointKeyOptions(storeOptions(checkpoint.command('create')))
    .description(
      "sign a checkpoint at the history's head, store it, and write it to a file to keep elsewhere",
    )
    .option('--tenant <id>', 'tenant', 'default')
    .requiredOption('--out <file>', 'where to write the checkpoint (JSON)')
    .action(async (flags) => {
      const gatehouse = await openGatehouse(readStoreConfig(flags), readCheckpointKeys(flags));
      try {
        // Opened before the checkpoint is stored, so an unwritable --out changes nothing.
        const out = openCheckpointFile(flags.out as string, '--out');
        let c: Awaited<ReturnType<typeof gatehouse.createCheckpoint>>;
        try {
          c = await gatehouse.createCheckpoint({ tenantId: flags.tenant as string, actor: 'cli' });
        } catch (error) {
          out.abandon();
          throw error;
        }
        const written = out.write(c, 'the checkpoint is stored in the database');
        process.stdout.write(
          terminalText`checkpoint at seq ${c.seq} (${c.hash}), key ${c.key_id}: ${written ? flags.out : '(not written: see above)'}\n`,
        );
        if (!written) process.exitCode = 1;
      } finally {
        await gatehouse.store.close();
      }
    });

  checkpointKeyOptions(storeOptions(program.command('prune')))
    .description(
      "delete the history's prefix through a seq behind a new signed checkpoint (written to a file to keep elsewhere); refused inside the 183-day floor unless --allow-below-floor",
    )
    .requiredOption('--through <seq>', 'the last event to delete')
    .requiredOption('--checkpoint-out <file>', 'where to write the checkpoint (JSON)')
    .option('--tenant <id>', 'tenant', 'default')
    .option('--allow-below-floor', 'prune events younger than 183 days (recorded in the event)')
    .option('--override-hold', 'prune although a legal hold covers it (recorded as legal_hold.overridden)')
    .option('--reference <ref>', 'a ticket ID recorded in the event (not personal data)')
    .option('--json', 'print the report as JSON')
    .action(async (flags) => {
      const gatehouse = await openGatehouse(readStoreConfig(flags), readCheckpointKeys(flags));
      try {
        // Opened before anything is deleted: the prune cannot be repeated to get its checkpoint.
        const out = openCheckpointFile(flags.checkpointOut as string, '--checkpoint-out');
        let report: Awaited<ReturnType<typeof gatehouse.pruneHistory>>;
        try {
          report = await gatehouse.pruneHistory(
            {
              through_seq: Number(flags.through),
              ...(flags.allowBelowFloor ? { allow_below_floor: true } : {}),
              ...(flags.overrideHold ? { override_hold: true } : {}),
              ...(flags.reference ? { reference: flags.reference as string } : {}),
            },
            { tenantId: flags.tenant as string, actor: 'cli' },
          );
        } catch (error) {
          out.abandon();
          throw error;
        }
        const written = out.write(report.checkpoint, 'the prune is done');
        process.stdout.write(
          flags.json
            ? `${JSON.stringify(report)}\n`
            : terminalText`pruned events ${report.from_seq}-${report.through_seq} (${report.events}) behind checkpoint ${report.checkpoint.hash} (key ${report.checkpoint.key_id}): ${written ? flags.checkpointOut : '(not written: see above)'}\nretention.pruned: seq ${report.event.seq} ${report.event.event_id}\n`,
        );
        if (!written) process.exitCode = 1;
      } finally {
        await gatehouse.store.close();
      }
    });
}
