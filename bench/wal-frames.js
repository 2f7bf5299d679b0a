// Where a decision's commit goes: the WAL frames (pages) that sequential in-process evaluations
// append, by the B-tree each page belongs to. Not a timing benchmark: a commit's cost on SQLite
// is mostly its frames (two `pwrite`s and a checksum each), so this explains the commit rows of
// `evaluate` and `record-state`, and how a schema or row-size change moves them.
//
//   node bench/wal-frames.js                       # this checkout's build (dist/)
//   GATEHOUSE_BENCH_DIST=bench/results/dist-old node bench/wal-frames.js   # another build
//
// The frames are read from the WAL file itself (checkpoints off while measuring) and each page
// number is named through SQLite's `dbstat` table. Page 1 (the database header) is written
// whenever the file grows.

import { readFileSync } from 'node:fs';
import { DIST_DIR, load, scratchDir } from './lib/env.js';
import { BENCH_POLICY_YAML, evaluateRequests, OWNER_SOURCES, sessionItems } from './lib/workload.js';

const WARMUP = 500;
const MEASURED = 2000;
const WAL_HEADER = 32;
const FRAME_HEADER = 24;

const { compilePolicy, createGatehouse } = await load('src/index.js');
const { openSqliteStore } = await load('adapters/sqlite/index.js');
const scratch = scratchDir('wal-frames');
try {
  const file = `${scratch.dir}/gatehouse.db`;
  const store = openSqliteStore({ filename: file, walCheckpoints: 'commit' });
  const db = store.database;
  db.exec('PRAGMA wal_autocheckpoint = 0');
  const pageSize = Number(db.prepare('PRAGMA page_size').get().page_size);
  const gatehouse = createGatehouse({ store, policy: compilePolicy(BENCH_POLICY_YAML) });
  for (const item of sessionItems('bench'))
    await gatehouse.recordState(item, { allowedSources: OWNER_SOURCES });
  const requests = evaluateRequests('bench');
  for (let i = 0; i < WARMUP; i += 1) await gatehouse.evaluate(requests[i % requests.length]);
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  for (let i = 0; i < MEASURED; i += 1) await gatehouse.evaluate(requests[i % requests.length]);

  const wal = readFileSync(`${file}-wal`);
  const owner = new Map(
    db
      .prepare('SELECT pageno, name, pagetype FROM dbstat')
      .all()
      .map((r) => [r.pageno, `${r.name} (${r.pagetype})`]),
  );
  const frames = new Map();
  let total = 0;
  for (let at = WAL_HEADER; at + FRAME_HEADER <= wal.length; at += FRAME_HEADER + pageSize) {
    const page = wal.readUInt32BE(at);
    const name = page === 1 ? 'page 1 (header)' : (owner.get(page) ?? `page ${page} (free)`);
    frames.set(name, (frames.get(name) ?? 0) + 1);
    total += 1;
  }
  console.log(
    `WAL frames per sequential evaluate, ${MEASURED} evaluations, ${pageSize}-byte pages, build ${DIST_DIR}`,
  );
  for (const [name, n] of [...frames].sort((a, b) => b[1] - a[1])) {
    console.log(`${(n / MEASURED).toFixed(2).padStart(6)}  ${name}`);
  }
  console.log(`${(total / MEASURED).toFixed(2).padStart(6)}  in all`);
  await store.close();
} finally {
  scratch.remove();
}
