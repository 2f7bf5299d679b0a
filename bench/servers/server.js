// A benchmark server in its own process (forked by bench/lib/child.js, never run by hand).
// argv[2] is a JSON options object:
//   { mode: 'gatehouse', database, policyYaml?, seed?, keySecret?, mcp? }  the /v1 service as
//       `gatehouse serve` composes it (createHttpApp + startHttpServer, SQLite file, pino at warn,
//       default metrics); a fresh API key unless keySecret is given; seed = { items } recorded
//       first; mcp mounts /mcp.
//   { mode: 'bare', body }  node:http answering `body` (JSON text) to every request, after
//       reading and parsing the request body as the real server does.
//   { mode: 'receiver' }  a webhook receiver: 204 to every POST, noting when each event (by its
//       decision) arrived; 'report' sends them back.
// Sends { ready, url, key, pid } to the parent over IPC; stops on 'stop' or when the parent goes.

import { createServer } from 'node:http';
import { load } from '../lib/env.js';

const options = JSON.parse(process.argv[2]);
const lifetime = setTimeout(() => process.exit(3), options.maxLifetimeMs ?? 15 * 60_000);
lifetime.unref();
process.on('disconnect', () => process.exit(0));

async function startBare() {
  const body = options.body;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (chunks.length > 0) JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    key: null,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A webhook receiver: 204 for everything, remembering when each event arrived (by decision). */
async function startReceiver() {
  const arrivals = {};
  let count = 0;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = performance.timeOrigin + performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      count += 1;
      const decisionId = body?.data?.decision_id;
      if (typeof decisionId === 'string') arrivals[decisionId] = at;
      res.writeHead(204);
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    key: null,
    report: () => ({ count, arrivals }),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function startGatehouse() {
  const core = await load('src/index.js');
  const { openSqliteStore } = await load('adapters/sqlite/index.js');
  const http = await load('adapters/http/index.js');
  const { default: pino } = await import('pino');
  const log = pino({ level: 'warn' }, pino.destination(2));
  const store = openSqliteStore({ filename: options.database });
  const policy = options.policyYaml ? core.compilePolicy(options.policyYaml) : core.defaultPolicy();
  const gatehouse = core.createGatehouse({ store, policy });
  if (options.seed) {
    for (const item of options.seed.items) {
      await gatehouse.recordState(item, {
        allowedSources: ['system', 'user_input', 'tool_output', 'retrieval', 'agent_inference'],
      });
    }
  }
  let key = options.keySecret ?? null;
  if (!key) {
    const created = await core.createApiKey(
      store,
      { ids: core.createIdGenerator(), randomBytes: core.systemRandomBytes, now: new Date() },
      { name: 'bench', scopes: ['admin'] },
    );
    key = created.secret;
  }
  let mcp;
  if (options.mcp) {
    const { createMcpHttpHandler } = await load('adapters/mcp/index.js');
    mcp = createMcpHttpHandler({ gatehouse, logger: log });
  }
  const app = http.createHttpApp({
    gatehouse,
    logger: log,
    // The per-key limit (100/s by default) would answer most of a load test with 429: the
    // limiter still runs on every request, with a rate no benchmark reaches.
    rateLimit: { ratePerSecond: 1e9 },
    metrics: http.createMetrics({ defaults: true }),
    ...(mcp ? { mcp } : {}),
  });
  const server = await http.startHttpServer(app.fetch, { host: '127.0.0.1', port: 0 });
  return {
    url: server.url,
    key,
    close: async () => {
      await server.close(1000);
      await store.close();
    },
  };
}

const running =
  options.mode === 'bare'
    ? await startBare()
    : options.mode === 'receiver'
      ? await startReceiver()
      : await startGatehouse();
process.on('message', async (m) => {
  if (m === 'report') process.send({ report: running.report?.() ?? null });
  if (m === 'stop') {
    await running.close().catch(() => undefined);
    process.exit(0);
  }
});
process.send({ ready: true, url: running.url, key: running.key, pid: process.pid });
