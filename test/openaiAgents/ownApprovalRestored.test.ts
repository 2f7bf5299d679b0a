/**
 * A tool that asks for a person of its own, held by Gatehouse too: once a person approved it in
 * Gatehouse and in the run, the restored run executes it once.
 */
import { Agent, RunState, run, setTracingDisabled } from '@openai/agents';
import { beforeAll, describe, expect, it } from 'vitest';
import { type ApprovalRequest, gateTools } from '../../adapters/openai-agents/index.js';
import { DEFAULT_RECIPIENT, embeddedWorld, nodeMajor, recordBudget } from '../support/frameworkWorlds.js';
import { scriptedModel, transferTool } from './openaiAgentsFixtures.js';

beforeAll(() => {
  setTracingDisabled(true);
});

describe.skipIf(nodeMajor < 22)("OpenAI Agents gateTools and a tool's own needsApproval", () => {
  it.each([
    ['restored from a string', true],
    ['in the same process', false],
  ])('approved in Gatehouse and in the run (%s): the tool runs once', async (_name, restore) => {
    const world = embeddedWorld();
    await recordBudget(world.backend, 'own-2');
    const { transfer, calls } = transferTool({ needsApproval: true });
    const { model } = scriptedModel({ amount: 9000 });
    const agent = new Agent({ name: 'payer', instructions: 'Pay.', model, tools: [transfer] });
    const requests: ApprovalRequest[] = [];
    gateTools(agent, {
      backend: world.backend,
      sessionId: 'own-2',
      onApprovalRequest: (request) => void requests.push(request),
    });
    const first = await run(agent, 'pay 9000');
    expect(first.interruptions).toHaveLength(1);
    await world.approve(requests[0]!.approval_id);
    const state = restore ? await RunState.fromString(agent, first.state.toString()) : first.state;
    state.approve(state.getInterruptions()[0]!);
    await run(agent, state as typeof first.state);
    expect(calls).toEqual([{ amount: 9000, to: DEFAULT_RECIPIENT }]);
    await world.close();
  });
});
