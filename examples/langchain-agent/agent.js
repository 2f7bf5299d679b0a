// A LangChain.js agent whose tool calls are gated by Gatehouse. Self-checking: exits 1 when the
// over-budget transfer was not blocked.
//
//   npm run build && node examples/langchain-agent/agent.js
//
// Environment (all optional):
//   EXAMPLE_BUDGET=5000               the budget the user states (try 20000: nothing is blocked, exit 1)
//   EXAMPLE_MODEL=openai:gpt-4.1-mini a real model instead of the scripted fake one
//                                     (needs `npm i @langchain/openai` and OPENAI_API_KEY)
//   GATEHOUSE_URL, GATEHOUSE_API_KEY  gate through a running `gatehouse serve` instead of in-process
//                                     (the key must be allowed to write the user_input source)
import { readFileSync } from 'node:fs';
import { AIMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { tool } from '@langchain/core/tools';
import { createAgent } from 'langchain';
import { z } from 'zod';
import { createGatehouseClient } from '../../dist/adapters/client/index.js';
import { createRecordStateTool, gatehouseMiddleware } from '../../dist/adapters/langchain/index.js';
import { openSqliteStore } from '../../dist/adapters/sqlite/index.js';
import { compilePolicy, createGatehouse } from '../../dist/src/index.js';

// The policy lives in examples/policies/ with its tests (`gatehouse policy test examples/policies/transfer-money.yaml`).
const POLICY = readFileSync(new URL('../policies/transfer-money.yaml', import.meta.url), 'utf8');

const SESSION = `example-${Date.now()}`;
const BUDGET = process.env.EXAMPLE_BUDGET ?? '5000';

// In-process by default; the /v1 client when a server is given. Both are a GateBackend.
const remote = process.env.GATEHOUSE_URL;
const gatehouse = remote
  ? createGatehouseClient({ baseUrl: remote, apiKey: process.env.GATEHOUSE_API_KEY ?? '' })
  : createGatehouse({ store: openSqliteStore(), policy: compilePolicy(POLICY) });

// The user states the budget. The agent could not: its record_state tool writes as agent_inference.
await gatehouse.recordState({
  session_id: SESSION,
  key: 'budget.limit',
  value: BUDGET,
  type: 'fact',
  source: 'user_input',
});

const transfers = [];
const transferMoney = tool(
  async ({ amount, to }) => {
    transfers.push(amount);
    return `Sent ${amount} EUR to ${to}.`;
  },
  {
    name: 'transfer_money',
    description: 'Transfers an amount in EUR to a recipient.',
    schema: z.object({ amount: z.number().positive(), to: z.string() }),
  },
);

// The scripted model tries 9000, reads the block, then pays 300.
const model =
  process.env.EXAMPLE_MODEL ??
  fakeModel()
    .respondWithTools([{ name: 'transfer_money', args: { amount: 9000, to: 'Acme Ltd' }, id: 'call_1' }])
    .respondWithTools([{ name: 'transfer_money', args: { amount: 300, to: 'Acme Ltd' }, id: 'call_2' }])
    .respond(
      new AIMessage('The 9000 EUR transfer exceeds the budget, so I sent the 300 EUR deposit instead.'),
    );

const gate = gatehouseMiddleware({
  backend: gatehouse,
  onWarn: (decision) => console.log(`  warn: ${decision.reason}`),
});
const agent = createAgent({
  model,
  tools: [transferMoney, createRecordStateTool({ backend: gatehouse })],
  middleware: [gate],
  systemPrompt:
    'You pay invoices. If a payment is blocked, do not retry it; pay the 300 EUR deposit instead.',
});

const result = await agent.invoke(
  {
    messages: [
      { role: 'user', content: 'Pay Acme Ltd the 9000 EUR invoice, or the 300 EUR deposit if you cannot.' },
    ],
  },
  { configurable: { thread_id: SESSION } },
);

console.log(`Conversation (session ${SESSION}, budget ${BUDGET}):`);
for (const message of result.messages) {
  const calls = (message.tool_calls ?? []).map((c) => `${c.name}(${JSON.stringify(c.args)})`).join(', ');
  const text = typeof message.content === 'string' ? message.content : JSON.stringify(message.content);
  console.log(`  ${message.getType().padEnd(5)} ${calls || text}`);
}

// The outcomes are written while the agent goes on; wait for the last ones before reading them.
await gate.flush();
const { events } = await gatehouse.readHistory({ session_id: SESSION, order: 'asc', limit: 100 });
console.log('\nHistory trail:');
for (const event of events) {
  const d = event.data;
  const what =
    event.type === 'gate_evaluation'
      ? `${d.action} ${JSON.stringify(d.params)} -> ${d.verdict}: ${d.reason} [${d.decision_id}]`
      : event.type === 'action_outcome'
        ? `${d.action} ${d.outcome} [${d.decision_id}]`
        : `${d.key} = ${d.value} (${d.source})`;
  console.log(`  #${event.seq} ${event.type.padEnd(15)} ${what}`);
}
const chain = await gatehouse.verifyHistory();
console.log(
  `\nHash chain: ${chain.ok ? 'intact' : `BROKEN at ${chain.first_bad_seq}`} (${chain.checked} events)`,
);

const blocked = events.some((e) => e.type === 'gate_evaluation' && e.data.verdict === 'Block');
const overBudgetRan = transfers.some((amount) => amount > Number(BUDGET));
if (!blocked || overBudgetRan || !chain.ok) {
  console.error('\nSELF-CHECK FAILED: the over-budget transfer was not blocked.');
  process.exitCode = 1;
} else {
  console.log('\nSelf-check passed: the over-budget transfer was blocked and never ran.');
}
if (!remote) await gatehouse.store.close();
