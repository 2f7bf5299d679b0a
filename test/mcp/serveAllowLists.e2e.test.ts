/**
 * `gatehouse serve`'s /mcp Host and Origin allow-lists: the flags and environment variables reach
 * the handler, and a wrong entry stops serve with the flag's name.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { type ServeProcess, startServe, stopServe } from '../reliability/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-mcp-hosts-'));
let n = 0;

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function withServe(
  args: string[],
  env: Record<string, string>,
  use: (serve: ServeProcess) => Promise<void>,
): Promise<void> {
  n += 1;
  const serve = await startServe(['--database', join(dir, `${n}.db`), ...args], { cwd: dir, env });
  try {
    await use(serve);
  } finally {
    await stopServe(serve);
  }
}

/** The status of an `initialize` POST to /mcp with these headers. */
async function status(serve: ServeProcess, headers: Record<string, string>): Promise<number> {
  const res = await request(`${serve.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${serve.key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });
  await res.body.dump();
  return res.statusCode;
}

describe('gatehouse serve --mcp-allowed-hosts / --mcp-allowed-origins', () => {
  it('by default (loopback bind) accepts loopback names and refuses others', async () => {
    await withServe([], {}, async (serve) => {
      expect(await status(serve, {})).toBe(200);
      expect(await status(serve, { host: 'localhost' })).toBe(200);
      expect(await status(serve, { host: 'evil.example.com' })).toBe(403);
      expect(await status(serve, { origin: 'http://evil.example.com' })).toBe(403);
    });
  });

  it('the flag replaces the Host list; the env variable sets the Origin list', async () => {
    await withServe(
      ['--mcp-allowed-hosts', 'mcp.example.test, 127.0.0.1'],
      { GATEHOUSE_MCP_ALLOWED_ORIGINS: 'https://app.example.test' },
      async (serve) => {
        expect(await status(serve, { host: 'mcp.example.test' })).toBe(200);
        expect(await status(serve, {})).toBe(200);
        expect(await status(serve, { host: 'localhost' })).toBe(403);
        expect(await status(serve, { origin: 'https://app.example.test' })).toBe(200);
        expect(await status(serve, { origin: 'https://mcp.example.test' })).toBe(403);
      },
    );
  });

  it('the env variable sets the Host list when no flag is given', async () => {
    await withServe([], { GATEHOUSE_MCP_ALLOWED_HOSTS: 'mcp.example.test' }, async (serve) => {
      expect(await status(serve, { host: 'mcp.example.test' })).toBe(200);
      expect(await status(serve, {})).toBe(403);
    });
  });

  it('a wrong entry stops serve with the flag named', async () => {
    await expect(
      startServe(['--database', join(dir, 'bad.db'), '--mcp-allowed-hosts', 'http://x.test/'], { cwd: dir }),
    ).rejects.toThrow(/serve exited 1:[\s\S]*--mcp-allowed-hosts: Not a host name/);
    await expect(
      startServe(['--database', join(dir, 'bad.db')], {
        cwd: dir,
        env: { GATEHOUSE_MCP_ALLOWED_ORIGINS: 'app.example.test' },
      }),
    ).rejects.toThrow(/--mcp-allowed-origins: Not an origin/);
  });
});
