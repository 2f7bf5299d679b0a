/**
 * The delivery POST without `request()`: what it sends, what it reads back, and how it ends
 * (body read to its end, a body too large, an abort before and after the headers).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { type PostAbort, postDelivery } from '../../../adapters/webhooks/postDelivery.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function serve(handler: (req: IncomingMessage, body: string, res: ServerResponse) => void) {
  const connections = { count: 0 };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => handler(req, body, res));
  });
  server.on('connection', () => {
    connections.count += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const agent = new Agent({ keepAliveTimeout: 4_000 });
  cleanups.push(async () => {
    await agent.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook?x=1`, agent, connections };
}

const options = (body: string) => ({
  body,
  headers: { 'content-type': 'application/json', 'webhook-id': 'evt_1' },
  headersTimeout: 5_000,
  bodyTimeout: 5_000,
});

describe('postDelivery', () => {
  it('POSTs the body and headers to the path with its query, reusing connections as request() does', async () => {
    const seen: Array<{ method?: string; url?: string; id?: string; body: string }> = [];
    const { url, agent, connections } = await serve((req, body, res) => {
      seen.push({ method: req.method, url: req.url, id: req.headers['webhook-id'] as string, body });
      res.writeHead(200, { 'retry-after': '7' });
      res.end('a body nobody reads');
    });
    const first = await postDelivery(agent, url, options('{"a":1}'));
    const second = await postDelivery(agent, url, options('{"a":2}'));
    for (let i = 0; i < 5; i += 1) await postDelivery(agent, url, options('{}'));
    const ours = connections.count;
    const other = await serve((_req, _body, res) => {
      res.writeHead(200);
      res.end('a body nobody reads');
    });
    for (let i = 0; i < 7; i += 1) {
      const res = await request(other.url, { method: 'POST', body: '{}', dispatcher: other.agent });
      await res.body.dump();
    }
    expect(ours).toBe(other.connections.count);
    expect(ours).toBeLessThan(7);
    expect(first).toEqual({ statusCode: 200, retryAfter: '7' });
    expect(second.statusCode).toBe(200);
    expect(seen.slice(0, 2)).toEqual([
      { method: 'POST', url: '/hook?x=1', id: 'evt_1', body: '{"a":1}' },
      { method: 'POST', url: '/hook?x=1', id: 'evt_1', body: '{"a":2}' },
    ]);
  });

  it('keeps the status of a response whose body is too large, and closes that connection', async () => {
    const { url, agent, connections } = await serve((_req, _body, res) => {
      res.writeHead(503);
      res.write(Buffer.alloc(200 * 1024, 1));
      // Never ended: without the limit this would wait for the body timeout.
    });
    for (let i = 0; i < 3; i += 1) {
      expect(await postDelivery(agent, url, options('{}'))).toEqual({
        statusCode: 503,
        retryAfter: undefined,
      });
    }
    // Each connection was closed rather than read on (undici may also have opened a spare).
    expect(connections.count).toBeGreaterThanOrEqual(3);
  });

  it('fails with the abort reason while no response headers are in', async () => {
    const { url, agent } = await serve(() => {
      // Never answers.
    });
    let handle: PostAbort | undefined;
    const sent = postDelivery(agent, url, options('{}'), (h) => {
      handle = h;
    });
    setTimeout(() => handle!.abort(new DOMException('too late', 'TimeoutError')), 50);
    await expect(sent).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it('aborted before it reaches a connection, it is never answered', async () => {
    const { url, agent } = await serve((_req, _body, res) => {
      res.writeHead(204);
      res.end();
    });
    const sent = postDelivery(agent, url, options('{}'), (h) => h.abort(new Error('closing')));
    await expect(sent).rejects.toThrow('closing');
  });

  it('an abort after the headers keeps the response', async () => {
    let handle: PostAbort | undefined;
    const { url, agent } = await serve((_req, _body, res) => {
      res.writeHead(202);
      res.write('partial');
      setTimeout(() => handle!.abort(new Error('deadline')), 50);
    });
    const sent = postDelivery(agent, url, options('{}'), (h) => {
      handle = h;
    });
    expect((await sent).statusCode).toBe(202);
  });
});
