/**
 * The history a state change leaves: a new version's `state_change` and the conflicts it settles,
 * written alike by a superseding write and by accepting a proposed value.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from '../../adapters/sqlite/index.js';
import {
  createGatehouse,
  type Gatehouse,
  type HistoryEvent,
  type RecordStateInput,
} from '../../src/index.js';

let store: SqliteStore;
let gh: Gatehouse;

beforeEach(() => {
  store = openSqliteStore();
  gh = createGatehouse({ store });
});
afterEach(() => store.close());

const write = (over: Partial<RecordStateInput>): RecordStateInput => ({
  session_id: 's1',
  key: 'budget.limit',
  value: '5000',
  type: 'fact',
  source: 'user_input',
  ...over,
});

/** The events after `seq` as `[type, data]`, the settled conflicts' (in store order) sorted by ID. */
async function eventsAfter(seq: number): Promise<[string, unknown][]> {
  const page = await gh.readHistory({ session_id: 's1', order: 'asc', limit: 50 });
  const after = page.events.filter((e) => e.seq > seq);
  const superseded = (e: HistoryEvent) => e.data['resolution'] === 'superseded';
  const sorted = after
    .filter(superseded)
    .sort((x, y) => String(x.data['conflict_id']).localeCompare(String(y.data['conflict_id'])));
  return [...after.filter((e) => !superseded(e)), ...sorted].map((e) => [e.type, e.data]);
}

/** Two open conflicts on budget.limit (version 1 from user_input); the history's last seq. */
async function twoConflicts(): Promise<{ first: string; second: string; seq: number }> {
  await gh.recordState(write({}));
  const a = await gh.recordState(write({ value: '6000', source: 'tool_output' }));
  const b = await gh.recordState(write({ value: '7000', source: 'retrieval' }));
  const page = await gh.readHistory({ session_id: 's1', limit: 1 });
  return { first: a.conflict!.conflict_id, second: b.conflict!.conflict_id, seq: page.events[0]!.seq };
}

/** The `state_change` data of version 2 of budget.limit (a fact replacing version 1). */
function versionTwo(fields: { value: string; source: string; trust: number }, extra: object = {}) {
  return {
    key: 'budget.limit',
    version: 2,
    previous_version: 1,
    type: 'fact',
    sensitivity: 'public',
    category: 'budget',
    metadata: {},
    ...fields,
    ...extra,
  };
}

describe('state change events', () => {
  it('a superseding write settles every open conflict of the key, each with its event', async () => {
    const { first, second, seq } = await twoConflicts();
    await gh.recordState(write({ value: '8000', source: 'system', metadata: { note: 'from the owner' } }));
    const events = await eventsAfter(seq);
    expect(events).toEqual([
      [
        'state_change',
        versionTwo({ value: '8000', source: 'system', trust: 4 }, { metadata: { note: 'from the owner' } }),
      ],
      ...[first, second]
        .sort()
        .map((id) => [
          'conflict_resolved',
          { conflict_id: id, key: 'budget.limit', resolution: 'superseded', version: 2 },
        ]),
    ]);
    expect(await gh.listConflicts({ session_id: 's1', status: 'open' })).toEqual([]);
  });

  it('accepting a proposed value writes its version and supersedes the other conflicts', async () => {
    const { first, second, seq } = await twoConflicts();
    await gh.resolveConflict(second, { resolution: 'accept_proposed' });
    const events = await eventsAfter(seq);
    expect(events).toEqual([
      ['state_change', versionTwo({ value: '7000', source: 'retrieval', trust: 1 }, { conflict_id: second })],
      [
        'conflict_resolved',
        { conflict_id: second, key: 'budget.limit', resolution: 'accept_proposed', version: 2 },
      ],
      [
        'conflict_resolved',
        { conflict_id: first, key: 'budget.limit', resolution: 'superseded', version: 2 },
      ],
    ]);
    const conflicts = await gh.listConflicts({ session_id: 's1' });
    expect(conflicts.map((c) => [c.conflict_id, c.status, c.resolution]).sort()).toEqual(
      [
        [first, 'resolved', 'superseded'],
        [second, 'resolved', 'accept_proposed'],
      ].sort(),
    );
  });

  it("a session's secret values are masked in a new version's metadata", async () => {
    const secret = 'sk_live_51HxTESTabcdefghijklmnopqrstuvwx';
    await gh.recordState(write({ key: 'payments.api_key', value: secret, source: 'system' }));
    await gh.recordState(write({ value: '9000', metadata: { copied_from: `key ${secret}` } }));
    const [event] = (await gh.readHistory({ session_id: 's1', limit: 1 })).events;
    expect(JSON.stringify(event!.data)).not.toContain(secret);
    expect(event!.data['metadata']).not.toEqual({ copied_from: `key ${secret}` });
  });
});
