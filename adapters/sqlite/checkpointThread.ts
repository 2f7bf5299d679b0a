/**
 * WAL checkpoints on a thread of their own. A checkpoint copies the WAL's pages into the database
 * file and fsyncs both: on the committing connection (SQLite's autocheckpoint) that stalled the
 * event loop for ~30 ms every ~1,600 evaluations, about a quarter of a sequential evaluation's
 * time. Here a worker thread with its own connection runs `PRAGMA wal_checkpoint(PASSIVE)` a few
 * ms after commits, which never waits for and never blocks the writer. The store's connection
 * keeps its autocheckpoint as the backstop: when the worker is behind or gone, that one finds
 * most pages already copied, and it alone restarts the WAL under a writer that never pauses.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Where the shared counters live in the control `Int32Array` (the worker is told the same). */
const SLOTS = { commits: 0, stop: 1 } as const;

/** What the worker is started with (structured-cloned; the buffer is shared). */
interface CheckpointWorkerData {
  filename: string;
  /** `node:sqlite`, or the path better-sqlite3 resolves to from this module. */
  driver: string;
  synchronous: 'NORMAL' | 'FULL';
  intervalMs: number;
  control: SharedArrayBuffer;
  slots: typeof SLOTS;
}

/** Options for {@link startCheckpointThread}. */
export interface CheckpointThreadOptions {
  /** The store's database file (a WAL database; never `:memory:`). */
  filename: string;
  /** Which driver the store runs on: the worker opens its connection with the same one. */
  driver: 'node:sqlite' | 'better-sqlite3';
  /** The store's `synchronous`: a checkpoint syncs the way its own connection is set to. */
  synchronous: 'NORMAL' | 'FULL';
  /** How long the worker lets commits gather before it checkpoints them. */
  intervalMs: number;
  /** The worker failed (it has stopped; the store's autocheckpoint carries on alone). */
  onError: (error: Error) => void;
}

/** A running checkpoint thread. */
export interface CheckpointThread {
  /** Tells the worker that a transaction committed; cheap enough for every commit. */
  committed(): void;
  /** Stops the worker and waits until its connection is closed. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * The worker's whole program. It runs from its source text (`eval`), so that the same code runs
 * from the TypeScript sources under test and from the build: it imports nothing and closes over
 * nothing, and reaches modules through `process.getBuiltinModule`.
 */
function checkpointWorker(): void {
  const { workerData } = process.getBuiltinModule(
    'node:worker_threads',
  ) as typeof import('node:worker_threads');
  const data = workerData as CheckpointWorkerData;
  const control = new Int32Array(data.control);
  const { commits: COMMITS, stop: STOP } = data.slots;
  type Connection = {
    exec(sql: string): void;
    prepare(sql: string): { get(): unknown };
    close(): void;
  };
  let db: Connection;
  if (data.driver === 'node:sqlite') {
    const { DatabaseSync } = process.getBuiltinModule('node:sqlite') as {
      DatabaseSync: new (path: string) => Connection;
    };
    db = new DatabaseSync(data.filename);
  } else {
    const { createRequire } = process.getBuiltinModule('node:module') as typeof import('node:module');
    const Database = createRequire(data.driver)(data.driver) as new (path: string) => Connection;
    db = new Database(data.filename);
  }
  try {
    db.exec(`PRAGMA synchronous = ${data.synchronous}`);
    // Its own autocheckpoint would only ever run from here; the explicit one below is the job.
    db.exec('PRAGMA wal_autocheckpoint = 0');
    const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
    // From zero: commits made while the worker was starting are checkpointed too.
    let seen = 0;
    for (;;) {
      Atomics.wait(control, COMMITS, seen);
      if (Atomics.load(control, STOP) !== 0) break;
      // Let the next few ms of commits gather: one checkpoint (two fsyncs) for all of them.
      Atomics.wait(control, STOP, 0, data.intervalMs);
      if (Atomics.load(control, STOP) !== 0) break;
      seen = Atomics.load(control, COMMITS);
      checkpoint.get();
    }
  } finally {
    db.close();
  }
}

const requireFromHere = createRequire(import.meta.url);

/**
 * Starts the checkpoint worker for a store's file.
 * @example
 * const thread = startCheckpointThread({ filename, driver: db.driver, synchronous: 'NORMAL', intervalMs: 5, onError });
 * // after each COMMIT: thread.committed(); on close: await thread.stop();
 */
export function startCheckpointThread(options: CheckpointThreadOptions): CheckpointThread {
  const control = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
  const data: CheckpointWorkerData = {
    filename: options.filename,
    driver: options.driver === 'node:sqlite' ? 'node:sqlite' : requireFromHere.resolve('better-sqlite3'),
    synchronous: options.synchronous,
    intervalMs: options.intervalMs,
    control: control.buffer as SharedArrayBuffer,
    slots: SLOTS,
  };
  const worker = new Worker(`(${checkpointWorker.toString()})()`, { eval: true, workerData: data });
  // A store that is never closed must not keep the process alive for its checkpoints.
  worker.unref();
  let running = true;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.once('error', (error) => {
    running = false;
    options.onError(error);
  });
  return {
    committed() {
      if (!running) return;
      Atomics.add(control, SLOTS.commits, 1);
      Atomics.notify(control, SLOTS.commits, 1);
    },
    async stop() {
      running = false;
      // Held again until it has exited: a close awaits this, and nothing else may be left to wait on.
      worker.ref();
      Atomics.store(control, SLOTS.stop, 1);
      // Moved as well, so that a worker still starting up does not go on to wait for commits.
      Atomics.add(control, SLOTS.commits, 1);
      Atomics.notify(control, SLOTS.commits);
      Atomics.notify(control, SLOTS.stop);
      await exited;
    },
  };
}
