/**
 * What the LangChain tests share: a Gatehouse with a budget policy, a transfer tool that
 * remembers whether it ran, and a fake model scripted to call it once and then answer.
 */
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import type { GateBackend } from '../../adapters/langchain/index.js';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import { compilePolicy, createGatehouse, type Gatehouse, type HistoryEvent } from '../../src/index.js';

/** Block over budget, Warn above 1000, for the `transfer_money` tool. */
export const POLICY = `
version: 1
actions:
  transfer_money:
    requires:
      - key: budget.limit
        min_trust: user_input
    rules:
      - name: over_budget
        when: "double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds the budget of {state['budget.limit'].value}"
      - name: large_transfer
        when: "double(params.amount) > 1000.0"
        verdict: Warn
        message: "Transfer of {params.amount} is large"
`;

/** A fresh in-memory Gatehouse with the budget policy. */
export function createTestGatehouse(): Gatehouse {
  return createGatehouse({ store: openSqliteStore(), policy: compilePolicy(POLICY) });
}

/** Records a 5000 budget, stated by the user, in `sessionId`. */
export async function recordBudget(
  backend: Pick<GateBackend, 'recordState'>,
  sessionId: string,
  value = '5000',
): Promise<void> {
  await backend.recordState({
    session_id: sessionId,
    key: 'budget.limit',
    value,
    type: 'fact',
    source: 'user_input',
  });
}

/** A `transfer_money` tool whose `calls` lists every amount it actually moved. */
export function transferTool(options: { fail?: boolean } = {}) {
  const calls: number[] = [];
  const transfer = tool(
    async ({ amount }) => {
      if (options.fail) throw new Error('bank is closed');
      calls.push(amount);
      return `sent ${amount}`;
    },
    {
      name: 'transfer_money',
      description: 'Transfers money to the recipient.',
      schema: z.object({ amount: z.number(), to: z.string() }),
    },
  );
  return { transfer, calls };
}

/** A fake chat model that asks for one tool call, then answers "done". */
export function scriptedModel(name: string, args: Record<string, unknown>) {
  return fakeModel()
    .respondWithTools([{ name, args, id: 'call_1' }])
    .respond(new AIMessage('done'));
}

/** The agent's tool messages. */
export function toolMessages(messages: BaseMessage[]) {
  return messages.filter((m) => m.getType() === 'tool') as Array<
    BaseMessage & { status?: string; content: unknown }
  >;
}

/** The session's history, oldest first. */
export async function historyOf(
  reader: { readHistory: Gatehouse['readHistory'] },
  sessionId: string,
): Promise<HistoryEvent[]> {
  return (await reader.readHistory({ session_id: sessionId, order: 'asc', limit: 500 })).events;
}

/**
 * A backend over `gatehouse` whose outcome reports wait until `release()`: shows what a gated
 * call waits for. `reported` lists the outcomes written so far.
 */
export function heldOutcomeBackend(gatehouse: Gatehouse): {
  backend: GateBackend;
  release: () => void;
  reported: string[];
} {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const reported: string[] = [];
  const backend: GateBackend = {
    evaluate: (input) => gatehouse.evaluate(input),
    recordState: (input) => gatehouse.recordState(input),
    recordOutcome: async (decisionId, input) => {
      await released;
      reported.push(input.outcome);
      return gatehouse.recordOutcome(decisionId, input);
    },
  };
  return { backend, release, reported };
}
