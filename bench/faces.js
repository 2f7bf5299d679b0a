// 5. The agent faces, per call: MCP `evaluate_gate` over Streamable HTTP (SDK client → /mcp of a
// real server process) against the same decision through POST /v1/gates/evaluate, and a
// LangChain tool call gated by GatehouseCallbackHandler (in-process core, SQLite file) against
// the same tool call ungated. Sequential calls: this is about the cost of one call.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from './lib/child.js';
import { DIST_DIR, load, scratchDir } from './lib/env.js';
import { compareInterleaved } from './lib/measure.js';
import { BENCH_POLICY_YAML, evaluateRequests, OWNER_SOURCES, sessionItems } from './lib/workload.js';

export const name = 'faces';
export const title =
  '5. MCP evaluate_gate (Streamable HTTP) and a LangChain gated tool call: overhead per call';

const fmt = (us) => `${us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(0)} µs`}`;

/**
 * The MCP SDK client (1.x) adds an abort listener to one signal per request and lets go of them
 * only at a GC, so Node prints a MaxListenersExceededWarning on every call past 1,500: a client
 * matter, not the server's. Those are dropped while the MCP runs; other warnings still print.
 */
function quietListenerWarnings() {
  const handlers = process.listeners('warning');
  process.removeAllListeners('warning');
  const filter = (warning) => {
    if (warning.name !== 'MaxListenersExceededWarning') for (const h of handlers) h(warning);
  };
  process.on('warning', filter);
  return () => {
    process.off('warning', filter);
    for (const h of handlers) process.on('warning', h);
  };
}

async function mcpVsRest({ quick }) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import(
    '@modelcontextprotocol/sdk/client/streamableHttp.js'
  );
  const scratch = scratchDir('mcp');
  const server = await startServer({
    mode: 'gatehouse',
    database: `${scratch.dir}/gatehouse.db`,
    policyYaml: BENCH_POLICY_YAML,
    seed: { items: sessionItems('bench') },
    mcp: true,
  });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${server.key}` } },
  });
  const client = new Client({ name: 'gatehouse-bench', version: '1.0.0' });
  const restoreWarnings = quietListenerWarnings();
  try {
    await client.connect(transport);
    const requests = evaluateRequests('bench');
    const headers = { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' };
    const bodies = requests.map((r) => JSON.stringify(r));
    const first = await client.callTool({ name: 'evaluate_gate', arguments: requests[0] });
    if (first.isError) throw new Error(`evaluate_gate failed: ${JSON.stringify(first.content)}`);
    const results = await compareInterleaved(
      {
        rest: {
          op: async (i) => {
            const res = await fetch(`${server.url}/v1/gates/evaluate`, {
              method: 'POST',
              headers,
              body: bodies[i % 10],
            });
            if (res.status !== 200) throw new Error(`REST evaluate answered ${res.status}`);
            await res.text();
          },
        },
        mcp: {
          op: async (i) => {
            const r = await client.callTool({ name: 'evaluate_gate', arguments: requests[i % 10] });
            if (r.isError) throw new Error('evaluate_gate failed');
          },
        },
      },
      { rounds: quick ? 2 : 3, msPerRound: quick ? 800 : 1500 },
    );
    return results;
  } finally {
    restoreWarnings();
    await client.close().catch(() => undefined);
    await server.stop();
    scratch.remove();
  }
}

async function langchainGatedVsUngated({ quick }) {
  const { tool } = await import('@langchain/core/tools');
  const { z } = await import('zod');
  const core = await load('src/index.js');
  const { openSqliteStore } = await load('adapters/sqlite/index.js');
  const { GatehouseCallbackHandler, inProcessBackend } = await load('adapters/langchain/index.js');
  const scratch = scratchDir('langchain');
  const store = openSqliteStore({ filename: `${scratch.dir}/gatehouse.db` });
  try {
    const gatehouse = core.createGatehouse({ store, policy: core.compilePolicy(BENCH_POLICY_YAML) });
    for (const item of sessionItems('bench'))
      await gatehouse.recordState(item, { allowedSources: OWNER_SOURCES });
    let moved = 0;
    const transfer = tool(
      async ({ amount }) => {
        moved += amount;
        return `sent ${amount}`;
      },
      {
        name: 'payments.transfer',
        description: 'Transfers money.',
        schema: z.object({ amount: z.number(), currency: z.string(), to: z.string() }),
      },
    );
    const handler = new GatehouseCallbackHandler({
      backend: inProcessBackend(gatehouse),
      sessionId: 'bench',
    });
    const args = { amount: 1200, currency: 'EUR', to: 'DE89370400440532013000' };
    await transfer.invoke(args, { callbacks: [handler] });
    // The outcome is written while the caller goes on (builds before that awaited it: no flush).
    await handler.flush?.();
    const page = await gatehouse.readHistory({ session_id: 'bench', limit: 2 });
    if (page.events[0]?.type !== 'action_outcome' || page.events[1]?.type !== 'gate_evaluation') {
      throw new Error('the gated call did not record a decision and an outcome');
    }
    const results = await compareInterleaved(
      {
        ungated: { op: () => transfer.invoke(args) },
        // What an agent's tool call waits for: between two calls the agent waits for its model,
        // and the outcome of the last call is written meanwhile (flush stands in for that wait).
        gated: {
          op: () => transfer.invoke(args, { callbacks: [handler] }),
          between: handler.flush ? () => handler.flush() : undefined,
        },
        // Calls back to back: the outcome's write still takes its CPU before the next decision.
        gated_back_to_back: { op: () => transfer.invoke(args, { callbacks: [handler] }) },
      },
      { rounds: quick ? 2 : 3, msPerRound: quick ? 800 : 1500 },
    );
    if (moved === 0) throw new Error('the tool never ran');
    await handler.flush?.();
    return results;
  } finally {
    await store.close();
    scratch.remove();
  }
}

export async function run({ quick }) {
  const notes = [];
  const tables = [];
  const extra = {};
  const has = (p) => existsSync(join(DIST_DIR, p));
  if (has('adapters/mcp/index.js')) {
    const r = await mcpVsRest({ quick });
    const overhead = r.mcp.mean_us - r.rest.mean_us;
    tables.push({
      title: `${title} — MCP over Streamable HTTP vs REST, one call at a time`,
      rows: [
        { name: 'rest', label: 'POST /v1/gates/evaluate (baseline)', ...r.rest, ratio: 1 },
        {
          name: 'mcp',
          label: 'MCP tools/call evaluate_gate',
          ...r.mcp,
          ratio: r.mcp.ops_per_s / r.rest.ops_per_s,
        },
      ],
    });
    const overheadP50 = r.mcp.p50_us - r.rest.p50_us;
    notes.push(
      `MCP overhead per call: ${fmt(overhead)} (mean ${fmt(r.mcp.mean_us)} vs ${fmt(r.rest.mean_us)}); p50 ${fmt(overheadP50)}`,
    );
    extra.mcp_overhead_us = overhead;
    extra.mcp_overhead_p50_us = overheadP50;
  } else {
    notes.push('adapters/mcp is not built yet: MCP skipped');
  }
  if (has('adapters/langchain/index.js')) {
    const r = await langchainGatedVsUngated({ quick });
    const overhead = r.gated.mean_us - r.ungated.mean_us;
    tables.push({
      title: `${title} — LangChain tool.invoke, gated (callback handler, in-process, SQLite file) vs ungated`,
      rows: [
        { name: 'ungated', label: 'tool.invoke, ungated (baseline)', ...r.ungated, ratio: 1 },
        {
          name: 'gated',
          label: 'tool.invoke + GatehouseCallbackHandler (outcome written between calls)',
          ...r.gated,
          ratio: r.ungated.mean_us / r.gated.mean_us,
        },
        {
          name: 'gated_back_to_back',
          label: '… calls back to back (outcome write in the way)',
          ...r.gated_back_to_back,
          ratio: r.ungated.mean_us / r.gated_back_to_back.mean_us,
        },
      ],
    });
    const backToBack = r.gated_back_to_back.mean_us - r.ungated.mean_us;
    notes.push(
      `LangChain gate overhead per call: ${fmt(overhead)} (what the tool call waits for: the decision; the outcome is written between calls), ${fmt(backToBack)} back to back`,
    );
    extra.langchain_overhead_us = overhead;
    extra.langchain_back_to_back_overhead_us = backToBack;
  } else {
    notes.push('adapters/langchain is not built yet: LangChain skipped');
  }
  if (tables.length === 0) return { skipped: notes.join('; ') };
  const targets =
    extra.mcp_overhead_us === undefined
      ? []
      : [
          {
            what: 'MCP evaluate_gate overhead per call over POST /v1/gates/evaluate (µs)',
            value: extra.mcp_overhead_us,
            op: '<=',
            target: 500,
          },
        ];
  return { tables, targets, notes, extra };
}
