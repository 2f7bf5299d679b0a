/**
 * readNodeBody reads a body two ways: off the stream's buffer when the parser already has all of
 * it (the usual case by the time a request is authenticated), or from the stream as it arrives.
 * Both must give the same text and the same errors, over real HTTP on loopback.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readNodeBody } from '../../adapters/http/requestParts.js';
import { GatehouseError } from '../../src/index.js';

const LIMIT = 1000;
let server: Server;
let port: number;
/** How the next request's body is read: once the request is complete, or at once. */
let mode: 'complete' | 'streaming' = 'complete';
const seen: { complete: boolean; text?: string; code?: string }[] = [];

async function readIn(req: IncomingMessage): Promise<{ complete: boolean; text?: string; code?: string }> {
  if (mode === 'complete') while (!req.complete) await new Promise((r) => setTimeout(r, 5));
  const complete = req.complete;
  try {
    return { complete, text: await readNodeBody(req, LIMIT) };
  } catch (error) {
    return { complete, code: error instanceof GatehouseError ? error.code : String(error) };
  }
}

beforeAll(async () => {
  server = createServer((req, res) => {
    void readIn(req).then((result) => {
      seen.push(result);
      res.writeHead(200, { connection: 'close' }).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as { port: number }).port;
});

afterAll(() => {
  server.close();
});

/** Sends a chunked POST whose chunks arrive `gapMs` apart; resolves with what the server read. */
async function post(chunks: Buffer[], gapMs = 0): Promise<(typeof seen)[number]> {
  const before = seen.length;
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write('POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n');
  for (const chunk of chunks) {
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    socket.write(`${chunk.length.toString(16)}\r\n`);
    socket.write(chunk);
    socket.write('\r\n');
  }
  socket.write('0\r\n\r\n');
  socket.resume();
  await once(socket, 'close');
  expect(seen.length).toBe(before + 1);
  return seen[before]!;
}

describe('readNodeBody', () => {
  for (const which of ['complete', 'streaming'] as const) {
    describe(which === 'complete' ? 'a body already received' : 'a body still arriving', () => {
      const gap = which === 'complete' ? 0 : 20;

      it('joins its chunks, a character split between two of them too', async () => {
        mode = which;
        const text = '{"note":"é€ and more"}';
        const bytes = Buffer.from(text);
        // The split falls inside the three bytes of '€'.
        const at = bytes.indexOf(Buffer.from('€')) + 1;
        const result = await post([bytes.subarray(0, at), bytes.subarray(at)], gap);
        expect(result).toEqual({ complete: which === 'complete', text });
      });

      it('refuses more than the limit', async () => {
        mode = which;
        const result = await post([Buffer.alloc(600, 0x61), Buffer.alloc(600, 0x61)], gap);
        expect(result).toEqual({ complete: which === 'complete', code: 'payload_too_large' });
      });

      it('refuses a body that is not UTF-8', async () => {
        mode = which;
        const result = await post([Buffer.from([0x7b, 0xff, 0xfe, 0x7d])], gap);
        expect(result).toEqual({ complete: which === 'complete', code: 'malformed_request' });
      });
    });
  }
});
