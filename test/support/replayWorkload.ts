/**
 * A mixed, reproducible workload for replay tests: sessions with budgets written by the user,
 * overridden by tools (conflicts), conflicts resolved both ways, other keys, and decisions that
 * Allow, Warn (enforced and shadow) and Block, at times that move (for rules on `now`).
 */
import type { Gatehouse } from '../../src/index.js';

/** The policy the workload's decisions are made with: every kind of reason appears. */
export const REPLAY_POLICY = `
version: 1
open_conflicts: Warn
rules:
  - name: weekend_freeze
    when: "action.startsWith('deploy.') && (now.getDayOfWeek() == 0 || now.getDayOfWeek() == 6)"
    verdict: Block
    message: "No deploys at the weekend ({action})"
  - name: many_conflicts
    when: "size(conflicts) > 2"
    verdict: Warn
    message: "{size(conflicts)} open conflicts, newest on {conflicts[0].key}"
actions:
  "payments.*":
    requires:
      - key: budget.limit
        min_trust: user_input
        types: [fact, constraint]
    rules:
      - name: over_budget
        when: "has(params.amount) && 'budget.limit' in state && double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds {state['budget.limit'].value}"
      - name: large_transfer
        when: "has(params.amount) && double(params.amount) > 3000.0"
        verdict: Warn
        mode: shadow
        message: "large: {params.amount}"
      - name: stale_budget
        when: "'budget.limit' in state && now - state['budget.limit'].updated_at > duration('3600s')"
        verdict: Warn
        message: "budget v{state['budget.limit'].version} set at {state['budget.limit'].updated_at}"
  "deploy.*":
    requires:
      - key: release.approved
    rules:
      - name: not_approved
        when: "'release.approved' in state && state['release.approved'].value != 'yes'"
        verdict: Block
        message: "release.approved is {state['release.approved'].value}"
`;

/** A small seeded PRNG (mulberry32): the same seed, the same workload. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What the workload did. */
export interface WorkloadCounts {
  decisions: number;
  writes: number;
  conflicts: number;
  resolutions: number;
}

/**
 * Runs `decisions` evaluations with state writes in between, over `sessions` sessions split
 * among `workers` concurrent workers (each owns its sessions, so no two writers race on one
 * session). `advance` moves the injected clock.
 */
export async function runReplayWorkload(
  gatehouse: Gatehouse,
  options: {
    decisions: number;
    sessions: number;
    workers: number;
    seed: number;
    advance: (ms: number) => void;
  },
): Promise<WorkloadCounts> {
  const counts: WorkloadCounts = { decisions: 0, writes: 0, conflicts: 0, resolutions: 0 };
  const perWorker = Math.ceil(options.decisions / options.workers);
  const worker = async (w: number) => {
    const random = seededRandom(options.seed + w);
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
    const sessions = Array.from(
      { length: Math.ceil(options.sessions / options.workers) },
      (_, i) => `w${w}-s${i}`,
    );
    for (let n = 0; n < perWorker && counts.decisions < options.decisions; n += 1) {
      const session_id = pick(sessions);
      options.advance(Math.floor(random() * 20 * 60_000));
      const roll = random();
      if (roll < 0.12) {
        await gatehouse.recordState({
          session_id,
          key: 'budget.limit',
          value: String(1000 + Math.floor(random() * 9) * 1000),
          type: pick(['fact', 'constraint', 'assumption']),
          source: pick(['user_input', 'user_input', 'system']),
        });
        counts.writes += 1;
      } else if (roll < 0.22) {
        const r = await gatehouse.recordState({
          session_id,
          key: pick(['budget.limit', 'release.approved', 'user.email']),
          value: pick(['999999', 'yes', 'no', 'a@example.com', String(Math.floor(random() * 100))]),
          type: 'fact',
          source: pick(['tool_output', 'retrieval', 'agent_inference']),
        });
        counts.writes += 1;
        if (r.outcome === 'conflict') counts.conflicts += 1;
      } else if (roll < 0.27) {
        const open = await gatehouse.listConflicts({ session_id, status: 'open' });
        if (open.length > 0) {
          await gatehouse.resolveConflict(pick(open).conflict_id, {
            resolution: pick(['keep_current', 'accept_proposed']),
          });
          counts.resolutions += 1;
        }
      } else if (roll < 0.32) {
        await gatehouse.recordState({
          session_id,
          key: 'release.approved',
          value: pick(['yes', 'no']),
          type: 'fact',
          source: 'user_input',
        });
        counts.writes += 1;
      }
      const action = pick(['payments.transfer', 'payments.refund', 'deploy.prod', 'files.read']);
      const params = action.startsWith('payments.') ? { amount: Math.floor(random() * 12_000) } : {};
      await gatehouse.evaluate({ session_id, action, params, context: { n } });
      counts.decisions += 1;
    }
  };
  await Promise.all(Array.from({ length: options.workers }, (_, w) => worker(w)));
  return counts;
}
