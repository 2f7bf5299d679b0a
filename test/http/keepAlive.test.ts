/**
 * A pooled client keeps its connection across errors: after a 422 and a 413 on one keep-alive
 * connection the next request still gets its answer (issue 13.2: it used to get none).
 */
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp, type RunningServer, startHttpServer } from '../../adapters/http/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  createApiKey,
  createGatehouse,
  createIdGenerator,
  type Store,
  systemRandomBytes,
} from '../../src/index.js';

let store: Store;
let server: RunningServer;
let pool: Pool;
let headers: Record<string, string>;

beforeAll(async () => {
  store = openSqliteStore();
  const gatehouse = createGatehouse({ store });
  server = await startHttpServer(createHttpApp({ gatehouse, rateLimit: false }).fetch, { port: 0 });
  const { secret } = await createApiKey(
    store,
    { ids: createIdGenerator(), randomBytes: systemRandomBytes, now: new Date() },
    { scopes: ['admin'] },
  );
  headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  // One connection: every request below must travel on (or replace) the same pooled socket.
  pool = new Pool(server.url, { connections: 1, pipelining: 1 });
});

afterAll(async () => {
  await pool?.close();
  await server?.close(0);
  await store?.close();
});

async function post(body: string | Buffer) {
  const res = await pool.request({ method: 'POST', path: '/v1/gates/evaluate', headers, body });
  return { status: res.statusCode, headers: res.headers, json: (await res.body.json()) as any };
}

describe('one keep-alive connection through errors', () => {
  it('422, then a ~200 KB body (413), then a normal request: every one is answered', async () => {
    const invalid = await post(JSON.stringify({ session_id: 's1' }));
    expect(invalid.status).toBe(422);

    const big = JSON.stringify({ session_id: 's1', action: 'a.b', params: { x: 'y'.repeat(200_000) } });
    const tooLarge = await post(big);
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.json.code).toBe('payload_too_large');

    const next = await post(JSON.stringify({ session_id: 's1', action: 'a.b' }));
    expect(next.status).toBe(200);
    expect(next.json.verdict).toBe('Allow');
  });

  it('a body that is not UTF-8 is a 400, not a value with U+FFFD in it', async () => {
    const body = Buffer.concat([
      Buffer.from('{"session_id":"s'),
      Buffer.from([0xff]),
      Buffer.from('","action":"a.b"}'),
    ]);
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({
      code: 'malformed_request',
      detail: 'The request body is not valid UTF-8.',
    });
  });

  it('every answer says its length (no chunked framing): 200, 422, 413, 401, /healthz', async () => {
    const answers = [
      await pool.request({
        method: 'POST',
        path: '/v1/gates/evaluate',
        headers,
        body: '{"session_id":"s1","action":"a.b"}',
      }),
      await pool.request({
        method: 'POST',
        path: '/v1/gates/evaluate',
        headers,
        body: '{"session_id":"s1"}',
      }),
      await pool.request({ method: 'POST', path: '/v1/gates/evaluate', headers, body: 'x'.repeat(200_000) }),
      await pool.request({ method: 'GET', path: '/v1/me' }),
      await pool.request({ method: 'GET', path: '/healthz' }),
    ];
    expect(answers.map((a) => a.statusCode)).toEqual([200, 422, 413, 401, 200]);
    for (const answer of answers) {
      const body = Buffer.from(await answer.body.arrayBuffer());
      expect(answer.headers['transfer-encoding']).toBeUndefined();
      expect(Number(answer.headers['content-length'])).toBe(body.length);
      expect(body.length).toBeGreaterThan(0);
    }
  });

  it('repeats: alternating oversized and normal requests never lose an answer', async () => {
    const big = JSON.stringify({ session_id: 's1', action: 'a.b', params: { x: 'y'.repeat(200_000) } });
    for (let i = 0; i < 5; i++) {
      expect((await post(big)).status).toBe(413);
      expect((await post(JSON.stringify({ session_id: 's1', action: 'a.b' }))).status).toBe(200);
    }
  });
});
