/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, server scenarios)
 * against `/mcp` of a real `gatehouse serve` on loopback.
 *
 * Auth: `/mcp` requires `Authorization: Bearer`, and the suite's CLI has no option to send a
 * header. Rather than start serve in a weaker mode that users never run, the suite talks to a
 * small loopback proxy that adds the bootstrap key and forwards everything else as sent: method,
 * path, body and, for `dns-rebinding-protection`, the hostile `Host` and `Origin` untouched. So
 * the scenarios exercise the real auth → Host/Origin check → MCP path.
 *
 * The suite needs Node >= 22: it runs under this Node when that is >= 22, else under the binary
 * named by GATEHOUSE_TEST_NODE22_BIN; without one the test is skipped with the reason.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root, type ServeProcess, startServe, stopServe } from '../reliability/fixtures.js';

const run = promisify(execFile);
const conformanceCli = join(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

/**
 * Scenarios that test what Gatehouse declares (tools and resource templates, stateless Streamable
 * HTTP, plain JSON answers): each must pass.
 */
const APPLICABLE = [
  'server-initialize',
  'ping',
  'tools-list',
  'resources-list',
  'dns-rebinding-protection',
] as const;

/** Every other server scenario of the suite, and why it does not apply. */
const NOT_APPLICABLE: Record<string, string> = {
  'logging-set-level': 'no logging capability declared',
  'completion-complete': 'no completions capability declared',
  'tools-call-simple-text': "calls the suite's fixture tool test_simple_text; Gatehouse has its own tools",
  'tools-call-image': 'fixture tool returning image content',
  'tools-call-audio': 'fixture tool returning audio content',
  'tools-call-embedded-resource': 'fixture tool returning an embedded resource',
  'tools-call-mixed-content': 'fixture tool returning mixed content',
  'tools-call-with-logging': 'fixture tool sending log notifications (no logging capability)',
  'tools-call-error': "fixture tool test_error_handling (Gatehouse's isError results are tested in test/mcp)",
  'tools-call-with-progress': 'fixture tool sending progress notifications',
  'tools-call-sampling': 'sampling: Gatehouse never asks the client for a completion',
  'tools-call-elicitation': 'elicitation: Gatehouse never asks the user for input',
  'elicitation-sep1034-defaults': 'elicitation',
  'elicitation-sep1330-enums': 'elicitation',
  'json-schema-2020-12': 'fixture tool with a JSON Schema 2020-12 input',
  'server-sse-polling': 'SSE streams: /mcp is stateless and answers plain JSON',
  'server-sse-multiple-streams': 'SSE streams and sessions: /mcp is stateless and answers plain JSON',
  'resources-read-text': "fixture resource test://static-text (Gatehouse's resources are read in test/mcp)",
  'resources-read-binary': 'fixture resource test://static-binary',
  'resources-templates-read': 'fixture template test://template/{id}/data',
  'resources-subscribe': 'no resource subscriptions declared',
  'resources-unsubscribe': 'no resource subscriptions declared',
  'prompts-list': 'no prompts declared',
  'prompts-get-simple': 'no prompts declared',
  'prompts-get-with-args': 'no prompts declared',
  'prompts-get-embedded-resource': 'no prompts declared',
  'prompts-get-with-image': 'no prompts declared',
};

/** A Node >= 22 to run the suite with, or why there is none. */
function findNode22(): { bin: string } | { skip: string } {
  if (Number(process.versions.node.split('.')[0]) >= 22) return { bin: process.execPath };
  const bin = process.env['GATEHOUSE_TEST_NODE22_BIN'];
  if (bin && existsSync(bin)) return { bin };
  return {
    skip: `the MCP conformance suite needs Node >= 22; this is ${process.version} and GATEHOUSE_TEST_NODE22_BIN ${bin ? `(${bin}) does not exist` : 'is unset'}`,
  };
}

/** A loopback proxy to `target` that adds the bearer key and changes nothing else. */
async function startAuthProxy(target: string, key: string): Promise<{ url: string; server: Server }> {
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const forwarded = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${key}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.writeHead(502).end());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

const node22 = findNode22();
if ('skip' in node22) process.stderr.write(`conformance.e2e: skipped: ${node22.skip}\n`);

describe.skipIf('skip' in node22)('MCP conformance suite against gatehouse serve', () => {
  const bin = 'bin' in node22 ? node22.bin : '';
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-conformance-'));
  let serve: ServeProcess;
  let proxy: { url: string; server: Server };

  beforeAll(async () => {
    serve = await startServe(['--database', join(dir, 'g.db')], { cwd: dir });
    proxy = await startAuthProxy(serve.url, serve.key!);
  });
  afterAll(async () => {
    proxy?.server.closeAllConnections();
    proxy?.server.close();
    if (serve) await stopServe(serve);
    rmSync(dir, { recursive: true, force: true });
  });

  it('every server scenario of the suite is classified as applicable or not', async () => {
    const { stdout } = await run(bin, [conformanceCli, 'list', '--server'], { cwd: dir });
    const listed = [...stdout.matchAll(/^\s*-\s+([a-z0-9-]+)/gm)].map((m) => m[1]!);
    expect(listed.length).toBeGreaterThan(0);
    // A new scenario in a newer suite fails here until it is put in one of the two lists.
    expect(listed.sort()).toEqual([...APPLICABLE, ...Object.keys(NOT_APPLICABLE)].sort());
  });

  it.each(APPLICABLE)('%s passes', async (scenario) => {
    const out = join(dir, scenario);
    const result = await run(
      bin,
      [conformanceCli, 'server', '--url', `${proxy.url}/mcp`, '--scenario', scenario, '-o', out],
      { cwd: dir },
    ).catch((error: { code?: number; stdout?: string; stderr?: string }) => error);
    const checks: Check[] = readdirSync(out).flatMap((run) =>
      JSON.parse(readFileSync(join(out, run, 'checks.json'), 'utf8')),
    );
    const failed = checks.filter((c) => c.status !== 'SUCCESS');
    expect(failed, JSON.stringify(failed, null, 2)).toEqual([]);
    expect(checks.length).toBeGreaterThan(0);
    expect((result as { code?: number }).code ?? 0, JSON.stringify(result)).toBe(0);
  });
});
