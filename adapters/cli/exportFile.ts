/**
 * Where `gatehouse export --output FILE` writes: never the database it reads (a slip of the tab
 * key would destroy it), and never FILE in place — a temporary file beside it, renamed over FILE
 * only once the whole dump is written, so a failed export leaves FILE as it was.
 */
import { once } from 'node:events';
import { createWriteStream, realpathSync, renameSync, rmSync, statSync, type WriteStream } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { GatehouseError } from '../../src/index.js';
import { reasonOf } from './checkpointFile.js';
import type { StoreConfig } from './config.js';

/** The files of a SQLite database: the file, its write-ahead log, shared memory and journal. */
const SQLITE_SUFFIXES = ['', '-wal', '-shm', '-journal'];

/** A path with its symbolic links resolved, as far as it exists. */
function canonicalPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    try {
      return join(realpathSync(dirname(path)), basename(path));
    } catch {
      return resolve(path);
    }
  }
}

/** Device and inode of an existing file, to catch a hard link to it. */
function identityOf(path: string): string | undefined {
  try {
    const s = statSync(path);
    return `${s.dev}:${s.ino}`;
  } catch {
    return undefined;
  }
}

/**
 * Refuses an output that is the SQLite database being exported, or its -wal, -shm or -journal.
 * @throws {GatehouseError} `invalid_request`
 */
export function assertNotTheDatabase(
  output: string,
  config: Pick<StoreConfig, 'database' | 'databaseUrl'>,
): void {
  if (config.databaseUrl || config.database === ':memory:') return;
  const target = canonicalPath(output);
  const targetId = identityOf(output);
  for (const suffix of SQLITE_SUFFIXES) {
    const file = `${config.database}${suffix}`;
    const id = identityOf(file);
    if (canonicalPath(file) === target || (id !== undefined && id === targetId)) {
      throw new GatehouseError(
        'invalid_request',
        `--output ${output} is ${suffix === '' ? 'the database being exported' : `the database's ${suffix.slice(1)} file`}: write the dump to another file.`,
      );
    }
  }
}

/** A dump being written to a temporary file beside its destination. */
export interface ExportFile {
  /** Where to write the lines. */
  stream: WriteStream;
  /** Ends the stream and renames the temporary file over the destination. */
  commit(): Promise<void>;
  /** Ends the stream and removes the temporary file; the destination is untouched. Safe twice. */
  discard(): Promise<void>;
}

/**
 * Opens a temporary file in `file`'s directory (so the final rename stays on one file system).
 * @throws {GatehouseError} `invalid_request` when the directory cannot be written
 */
export async function openExportFile(file: string): Promise<ExportFile> {
  const temp = join(dirname(file), `.${basename(file)}.${process.pid}.${Date.now().toString(36)}.tmp`);
  const stream = createWriteStream(temp, { flags: 'wx' });
  try {
    await once(stream, 'open');
  } catch (error) {
    throw new GatehouseError('invalid_request', `--output ${file} cannot be written (${reasonOf(error)}).`);
  }
  const end = async () => {
    if (stream.closed) return;
    await new Promise<void>((done, fail) => {
      stream.once('error', fail);
      stream.end(() => done());
    });
    if (!stream.closed) await once(stream, 'close');
  };
  return {
    stream,
    async commit() {
      await end();
      renameSync(temp, file);
    },
    async discard() {
      stream.destroy();
      if (!stream.closed) await once(stream, 'close').catch(() => undefined);
      rmSync(temp, { force: true });
    },
  };
}
