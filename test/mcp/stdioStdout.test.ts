/**
 * `gatehouse mcp` keeps stdout for the protocol whatever a dependency prints: the OpenTelemetry
 * SDK, asked for its diagnostics (`OTEL_LOG_LEVEL`), logs to the console while it is built.
 * Runs the built CLI (`npm test` builds first).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';

const CLI = join(import.meta.dirname, '../../dist/adapters/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-mcp-stdout-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('gatehouse mcp stdout', () => {
  it('carries only JSON-RPC with OpenTelemetry on and OTEL_LOG_LEVEL=debug; the diagnostics go to stderr', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp', '--database', join(dir, 'otel.db'), '--session', 's1', '--log-level', 'debug'],
      // A loopback port nothing listens on: exports fail at once, nothing leaves the machine.
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
        OTEL_LOG_LEVEL: 'debug',
      },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    // A stdout line that is not a JSON-RPC message reaches the client's onerror.
    const transportErrors: Error[] = [];
    const client = new Client({ name: 'gatehouse-stdout-test', version: '1.0.0' });
    client.onerror = (error) => transportErrors.push(error);
    await client.connect(transport);
    const gate = await client.callTool({ name: 'evaluate_gate', arguments: { action: 'deploy.staging' } });
    expect(gate.isError).toBeFalsy();
    await client.close();
    expect(transportErrors.map((e) => e.message)).toEqual([]);
    expect(stderr).toContain('OpenTelemetry: exporting over OTLP');
    // What the SDK said while it was built is in the log.
    expect(stderr).toContain('OTEL_METRICS_EXPORTER is empty');
  }, 30_000);
});
