// 3. GET /v1/history/events?session_id=…&limit=50 at 1,000,000 events vs at 10,000 events:
// the read is index-backed, so its p50 should not grow with the log (target: ratio ≤ 1.5).
// Both databases hold sessions of ~100 events interleaved over the whole log, and every request
// asks for a random session, so the big one cannot answer from a warm corner of its cache.
// Measured over HTTP (two server processes, autocannon, 10 connections, interleaved rounds) and
// in-process (`readHistory`, for the store alone), with both files in the OS page cache.

import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { startServer } from './lib/child.js';
import { load } from './lib/env.js';
import { ensureHistoryDb } from './lib/historyDb.js';
import { cannon, interleaveRounds } from './lib/loadgen.js';
import { compareInterleaved } from './lib/measure.js';

export const name = 'history';
export const title = '3. GET /v1/history/events (session, limit 50): 1,000,000 events vs 10,000';

const SMALL = 10_000;
const BIG = 1_000_000;

/** Reads a file once, sequentially, so that its pages are in the OS page cache. */
function warmPageCache(file) {
  const fd = openSync(file, 'r');
  const buffer = Buffer.allocUnsafe(8 * 2 ** 20);
  try {
    while (readSync(fd, buffer, 0, buffer.length, null) > 0);
  } finally {
    closeSync(fd);
  }
}

function randomSessions(count, sessions, seed) {
  let x = seed;
  const out = [];
  for (let i = 0; i < count; i += 1) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    out.push(`sess-${String(x % sessions).padStart(6, '0')}`);
  }
  return out;
}

export async function run({ quick }) {
  const notes = [];
  const log = (m) => console.log(`  ${m}`);
  // --quick never spends its minute generating a million events: it uses them if a full run left
  // them in bench/results/, and 100,000 otherwise.
  let bigCount = BIG;
  if (quick) {
    const { SQLITE_MIGRATIONS } = await load('adapters/sqlite/index.js');
    const schema = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1].version;
    const { RESULTS_DIR } = await import('./lib/env.js');
    if (!existsSync(`${RESULTS_DIR}/history-${BIG}-g1-s${schema}.json`)) bigCount = 100_000;
  }
  const small = await ensureHistoryDb(SMALL, { log });
  const big = await ensureHistoryDb(bigCount, { log });
  if (!big.reused)
    notes.push(
      `generated ${bigCount.toLocaleString('en')} events in ${big.seconds.toFixed(0)} s (reused by later runs)`,
    );
  if (bigCount !== BIG)
    notes.push(`--quick without a cached 1M database: measured at ${bigCount.toLocaleString('en')} events`);

  // A server that has been running has its database in the OS page cache; a file that was just
  // copied or generated elsewhere may not, and then this would measure the disk. Read both once.
  for (const db of [small, big]) warmPageCache(db.file);

  // In-process: the store and core alone.
  const core = await load('src/index.js');
  const { openSqliteStore } = await load('adapters/sqlite/index.js');
  const stores = [openSqliteStore({ filename: small.file }), openSqliteStore({ filename: big.file })];
  const [ghSmall, ghBig] = stores.map((store) => core.createGatehouse({ store }));
  const smallSessions = randomSessions(1000, small.sessions, 7);
  const bigSessions = randomSessions(1000, big.sessions, 7);
  let inProcess;
  try {
    const check = await ghBig.readHistory({ session_id: bigSessions[0], limit: 50 });
    if (check.events.length !== 50) throw new Error(`expected a full page, got ${check.events.length}`);
    inProcess = await compareInterleaved(
      {
        small: { op: (i) => ghSmall.readHistory({ session_id: smallSessions[i % 1000], limit: 50 }) },
        big: { op: (i) => ghBig.readHistory({ session_id: bigSessions[i % 1000], limit: 50 }) },
      },
      { rounds: quick ? 2 : 3, msPerRound: quick ? 600 : 1200 },
    );
  } finally {
    for (const s of stores) await s.close();
  }

  // Over HTTP: one server process per database.
  const servers = [];
  let http;
  let rss;
  try {
    const sSmall = await startServer({ mode: 'gatehouse', database: small.file, keySecret: small.key });
    servers.push(sSmall);
    const sBig = await startServer({ mode: 'gatehouse', database: big.file, keySecret: big.key });
    servers.push(sBig);
    const load_ = (server, sessions, seconds) => () =>
      cannon({
        url: server.url,
        connections: 10,
        seconds,
        headers: { authorization: `Bearer ${server.key}` },
        requests: sessions.map((s) => ({
          method: 'GET',
          path: `/v1/history/events?session_id=${s}&limit=50`,
        })),
      });
    await load_(sSmall, smallSessions, 1)();
    await load_(sBig, bigSessions, 1)();
    const seconds = quick ? 3 : 5;
    http = await interleaveRounds(
      { small: load_(sSmall, smallSessions, seconds), big: load_(sBig, bigSessions, seconds) },
      quick ? 1 : 2,
    );
    rss = {
      small: sSmall.rssBytes(),
      big: sBig.rssBytes(),
      small_anon: sSmall.rssBytes('RssAnon'),
      big_anon: sBig.rssBytes('RssAnon'),
    };
  } finally {
    for (const s of servers) await s.stop();
  }
  for (const [n, r] of Object.entries(http)) {
    if (r.non2xx > 0 || r.errors > 0)
      throw new Error(`${n}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
  }
  const label = (n) => `${n.toLocaleString('en')} events`;
  const ratioHttp = http.big.p50_us / http.small.p50_us;
  const ratioIn = inProcess.big.p50_us / inProcess.small.p50_us;
  const mib = (b) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  notes.push(
    `server RSS after the runs: ${mib(rss.big)} at ${label(big.events)} (${mib(rss.big_anon)} anonymous), ` +
      `${mib(rss.small)} at ${label(SMALL)} (${mib(rss.small_anon)} anonymous)`,
  );
  return {
    tables: [
      {
        title: `${title} — HTTP, 10 connections (ratio: p50 over the 10,000-event p50)`,
        baselineLabel: 'p50 at 10k',
        rows: [
          { name: 'http_10k', label: `GET, ${label(SMALL)} (baseline)`, ...http.small, ratio: 1 },
          { name: 'http_big', label: `GET, ${label(big.events)}`, ...http.big, ratio: ratioHttp },
        ],
      },
      {
        title: `${title} — in-process readHistory() (ratio: p50 over the 10,000-event p50)`,
        baselineLabel: 'p50 at 10k',
        rows: [
          {
            name: 'inproc_10k',
            label: `readHistory, ${label(SMALL)} (baseline)`,
            ...inProcess.small,
            ratio: 1,
          },
          {
            name: 'inproc_big',
            label: `readHistory, ${label(big.events)}`,
            ...inProcess.big,
            ratio: ratioIn,
          },
        ],
      },
    ],
    targets: [
      {
        what: `HTTP p50 at ${label(big.events)} ÷ p50 at ${label(SMALL)}`,
        value: ratioHttp,
        op: '<=',
        target: 1.5,
      },
    ],
    notes,
    extra: { server_rss_bytes: rss, events: { small: SMALL, big: big.events } },
  };
}
