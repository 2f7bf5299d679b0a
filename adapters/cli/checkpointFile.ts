/**
 * The file a checkpoint goes to (`prune --checkpoint-out`, `checkpoint create --out`, `retention
 * run --checkpoint-dir`). A checkpoint is what a pruned history is verified from, and the prune
 * that made it cannot be repeated: the file is opened before anything changes, and a checkpoint
 * that still cannot be written is handed over on stderr rather than lost.
 */
import {
  accessSync,
  closeSync,
  constants,
  ftruncateSync,
  mkdirSync,
  openSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { type Checkpoint, GatehouseError } from '../../src/index.js';
import { terminalJson, terminalText } from './terminalText.js';

/** A checkpoint file opened before the command changes anything. */
export interface CheckpointFile {
  /**
   * Writes the checkpoint (replacing what the file held) and closes the file. When that fails,
   * prints the checkpoint on stderr with `done` (what already happened) and returns false.
   */
  write(checkpoint: Checkpoint, done: string): boolean;
  /** Closes the file unwritten (the command failed), removing it when it was made for this. */
  abandon(): void;
}

/** Why a file cannot be opened, without the `open 'path'` Node adds to its message. */
export function reasonOf(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  return e.code ?? e.message ?? String(error);
}

/**
 * Opens (creating it, truncating nothing yet) the file a checkpoint will be written to.
 * @throws {GatehouseError} `invalid_request` when it cannot be opened for writing
 */
export function openCheckpointFile(file: string, flag: string): CheckpointFile {
  let fd: number;
  let created: boolean;
  try {
    // 'wx' first tells whether the file is new (removed again if the command fails).
    try {
      fd = openSync(file, 'wx');
      created = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      fd = openSync(file, 'r+');
      created = false;
    }
  } catch (error) {
    throw new GatehouseError(
      'invalid_request',
      `${flag} ${file} cannot be written (${reasonOf(error)}): nothing was changed.`,
    );
  }
  let open = true;
  const close = () => {
    if (open) closeSync(fd);
    open = false;
  };
  return {
    write(checkpoint, done) {
      try {
        ftruncateSync(fd, 0);
        writeFileSync(fd, `${JSON.stringify(checkpoint, null, 2)}\n`);
        close();
        return true;
      } catch (error) {
        try {
          close();
        } catch {
          // The checkpoint below is what matters.
        }
        printUnwrittenCheckpoint(file, checkpoint, { done, reason: reasonOf(error) });
        return false;
      }
    },
    abandon() {
      close();
      if (created) unlinkSync(file);
    },
  };
}

/**
 * Makes the directory retention writes checkpoints to and checks it may be written, before
 * anything is pruned.
 * @throws {GatehouseError} `invalid_request` when it cannot be made or written
 */
export function assertWritableDirectory(dir: string, flag: string): void {
  const problem = writableDirectoryProblem(dir, flag);
  if (problem !== undefined) throw new GatehouseError('invalid_request', `${problem}: nothing was changed.`);
}

/** Makes the directory if missing; says why it cannot be written (`${what} ${dir} cannot be written (EACCES)`), or undefined. */
export function writableDirectoryProblem(dir: string, what: string): string | undefined {
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
    return undefined;
  } catch (error) {
    return `${what} ${dir} cannot be written (${reasonOf(error)})`;
  }
}

/** Prints on stderr a checkpoint whose file could not be written, so it is not lost. */
export function printUnwrittenCheckpoint(
  file: string,
  checkpoint: Checkpoint,
  why: { done: string; reason: string },
): void {
  process.stderr.write(
    `${terminalText`gatehouse: the checkpoint could not be written to ${file} (${why.reason}); ${why.done}. Keep this checkpoint elsewhere:`}\n${terminalJson(checkpoint, 2)}\n`,
  );
}
