/**
 * OpenAI Agents end to end: a real `Agent` and `run()` with the SDK's scripted model, a transfer
 * tool that records what it really sent, and `gateTools` on the embedded store and over HTTP.
 * A hold interrupts the run (`RunToolApprovalItem`); the run state is kept as a string while a
 * person decides; only a release in Gatehouse lets the approved call run, once.
 */
import { Agent, RunState, run, setTracingDisabled, webSearchTool } from '@openai/agents';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type ApprovalRequest,
  type GateAgentToolsOptions,
  gateTools,
} from '../../adapters/openai-agents/index.js';
import {
  DEFAULT_RECIPIENT,
  decisionsOf,
  downBackend,
  embeddedWorld,
  nodeMajor,
  outcomesOf,
  recordBudget,
  WORLDS,
  type World,
} from '../support/frameworkWorlds.js';
import { scriptedModel, toolOutputsSeen, transferTool } from './openaiAgentsFixtures.js';

beforeAll(() => {
  // No trace export: the tests never leave loopback.
  setTracingDisabled(true);
});

/** A gated agent calling `transfer_money` with `args`, its tool's transfers and the model's requests. */
function gatedAgent(
  args: Record<string, unknown>,
  options: GateAgentToolsOptions,
  tool: { fail?: boolean; needsApproval?: boolean } = {},
) {
  const { transfer, calls } = transferTool(tool);
  const { model, requests } = scriptedModel(args);
  const agent = new Agent({
    name: 'payer',
    instructions: 'Pay what the user asks.',
    model,
    tools: [transfer],
  });
  const { flush } = gateTools(agent, options);
  return { agent, calls, requests, flush };
}

describe.skipIf(nodeMajor < 22)(
  'OpenAI Agents (@openai/agents declares Node >= 22; skipped on older Node)',
  () => {
    describe.each(WORLDS)('gateTools on the %s store', (_name, open) => {
      let world: World;
      beforeEach(async () => {
        world = await open();
      });
      afterEach(async () => {
        await world.close();
      });

      it('Allow: the tool runs once with the parsed arguments, decided once, and its outcome is recorded', async () => {
        await recordBudget(world.backend, 'allow-1');
        const { agent, calls, flush } = gatedAgent(
          { amount: 200, to: ' Bob ' },
          {
            backend: world.backend,
            sessionId: 'allow-1',
          },
        );
        const result = await run(agent, 'pay bob 200');
        expect(result.finalOutput).toBe('done');
        expect(calls).toEqual([{ amount: 200, to: 'bob' }]);
        await flush();
        const decisions = await decisionsOf(world, 'allow-1');
        expect(decisions).toEqual([
          expect.objectContaining({
            verdict: 'Allow',
            params: { amount: 200, to: 'bob' },
            context: { tool_call_id: 'call_1' },
          }),
        ]);
        expect(await outcomesOf(world, 'allow-1')).toEqual([
          expect.objectContaining({ decision_id: decisions[0]!['decision_id'], outcome: 'succeeded' }),
        ]);
      });

      it('Block: the guardrail refuses it, the tool never runs, the model reads the reason', async () => {
        await recordBudget(world.backend, 'block-1');
        const { agent, calls, requests } = gatedAgent(
          { amount: 10, to: ' Mallory ' },
          {
            backend: world.backend,
            sessionId: 'block-1',
          },
        );
        const result = await run(agent, 'pay mallory');
        expect(result.finalOutput).toBe('done');
        expect(calls).toEqual([]);
        expect(toolOutputsSeen(requests)).toEqual(['Transfers to mallory are not allowed']);
        expect(result.state.toJSON().toolInputGuardrailResults).toContainEqual(
          expect.objectContaining({
            guardrail: { type: 'tool_input', name: 'gatehouse' },
            output: expect.objectContaining({
              behavior: { type: 'rejectContent', message: 'Transfers to mallory are not allowed' },
            }),
          }),
        );
      });

      it('Warn: onWarn hears it, then the tool runs', async () => {
        await recordBudget(world.backend, 'warn-1');
        const onWarn = vi.fn();
        const { agent, calls } = gatedAgent(
          { amount: 1500 },
          { backend: world.backend, sessionId: 'warn-1', onWarn },
        );
        await run(agent, 'pay 1500');
        expect(onWarn).toHaveBeenCalledOnce();
        expect(calls).toEqual([{ amount: 1500, to: DEFAULT_RECIPIENT }]);
      });

      it('a hold interrupts the run; the state waits as a string; approving in the run alone runs nothing; after a person approves, the resumed run executes once with exactly the approved arguments; a second use is refused', async () => {
        await recordBudget(world.backend, 'hold-1');
        const requests: ApprovalRequest[] = [];
        const {
          agent,
          calls,
          requests: modelRequests,
          flush,
        } = gatedAgent(
          { amount: 9000 },
          {
            backend: world.backend,
            sessionId: 'hold-1',
            onApprovalRequest: (request) => void requests.push(request),
          },
        );

        const first = await run(agent, 'pay 9000');
        expect(first.interruptions).toEqual([
          expect.objectContaining({
            type: 'tool_approval_item',
            name: 'transfer_money',
            rawItem: expect.objectContaining({ callId: 'call_1' }),
          }),
        ]);
        expect(requests).toEqual([
          expect.objectContaining({
            tool_call_id: 'call_1',
            params: { amount: 9000, to: DEFAULT_RECIPIENT },
          }),
        ]);
        const approvalId = requests[0]!.approval_id;
        expect(calls).toEqual([]);
        // What the app keeps (a database row) while a person decides.
        const saved = first.state.toString();

        const resume = async () => {
          const state = await RunState.fromString(agent, saved);
          state.approve(state.getInterruptions()[0]!);
          return run(agent, state);
        };

        const forged = await resume();
        expect(calls).toEqual([]);
        expect(forged.finalOutput).toBe('done');
        expect(toolOutputsSeen(modelRequests)).toEqual([
          expect.stringMatching(new RegExp(`^Not released by Gatehouse: .*${approvalId}`)),
        ]);
        expect((await world.getApproval(approvalId)).status).toBe('pending');
        expect(requests).toHaveLength(1);

        await world.approve(approvalId);
        const released = await resume();
        expect(calls).toEqual([{ amount: 9000, to: DEFAULT_RECIPIENT }]);
        expect(released.finalOutput).toBe('done');
        expect((await world.getApproval(approvalId)).status).toBe('used');

        await resume();
        expect(calls).toHaveLength(1);
        await flush();
        expect(await outcomesOf(world, 'hold-1')).toEqual([
          expect.objectContaining({ outcome: 'succeeded' }),
        ]);
      });

      it('in the same process (no saved state), approving the run state, even with alwaysApprove, runs only what Gatehouse released', async () => {
        await recordBudget(world.backend, 'hold-2');
        const requests: ApprovalRequest[] = [];
        const pay = () =>
          gatedAgent(
            { amount: 9000 },
            {
              backend: world.backend,
              sessionId: 'hold-2',
              onApprovalRequest: (request) => void requests.push(request),
            },
          );

        const forged = pay();
        const held = await run(forged.agent, 'pay 9000');
        held.state.approve(held.interruptions[0]!, { alwaysApprove: true });
        await run(forged.agent, held.state);
        expect(forged.calls).toEqual([]);
        expect(toolOutputsSeen(forged.requests)).toEqual([
          expect.stringMatching(/^Not released by Gatehouse/),
        ]);

        const released = pay();
        const again = await run(released.agent, 'pay 9000');
        // The same call, the same state: Gatehouse's pending request, not a new one.
        expect(new Set(requests.map((r) => r.approval_id)).size).toBe(1);
        await world.approve(requests[0]!.approval_id);
        again.state.approve(again.interruptions[0]!);
        await run(released.agent, again.state);
        expect(released.calls).toEqual([{ amount: 9000, to: DEFAULT_RECIPIENT }]);
        expect((await world.getApproval(requests[0]!.approval_id)).status).toBe('used');
      });

      it('changed arguments in the saved run state are refused (Gatehouse holds the changed call anew)', async () => {
        await recordBudget(world.backend, 'hold-3');
        const requests: ApprovalRequest[] = [];
        const {
          agent,
          calls,
          requests: modelRequests,
        } = gatedAgent(
          { amount: 9000 },
          {
            backend: world.backend,
            sessionId: 'hold-3',
            onApprovalRequest: (request) => void requests.push(request),
          },
        );
        const first = await run(agent, 'pay 9000');
        const approvalId = requests[0]!.approval_id;
        await world.approve(approvalId);
        const saved = first.state.toString();
        const edited = saved.replaceAll('{\\"amount\\":9000}', '{\\"amount\\":9000,\\"to\\":\\"acct-666\\"}');
        expect(edited).not.toBe(saved);
        const state = await RunState.fromString(agent, edited);
        state.approve(state.getInterruptions()[0]!);
        await run(agent, state);
        expect(calls).toEqual([]);
        const [refusal] = toolOutputsSeen(modelRequests);
        expect(refusal).toMatch(/^Not released by Gatehouse: .*Held for approval apr_/);
        expect(refusal).not.toContain(approvalId);
        expect((await world.getApproval(approvalId)).status).toBe('approved');
      });

      it('a tool that throws is recorded as failed', async () => {
        await recordBudget(world.backend, 'fail-1');
        const { agent, flush } = gatedAgent(
          { amount: 20 },
          { backend: world.backend, sessionId: 'fail-1' },
          { fail: true },
        );
        await run(agent, 'pay 20');
        await flush();
        expect(await outcomesOf(world, 'fail-1')).toEqual([expect.objectContaining({ outcome: 'failed' })]);
      });
    });

    describe('gateTools, whatever the store', () => {
      it('Gatehouse down: the tool does not run, the model reads that it could not be checked, onError hears why', async () => {
        const onError = vi.fn();
        const { agent, calls, requests } = gatedAgent(
          { amount: 10 },
          {
            backend: await downBackend(),
            sessionId: 'down-1',
            onError,
          },
        );
        await run(agent, 'pay 10');
        expect(calls).toEqual([]);
        expect(toolOutputsSeen(requests)).toEqual([
          "Gatehouse could not check 'transfer_money' (unavailable), so it did not run.",
        ]);
        expect(onError).toHaveBeenCalledWith(expect.objectContaining({ code: 'unavailable' }), {
          stage: 'evaluate',
          action: 'transfer_money',
          toolCallId: 'call_1',
        });
      });

      it('reads the session from the run context with session()', async () => {
        const world = embeddedWorld();
        await recordBudget(world.backend, 'ctx-1');
        const { transfer, calls } = transferTool();
        const agent = new Agent<{ chatId: string }>({
          name: 'payer',
          model: scriptedModel({ amount: 5 }).model,
          tools: [transfer],
        });
        gateTools(agent, { backend: world.backend, session: (ctx) => ctx.context.chatId });
        await run(agent, 'pay 5', { context: { chatId: 'ctx-1' } });
        expect(calls).toHaveLength(1);
        expect(await decisionsOf(world, 'ctx-1')).toHaveLength(1);
        await world.close();
      });

      it('a tool’s own needsApproval still asks a person when Gatehouse allows; with preApprovalInputGuardrails a Block is refused without asking', async () => {
        const world = embeddedWorld();
        await recordBudget(world.backend, 'own-1');
        const allowed = gatedAgent(
          { amount: 10 },
          { backend: world.backend, sessionId: 'own-1' },
          { needsApproval: true },
        );
        const first = await run(allowed.agent, 'pay 10');
        expect(first.interruptions).toHaveLength(1);
        first.state.approve(first.interruptions[0]!);
        await run(allowed.agent, first.state);
        expect(allowed.calls).toEqual([{ amount: 10, to: DEFAULT_RECIPIENT }]);

        const blocked = gatedAgent(
          { amount: 10, to: 'mallory' },
          { backend: world.backend, sessionId: 'own-1' },
          { needsApproval: true },
        );
        const result = await run(blocked.agent, 'pay mallory', {
          toolExecution: { preApprovalInputGuardrails: true },
        });
        expect(result.interruptions).toEqual([]);
        expect(blocked.calls).toEqual([]);
        expect(toolOutputsSeen(blocked.requests)).toEqual(['Transfers to mallory are not allowed']);

        // A hold still pauses for a person with the pre-approval guardrails on.
        const held = gatedAgent({ amount: 9000 }, { backend: world.backend, sessionId: 'own-1' });
        const pending = await run(held.agent, 'pay 9000', {
          toolExecution: { preApprovalInputGuardrails: true },
        });
        expect(pending.interruptions).toHaveLength(1);
        expect(held.calls).toEqual([]);
        await world.close();
      });

      it('gates a list of tools; refuses tools it cannot hold back, a tool gated twice, and a gate without a session', () => {
        const backend = embeddedWorld().backend;
        const { transfer } = transferTool();
        const { tools } = gateTools([transfer], { backend, sessionId: 's' });
        expect(tools).toHaveLength(1);
        expect(tools[0]).not.toBe(transfer);
        expect(() => gateTools(tools, { backend, sessionId: 's' })).toThrow(
          /'transfer_money' \(gated already\)/,
        );
        const withHosted = new Agent({ name: 'searcher', tools: [transfer, webSearchTool()] });
        expect(() => gateTools(withHosted, { backend, sessionId: 's' })).toThrow(
          /'web_search' \(hosted_tool\)/,
        );
        expect(() => gateTools([transfer], { backend })).toThrow(/needs the session/);
      });
    });
  },
);
