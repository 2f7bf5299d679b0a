/**
 * A failed outcome's detail is the tool's error text, which often quotes the tool's input: the
 * secrets among that input are masked in it, as the decision's `params` mask them, and before the
 * detail is cut short (so no part of one shows). Shared by the AI SDK, OpenAI Agents and
 * LangChain faces (test/langchain/outcomeSecrets.test.ts runs it through a real agent).
 */
import { describe, expect, it } from 'vitest';
import { OutcomeReports, secretsOf, shortDetail } from '../../adapters/toolgate/index.js';
import type { OutcomeInput } from '../../src/index.js';

const PASSWORD = 'Tr0ub4dor&3xyz';

describe('a failed outcome masks the secrets of the call', () => {
  it('names them by their argument names and shapes, as params are masked', () => {
    expect([...secretsOf({ user: 'ada', login: { password: PASSWORD } })]).toEqual([PASSWORD]);
    expect(secretsOf({ user: 'ada', note: 'hello' }).size).toBe(0);
  });

  it('in the detail recorded, also where the detail is cut short', async () => {
    const recorded: Array<{ decisionId: string; input: OutcomeInput }> = [];
    const outcomes = new OutcomeReports({
      backend: {
        recordOutcome: async (decisionId, input) => {
          recorded.push({ decisionId, input });
          return {} as never;
        },
      },
    });
    const secrets = secretsOf({ user: 'ada', password: PASSWORD });
    outcomes.failed('dec_1', new Error(`login refused for ada with ${PASSWORD}`), secrets);
    // The secret straddles the 200th character: masked first, then cut.
    outcomes.failed('dec_2', `${'x'.repeat(190)}${PASSWORD} and more`, secrets);
    await outcomes.flush();
    expect(recorded.map((r) => r.input.detail)).toEqual([
      'Error: login refused for ada with [secret masked]',
      shortDetail(`${'x'.repeat(190)}[secret masked] and more`),
    ]);
    expect(JSON.stringify(recorded)).not.toContain('Tr0ub4');
  });
});
