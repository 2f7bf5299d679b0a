/**
 * The Store contract: every Store (SQLite file, SQLite :memory:, PostgreSQL) must pass it.
 * It drives the Store directly and through the core, so the rules hold on every backend.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  compilePolicy,
  createGatehouse,
  createIdGenerator,
  type Gatehouse,
  GatehouseError,
  hashEvent,
  type SealedEvent,
  type StateItem,
  type Store,
  type StoredEvent,
  type StoredWebhook,
  type StoreTx,
  WALK_TENANTS,
  webhookShareKey,
} from '../../src/index.js';
import { APPROVAL_POLICY, BUDGET_POLICY } from '../support/policies.js';
import { policyRevisionContract } from './policyRevisionContract.js';

/** How a test suite makes a fresh, empty store of one kind. */
export interface StoreFactory {
  name: string;
  open(): Promise<Store>;
  /** Runs raw SQL against the same database (to prove the append-only triggers). */
  exec(store: Store, sql: string): Promise<void>;
}

/** A clock that moves only when told: tests never sleep. */
export function manualClock(start = '2026-01-01T00:00:00.000Z') {
  let t = new Date(start).getTime();
  const clock = () => new Date(t);
  clock.advance = (ms: number) => {
    t += ms;
  };
  return clock;
}

function item(over: Partial<Record<string, unknown>> = {}) {
  return {
    session_id: 's1',
    key: 'budget.limit',
    value: '5000',
    type: 'fact',
    source: 'user_input',
    ...over,
  };
}

async function expectCode(promise: Promise<unknown>, code: string) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatehouseError);
  expect((error as GatehouseError).code).toBe(code);
  return error as GatehouseError;
}

/** Registers the whole contract for one store kind. */
/** A first version of item `a.b` in `sessionId`, as a transaction writes it. */
function storedItem(sessionId: string, clock: () => Date): StateItem {
  return {
    session_id: sessionId,
    key: 'a.b',
    value: 'v',
    type: 'fact',
    source: 'user_input',
    trust: 3,
    sensitivity: 'public',
    category: 'a',
    version: 1,
    status: 'current',
    metadata: {},
    updated_at: clock().toISOString(),
  };
}

export function runStoreContract(factory: StoreFactory): void {
  describe(`Store contract: ${factory.name}`, () => {
    let store: Store;
    let gh: Gatehouse;
    let clock: ReturnType<typeof manualClock>;

    beforeEach(async () => {
      store = await factory.open();
      clock = manualClock();
      gh = createGatehouse({
        store,
        clock,
        ids: createIdGenerator(clock),
        policy: compilePolicy(BUDGET_POLICY),
      });
    });
    afterEach(async () => {
      await store.close();
    });

    describe('state items', () => {
      it('creates version 1, classifies and canonicalises the key', async () => {
        const r = await gh.recordState(item({ key: '  Budget.LIMIT ' }));
        expect(r.outcome).toBe('created');
        expect(r.changed).toBe(true);
        expect(r.item).toMatchObject({
          key: 'budget.limit',
          version: 1,
          trust: 3,
          category: 'budget',
          sensitivity: 'public',
          status: 'current',
        });
        expect(await gh.getItem('s1', 'budget.limit')).toEqual(r.item);
      });

      it('writing the same value again creates no version', async () => {
        await gh.recordState(item());
        const again = await gh.recordState(item({ source: 'tool_output' }));
        expect(again).toMatchObject({ outcome: 'unchanged', changed: false, event_id: null });
        expect(await gh.listItemVersions('s1', 'budget.limit')).toHaveLength(1);
      });

      it('a write of equal or higher trust supersedes; all versions stay readable', async () => {
        await gh.recordState(item());
        const r2 = await gh.recordState(item({ value: '6000' }));
        const r3 = await gh.recordState(item({ value: '7000', source: 'system' }));
        expect(r2.outcome).toBe('superseded');
        expect(r3.item.version).toBe(3);
        const versions = await gh.listItemVersions('s1', 'budget.limit');
        expect(versions.map((v) => [v.version, v.value, v.status])).toEqual([
          [1, '5000', 'superseded'],
          [2, '6000', 'superseded'],
          [3, '7000', 'current'],
        ]);
        expect((await gh.getItemVersion('s1', 'budget.limit', 1)).value).toBe('5000');
      });

      it('a lower-trust write does not replace the value: it opens a conflict', async () => {
        await gh.recordState(item());
        const r = await gh.recordState(item({ value: '999999', source: 'tool_output' }));
        expect(r.outcome).toBe('conflict');
        expect(r.changed).toBe(false);
        expect(r.item).toMatchObject({ value: '5000', version: 1, status: 'conflicted' });
        expect(r.conflict).toMatchObject({
          status: 'open',
          current: { value: '5000', source: 'user_input', trust: 3, version: 1 },
          proposed: { value: '999999', source: 'tool_output', trust: 2 },
        });
        expect((await gh.getItem('s1', 'budget.limit')).value).toBe('5000');
        const open = await gh.listConflicts({ session_id: 's1', status: 'open' });
        expect(open.map((c) => c.conflict_id)).toEqual([r.conflict!.conflict_id]);
        const events = await gh.readHistory({ session_id: 's1', type: 'state_conflict' });
        expect(events.events).toHaveLength(1);
      });

      it('repeating the same lower-trust write returns the open conflict without a new event', async () => {
        await gh.recordState(item());
        const a = await gh.recordState(item({ value: '1', source: 'tool_output' }));
        const b = await gh.recordState(item({ value: '1', source: 'tool_output' }));
        expect(b.conflict?.conflict_id).toBe(a.conflict?.conflict_id);
        expect(b.event_id).toBeNull();
      });

      it('a write of at least the current trust settles open conflicts', async () => {
        await gh.recordState(item());
        const c = await gh.recordState(item({ value: '1', source: 'tool_output' }));
        const r = await gh.recordState(item({ value: '5500' }));
        expect(r.outcome).toBe('superseded');
        expect(r.item.status).toBe('current');
        const conflict = await gh.getConflict(c.conflict!.conflict_id);
        expect(conflict).toMatchObject({ status: 'resolved', resolution: 'superseded' });
        const resolved = await gh.readHistory({ session_id: 's1', type: 'conflict_resolved' });
        expect(resolved.events).toHaveLength(1);
      });

      it('resolve keep_current and accept_proposed', async () => {
        await gh.recordState(item());
        const c1 = await gh.recordState(item({ value: '1', source: 'tool_output' }));
        const kept = await gh.resolveConflict(c1.conflict!.conflict_id, { resolution: 'keep_current' });
        expect(kept).toMatchObject({ status: 'resolved', resolution: 'keep_current' });
        expect((await gh.getItem('s1', 'budget.limit')).status).toBe('current');
        await expectCode(
          gh.resolveConflict(c1.conflict!.conflict_id, { resolution: 'keep_current' }),
          'version_conflict',
        );

        const c2 = await gh.recordState(item({ value: '2', source: 'retrieval' }));
        await gh.resolveConflict(c2.conflict!.conflict_id, { resolution: 'accept_proposed' });
        const now = await gh.getItem('s1', 'budget.limit');
        expect(now).toMatchObject({ value: '2', source: 'retrieval', version: 2, status: 'current' });
      });

      it('a caller cannot resolve a conflict above its own trust', async () => {
        await gh.recordState(item());
        const c = await gh.recordState(item({ value: '1', source: 'tool_output' }));
        await expectCode(
          gh.resolveConflict(
            c.conflict!.conflict_id,
            { resolution: 'accept_proposed' },
            { allowedSources: ['tool_output'] },
          ),
          'forbidden',
        );
      });

      it('expected_version is compare-and-set', async () => {
        await gh.recordState(item({ expected_version: 0 }));
        await expectCode(gh.recordState(item({ value: '2', expected_version: 0 })), 'version_conflict');
        const ok = await gh.recordState(item({ value: '2', expected_version: 1 }));
        expect(ok.item.version).toBe(2);
      });

      it('rejects bad input precisely and writes nothing', async () => {
        const e1 = await expectCode(gh.recordState(item({ key: 'budget' })), 'invalid_request');
        expect(e1.errors[0]?.path).toBe('key');
        const e2 = await expectCode(gh.recordState(item({ type: 'rumour' })), 'invalid_request');
        expect(e2.message).toContain('fact');
        const e3 = await expectCode(gh.recordState(item({ source: 'oracle' })), 'invalid_request');
        expect(e3.message).toContain('user_input');
        await expectCode(gh.recordState({ ...item(), value: 5 } as never), 'invalid_request');
        await expectCode(gh.recordState({ ...item(), extra: 1 } as never), 'invalid_request');
        expect(await gh.listItems('s1')).toEqual([]);
        expect((await gh.readHistory()).events).toEqual([]);
      });

      it('a caller cannot claim a source beyond its allowance', async () => {
        const e = await expectCode(
          gh.recordState(item({ source: 'system' }), { allowedSources: ['tool_output'] }),
          'forbidden',
        );
        expect(e.message).toContain('tool_output');
      });

      it('masks secrets in history but keeps the value readable in state', async () => {
        const secret = 'sk_live_51HxAbCdEfGhIjKlMnOpQrStUv';
        await gh.recordState(item({ key: 'stripe.api_key', value: secret }));
        expect((await gh.getItem('s1', 'stripe.api_key')).value).toBe(secret);
        const page = await gh.readHistory({ session_id: 's1' });
        expect(JSON.stringify(page)).not.toContain(secret);
        const d = await gh.evaluate({ session_id: 's1', action: 'x.y', params: { token: secret } });
        const stored = await gh.getDecision(d.decision_id);
        expect(JSON.stringify(stored)).not.toContain(secret);
      });

      it('isolates tenants', async () => {
        await gh.recordState(item(), { tenantId: 'a' });
        await expectCode(gh.getItem('s1', 'budget.limit', { tenantId: 'b' }), 'not_found');
        expect(await gh.listItems('s1', { tenantId: 'b' })).toEqual([]);
        expect((await gh.readHistory({}, { tenantId: 'b' })).events).toEqual([]);
      });

      it('keeps versions gap-free under concurrent writes', async () => {
        await Promise.all(
          Array.from({ length: 20 }, (_, i) => gh.recordState(item({ value: String(i + 1) }))),
        );
        const versions = await gh.listItemVersions('s1', 'budget.limit');
        expect(versions.map((v) => v.version)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
        expect((await gh.verifyHistory()).ok).toBe(true);
      });
    });

    describe('gate', () => {
      it('blocks an over-budget transfer with a reason, a decision ID and the versions read', async () => {
        await gh.recordState(item());
        const d = await gh.evaluate({
          session_id: 's1',
          action: 'payments.transfer',
          params: { amount: 9000 },
        });
        expect(d.verdict).toBe('Block');
        expect(d.allowed).toBe(false);
        expect(d.decision_id).toMatch(/^dec_/);
        expect(d.reason).toContain('9000');
        expect(d.reasons.map((r) => r.rule)).toEqual(['over_budget']);
        expect(d.state_versions).toEqual({ 'budget.limit': 1 });
        const stored = await gh.getDecision(d.decision_id);
        expect(stored).toMatchObject({ verdict: 'Block', params: { amount: 9000 } });
      });

      it('allows within budget and blocks when the required key is missing or conflicted', async () => {
        const missing = await gh.evaluate({
          session_id: 's1',
          action: 'payments.transfer',
          params: { amount: 1 },
        });
        expect(missing.reasons.map((r) => r.rule)).toContain('required_missing');
        await gh.recordState(item());
        const ok = await gh.evaluate({
          session_id: 's1',
          action: 'payments.transfer',
          params: { amount: 10 },
        });
        expect(ok.verdict).toBe('Allow');
        await gh.recordState(item({ value: '1000000', source: 'tool_output' }));
        const conflicted = await gh.evaluate({
          session_id: 's1',
          action: 'payments.transfer',
          params: { amount: 10 },
        });
        expect(conflicted.verdict).toBe('Block');
        expect(conflicted.reasons.map((r) => r.rule)).toContain('required_conflicted');
      });

      it('records each evaluation and one outcome per decision', async () => {
        await gh.recordState(item());
        const d = await gh.evaluate({
          session_id: 's1',
          action: 'payments.transfer',
          params: { amount: 10 },
        });
        const outcome = await gh.recordOutcome(d.decision_id, { outcome: 'succeeded', detail: 'sent' });
        expect(outcome.type).toBe('action_outcome');
        expect(outcome.data).toMatchObject({ decision_id: d.decision_id, outcome: 'succeeded' });
        await expectCode(gh.recordOutcome(d.decision_id, { outcome: 'failed' }), 'already_recorded');
        await expectCode(gh.recordOutcome('dec_nope', { outcome: 'failed' }), 'not_found');
        const trail = await gh.readHistory({ decision_id: d.decision_id, order: 'asc' });
        expect(trail.events.map((e) => e.type)).toEqual(['gate_evaluation', 'action_outcome']);
      });
    });

    describe('history', () => {
      it('filters a session by each event type exactly, evaluations included, in both orders', async () => {
        for (let i = 0; i < 6; i++) {
          const session_id = i % 3 === 2 ? 's2' : 's1';
          await gh.recordState(item({ session_id, key: `k.n${i}` }));
          await gh.evaluate({ session_id, action: 'files.read', params: { i } });
        }
        const all = (await gh.readHistory({ order: 'asc', limit: 500 })).events;
        for (const type of ['gate_evaluation', 'state_change'] as const) {
          for (const order of ['asc', 'desc'] as const) {
            const expected = all
              .filter((e) => e.session_id === 's1' && e.type === type)
              .map((e) => e.seq)
              .sort((a, b) => (order === 'asc' ? a - b : b - a));
            const seen: number[] = [];
            let cursor: string | undefined;
            do {
              const page = await gh.readHistory({
                session_id: 's1',
                type,
                order,
                limit: 3,
                ...(cursor ? { cursor } : {}),
              });
              seen.push(...page.events.map((e) => e.seq));
              cursor = page.next_cursor ?? undefined;
            } while (cursor);
            expect(seen).toEqual(expected);
            expect(seen).toHaveLength(4);
          }
        }
      });

      it('pages with an opaque cursor in both orders, filtered by session and type', async () => {
        for (let i = 0; i < 7; i++) {
          await gh.recordState(item({ key: `k.n${i}`, session_id: i % 2 ? 's2' : 's1' }));
        }
        const seen: number[] = [];
        let cursor: string | undefined;
        do {
          const page = await gh.readHistory({ session_id: 's1', limit: 2, ...(cursor ? { cursor } : {}) });
          seen.push(...page.events.map((e) => e.seq));
          cursor = page.next_cursor ?? undefined;
        } while (cursor);
        expect(seen).toEqual([7, 5, 3, 1]);
        const asc = await gh.readHistory({ type: 'state_change', order: 'asc', limit: 3 });
        expect(asc.events.map((e) => e.seq)).toEqual([1, 2, 3]);
        await expectCode(gh.readHistory({ cursor: asc.next_cursor! }), 'invalid_request');
        await expectCode(gh.readHistory({ cursor: 'garbage' }), 'invalid_request');
        await expectCode(gh.readHistory({ limit: 501 }), 'invalid_request');
      });

      it('chains every event and verifies the chain', async () => {
        await gh.recordState(item());
        await gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 1 } });
        const page = await gh.readHistory({ order: 'asc' });
        expect(page.events[0]!.prev_hash).toBe('0'.repeat(64));
        expect(page.events[1]!.prev_hash).toBe(page.events[0]!.hash);
        // The hash covers the stored envelope (caller fields as commitments), not the values read.
        const { value: sealed } = await store.scanEvents('default')[Symbol.asyncIterator]().next();
        const { values: _values, ...envelope } = (sealed as SealedEvent[])[1]!;
        expect(envelope.data).toMatchObject({ commitments: { '/params': expect.any(String) } });
        expect(envelope.data['params']).toBeNull();
        expect(hashEvent({ tenant_id: 'default', ...envelope })).toBe(page.events[1]!.hash);
        expect(await gh.verifyHistory()).toMatchObject({ ok: true, checked: 2, head: page.events[1]!.hash });
      });

      it('the database refuses UPDATE and DELETE on events', async () => {
        await gh.recordState(item());
        await expect(factory.exec(store, `UPDATE events SET data = '{}'`)).rejects.toThrow(/append-only/);
        await expect(factory.exec(store, 'DELETE FROM events')).rejects.toThrow(/append-only/);
        expect((await gh.verifyHistory()).ok).toBe(true);
      });

      it('a failed transaction leaves nothing behind', async () => {
        await expect(
          store.transaction(async (tx) => {
            await tx.insertItemVersion('default', storedItem('s1', clock));
            throw new Error('boom');
          }),
        ).rejects.toThrow('boom');
        expect(await store.getItem('default', 's1', 'a.b')).toBeNull();
      });
    });

    describe('webhooks and the outbox', () => {
      it('writes a delivery in the same transaction as each matching event', async () => {
        const w = await gh.createWebhook({
          url: 'https://hooks.example.com/gh',
          events: ['gate_evaluation'],
          filter: { verdicts: ['Block'] },
        });
        expect(w.secret).toMatch(/^whsec_/);
        expect(JSON.stringify(await gh.getWebhook(w.id))).not.toContain(w.secret);
        await gh.recordState(item());
        await gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 1 } });
        await gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 99999 } });
        const deliveries = await gh.listDeliveries(w.id);
        expect(deliveries).toHaveLength(1);
        expect(deliveries[0]).toMatchObject({
          status: 'pending',
          attempts: 0,
          event_type: 'gate_evaluation',
        });
      });

      it('claims due deliveries with a lease, records attempts, skips disabled webhooks', async () => {
        const w = await gh.createWebhook({ url: 'https://hooks.example.com/a', events: ['*'] });
        await gh.recordState(item());
        const now = clock().toISOString();
        const lease = new Date(clock().getTime() + 30_000).toISOString();
        const claimed = await store.claimDueDeliveries({ now, leaseUntil: lease, limit: 10 });
        expect(claimed).toHaveLength(1);
        expect(claimed[0]!.webhook.secrets[0]!.secret).toBe(w.secret);
        expect(claimed[0]!.event.type).toBe('state_change');
        // The event's data, parsed or as the JSON text it is kept as.
        const { event_data_json: dataJson, event } = claimed[0]!;
        const stored = (await gh.readHistory({})).events.find((e) => e.event_id === event.event_id);
        expect(dataJson === undefined ? event.data : JSON.parse(dataJson)).toEqual(stored!.data);
        expect(await store.claimDueDeliveries({ now, leaseUntil: lease, limit: 10 })).toHaveLength(0);
        const { delivery, tenant_id } = claimed[0]!;
        const later = new Date(clock().getTime() + 5000).toISOString();
        await store.recordDeliveryAttempt(tenant_id, delivery.delivery_id, {
          status: 'pending',
          attempts: 1,
          next_attempt_at: later,
          last_status_code: 500,
          last_error: 'HTTP 500',
          delivered_at: null,
          updated_at: now,
        });
        expect(await store.nextDueAt()).toBe(later);
        expect(await store.claimDueDeliveries({ now: later, leaseUntil: lease, limit: 10 })).toHaveLength(1);
        const leaseExpired = new Date(clock().getTime() + 31_000).toISOString();
        await store.disableWebhook(tenant_id, w.id, now);
        expect(
          await store.claimDueDeliveries({ now: leaseExpired, leaseUntil: leaseExpired, limit: 10 }),
        ).toHaveLength(0);
        const enabled = await gh.enableWebhook(w.id);
        expect(enabled.status).toBe('active');
        expect(
          await store.claimDueDeliveries({ now: leaseExpired, leaseUntil: leaseExpired, limit: 10 }),
        ).toHaveLength(1);
      });

      it('records many attempts at once, and gives back unstarted claims only while still leased to it', async () => {
        const w = await gh.createWebhook({ url: 'https://hooks.example.com/b', events: ['*'] });
        for (const key of ['budget.a', 'budget.b', 'budget.c', 'budget.d'])
          await gh.recordState(item({ key }));
        const now = clock().toISOString();
        const lease = new Date(clock().getTime() + 30_000).toISOString();
        const claimed = await store.claimDueDeliveries({ now, leaseUntil: lease, limit: 10 });
        expect(claimed).toHaveLength(4);
        const [a, b, c, d] = claimed.map((x) => ({
          tenantId: x.tenant_id,
          deliveryId: x.delivery.delivery_id,
        }));
        const later = new Date(clock().getTime() + 5000).toISOString();
        await store.recordDeliveryAttempts([
          {
            ...a!,
            attempt: {
              status: 'delivered',
              attempts: 1,
              next_attempt_at: null,
              last_status_code: 204,
              last_error: null,
              delivered_at: now,
              updated_at: now,
            },
          },
          {
            ...b!,
            attempt: {
              status: 'pending',
              attempts: 1,
              next_attempt_at: later,
              last_status_code: 503,
              last_error: 'the endpoint answered HTTP 503',
              delivered_at: null,
              updated_at: now,
            },
          },
        ]);
        await store.recordDeliveryAttempts([]);
        const byId = new Map((await gh.listDeliveries(w.id)).map((x) => [x.delivery_id, x]));
        expect(byId.get(a!.deliveryId)).toMatchObject({
          status: 'delivered',
          attempts: 1,
          last_status_code: 204,
        });
        expect(byId.get(b!.deliveryId)).toMatchObject({
          status: 'pending',
          attempts: 1,
          next_attempt_at: later,
        });
        expect(byId.get(c!.deliveryId)).toMatchObject({ status: 'pending', attempts: 0 });

        // c is given back under its lease: due again at once. d's lease has been taken over by a
        // later claim (it expired), so the old lease gives nothing back. b is due by then too.
        const expired = new Date(clock().getTime() + 31_000).toISOString();
        const newLease = new Date(clock().getTime() + 61_000).toISOString();
        await store.releaseDeliveries([{ ...c!, leaseUntil: lease }]);
        const reclaimed = await store.claimDueDeliveries({ now: expired, leaseUntil: newLease, limit: 10 });
        expect(reclaimed.map((x) => x.delivery.delivery_id).sort()).toEqual(
          [b!.deliveryId, c!.deliveryId, d!.deliveryId].sort(),
        );
        await store.releaseDeliveries([{ ...d!, leaseUntil: lease }]);
        await store.releaseDeliveries([]);
        expect(
          await store.claimDueDeliveries({ now: expired, leaseUntil: newLease, limit: 10 }),
        ).toHaveLength(0);
        await store.releaseDeliveries([{ ...d!, leaseUntil: newLease }]);
        const again = await store.claimDueDeliveries({ now: expired, leaseUntil: newLease, limit: 10 });
        expect(again.map((x) => x.delivery.delivery_id)).toEqual([d!.deliveryId]);
      });

      it("keeps an outbox row's traceparent and hands it back with the claim", async () => {
        await gh.recordState(item());
        const event = (await gh.readHistory({ limit: 1 })).events[0]!;
        const w = await gh.createWebhook({ url: 'https://hooks.example.com/t', events: ['*'] });
        const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
        const at = clock().toISOString();
        const row = {
          webhook_id: w.id,
          event_id: event.event_id,
          event_type: event.type,
          next_attempt_at: at,
          created_at: at,
        };
        await store.transaction((tx) =>
          tx.insertDeliveries('default', [
            { ...row, delivery_id: 'dlv_traced', traceparent },
            { ...row, delivery_id: 'dlv_plain' },
          ]),
        );
        const lease = new Date(clock().getTime() + 30_000).toISOString();
        const claimed = await store.claimDueDeliveries({ now: at, leaseUntil: lease, limit: 10 });
        const byId = new Map(claimed.map((c) => [c.delivery.delivery_id, c.traceparent ?? null]));
        expect(byId.get('dlv_traced')).toBe(traceparent);
        expect(byId.get('dlv_plain')).toBeNull();
      });

      /** An ISO time `ms` after the test clock's now. */
      const inMs = (ms: number) => new Date(clock().getTime() + ms).toISOString();

      /**
       * Records an event for `tenantId`, then gives it a webhook and `count` deliveries of that
       * event, the n-th due at `due(n)` and named `dlv_<label>_<n>`: a backlog or retries, written
       * directly. The webhook's ID and the deliveries' IDs.
       */
      const queueDeliveries = async (
        tenantId: string,
        due: (n: number) => string,
        count: number,
        label = tenantId,
      ) => {
        await gh.recordState(item(), { tenantId });
        const event = (await gh.readHistory({ limit: 1 }, { tenantId })).events[0]!;
        const hook = await gh.createWebhook(
          { url: 'https://hooks.example.com/h', events: ['*'] },
          { tenantId },
        );
        const rows = Array.from({ length: count }, (_, n) => ({
          delivery_id: `dlv_${label}_${String(n).padStart(3, '0')}`,
          webhook_id: hook.id,
          event_id: event.event_id,
          event_type: event.type,
          next_attempt_at: due(n),
          created_at: inMs(0),
        }));
        await store.transaction((tx) => tx.insertDeliveries(tenantId, rows));
        return { hookId: hook.id, ids: rows.map((r) => r.delivery_id) };
      };

      it("shares a claim between tenants: one tenant's backlog, due first, neither hides nor outranks another's delivery", async () => {
        // The hog's webhook comes after its event: only the backlog is queued for it.
        const hog = await queueDeliveries('hog', (n) => inMs(n), 300);
        const other = await gh.createWebhook(
          { url: 'https://hooks.example.com/b', events: ['*'] },
          { tenantId: 'b' },
        );
        // The other tenant's one delivery is due after the whole backlog.
        clock.advance(1000);
        await gh.recordState(item(), { tenantId: 'b' });
        const [late] = await gh.listDeliveries(other.id, {}, { tenantId: 'b' });
        const now = inMs(1000);
        const lease = inMs(60_000);
        const claimed = await store.claimDueDeliveries({ now, leaseUntil: lease, limit: 4 });
        // Max-min: the other tenant's one, and the hog's three earliest, handed out due-first.
        expect(claimed.map((c) => c.delivery.delivery_id)).toEqual([
          'dlv_hog_000',
          'dlv_hog_001',
          'dlv_hog_002',
          late!.delivery_id,
        ]);
        // A sender that holds the hog's cap already claims none of its deliveries.
        const share = {
          heldByTenant: new Map([['hog', 3]]),
          heldByWebhook: new Map([[webhookShareKey('hog', hog.hookId), 3]]),
          perTenant: 3,
        };
        expect(await store.claimDueDeliveries({ now, leaseUntil: lease, limit: 4, share })).toEqual([]);
        // Below its cap, the hog takes up to it and no further, earliest due first.
        const below = { ...share, heldByTenant: new Map([['hog', 1]]) };
        const more = await store.claimDueDeliveries({ now, leaseUntil: lease, limit: 4, share: below });
        expect(more.map((c) => c.delivery.delivery_id)).toEqual(['dlv_hog_003', 'dlv_hog_004']);
      });

      it('reaches a tenant behind a backlog and many tenants waiting on retries within a few claims, each claim looking at a bounded number', async () => {
        // Twenty tenants whose deliveries wait on retries an hour away sort before the others.
        for (let t = 0; t < WALK_TENANTS + 4; t++)
          await queueDeliveries(`a${String(t).padStart(2, '0')}`, () => inMs(3_600_000), 1);
        await queueDeliveries('hog', (n) => inMs(n), 100);
        await queueDeliveries('z', () => inMs(500), 1);
        const now = inMs(1000);
        const lease = inMs(60_000);
        const claimed: string[] = [];
        for (let n = 0; n < 3 && !claimed.includes('dlv_z_000'); n++) {
          const got = await store.claimDueDeliveries({ now, leaseUntil: lease, limit: 2 });
          claimed.push(...got.map((c) => c.delivery.delivery_id));
        }
        // The first claim's walk stops after WALK_TENANTS tenants; the second goes on to z.
        expect(claimed).toEqual(['dlv_hog_000', 'dlv_hog_001', 'dlv_hog_002', 'dlv_z_000']);
      });

      it("walks on from the last tenant in the store's order, also where IDs sort otherwise in JavaScript", async () => {
        const queue = async (tenantId: string, due: (n: number) => string, count: number) =>
          (await queueDeliveries(tenantId, due, count, Buffer.from(tenantId).toString('hex'))).ids[0]!;
        // Byte (UTF-8) order: 'a' < 'a\uFF21' < 'a\u{1F600}…'; UTF-16 order puts 'a\uFF21' last.
        await queue('a', (n) => inMs(n), 100);
        await queue('a\uFF21', () => inMs(3_600_000), 1);
        for (let t = 0; t < WALK_TENANTS + 1; t++)
          await queue(`a\u{1F600}${String(t).padStart(2, '0')}`, () => inMs(3_600_000), 1);
        const late = await queue('a\u{1F600}zz', () => inMs(500), 1);
        const now = inMs(1000);
        const lease = inMs(60_000);
        const claimed: string[] = [];
        for (let n = 0; n < 2; n++) {
          const got = await store.claimDueDeliveries({ now, leaseUntil: lease, limit: 2 });
          claimed.push(...got.map((c) => c.delivery.delivery_id));
        }
        // The first walk looked at 16 tenants (to the 14th emoji one); the second reaches the late one.
        expect(claimed).toContain(late);
      });

      it('rotates secrets with an overlap, redelivers, deletes', async () => {
        const w = await gh.createWebhook({ url: 'https://hooks.example.com/a', events: ['state_change'] });
        const rotated = await gh.rotateWebhookSecret(w.id, { overlap_seconds: 3600 });
        expect(rotated.secret).not.toBe(w.secret);
        const stored = (await store.getWebhook('default', w.id)) as StoredWebhook;
        expect(stored.secrets.map((s) => s.secret)).toEqual([w.secret, rotated.secret]);
        expect(stored.secrets[0]!.expires_at).not.toBeNull();
        await gh.recordState(item());
        const [d] = await gh.listDeliveries(w.id);
        const again = await gh.redeliver(w.id, d!.delivery_id);
        expect(again.status).toBe('pending');
        await expectCode(gh.redeliver(w.id, 'dlv_nope'), 'not_found');
        await gh.deleteWebhook(w.id);
        await expectCode(gh.getWebhook(w.id), 'not_found');
        await expectCode(gh.getWebhook(w.id, { tenantId: 'other' }), 'not_found');
      });

      it('refuses non-https URLs and unknown event types', async () => {
        await expectCode(
          gh.createWebhook({ url: 'http://hooks.example.com', events: ['*'] }),
          'invalid_request',
        );
        await expectCode(
          gh.createWebhook({ url: 'https://x.example', events: ['nope'] } as never),
          'invalid_request',
        );
      });
    });

    describe('dump and load', () => {
      it('moves every row into a new store with the chain intact, and refuses a used one', async () => {
        await gh.createWebhook({ url: 'https://hooks.example.com/a', events: ['*'] });
        await gh.recordState(item());
        await gh.recordState(item({ value: '1', source: 'tool_output' }));
        await gh.evaluate({ session_id: 's1', action: 'payments.transfer', params: { amount: 1 } });
        await gh.recordState(item({ key: 'other.key', session_id: 's2' }), { tenantId: 't2' });
        const collect = async (from: Store) => {
          const rows = [];
          for await (const r of from.dumpRows({ pageSize: 2 })) rows.push(r);
          return rows;
        };
        const source = await collect(store);
        expect(new Set(source.map((r) => r.table))).toEqual(
          new Set([
            'webhooks',
            'state_versions',
            'state_items',
            'conflicts',
            'events',
            'event_values',
            'chain_heads',
            'deliveries',
          ]),
        );
        const target = await factory.open();
        try {
          expect(await target.loadRows(store.dumpRows())).toBe(source.length);
          expect(await collect(target)).toEqual(source);
          const moved = createGatehouse({ store: target, policy: gh.policy });
          expect((await moved.verifyHistory()).ok).toBe(true);
          expect((await moved.verifyHistory({ tenantId: 't2' })).ok).toBe(true);
          expect(await moved.getItem('s1', 'budget.limit')).toEqual(await gh.getItem('s1', 'budget.limit'));
          await expectCode(target.loadRows(store.dumpRows()), 'invalid_request');
        } finally {
          await target.close();
        }
      });

      it("rebuilds the chain heads from the loaded events, whatever the dump's say", async () => {
        await gh.recordState(item());
        await gh.recordState(item({ value: '6000' }));
        for (const doctor of [
          () => null,
          (row: Record<string, unknown>) => ({ ...row, seq: 1, hash: 'f'.repeat(64) }),
        ]) {
          async function* doctored() {
            for await (const r of store.dumpRows()) {
              if (r.table !== 'chain_heads') yield r;
              else if (doctor(r.row) !== null) yield { ...r, row: doctor(r.row)! };
            }
          }
          const target = await factory.open();
          try {
            await target.loadRows(doctored());
            expect(await target.listTenants()).toEqual(['default']);
            const moved = createGatehouse({ store: target, policy: gh.policy });
            const next = await moved.recordState(item({ value: '7000' }));
            expect((await moved.readHistory({ limit: 1 })).events[0]).toMatchObject({
              event_id: next.event_id,
              seq: 3,
            });
            expect(await moved.verifyHistory()).toMatchObject({ ok: true, checked: 3 });
          } finally {
            await target.close();
          }
        }
      });
    });

    describe('approvals', () => {
      const finance = { keyId: 'key_fin', scopes: ['approvals:decide' as const], labels: ['finance'] };
      let approvals: Gatehouse;
      const transfer = { session_id: 's1', action: 'payments.transfer', params: { amount: 9000 } };

      beforeEach(async () => {
        approvals = createGatehouse({
          store,
          clock,
          ids: createIdGenerator(clock),
          policy: compilePolicy(APPROVAL_POLICY),
        });
        await approvals.recordState(item());
      });

      it('stores, finds by digest, lists newest first and round-trips every field', async () => {
        const held = await approvals.evaluate(transfer, { keyId: 'key_agent' });
        const stored = (await store.getApproval('default', held.approval!.id))!;
        expect(stored).toEqual(await approvals.getApproval(held.approval!.id));
        expect(stored).toMatchObject({ requested_by: 'key_agent', uses_left: 1, comment: null });
        const latest = await store.transaction((tx) => tx.latestApprovalByDigest('default', stored.digest));
        expect(latest).toEqual(stored);
        expect(await store.getApproval('t2', stored.id)).toBeNull();
        clock.advance(1);
        await approvals.evaluate({ ...transfer, params: { amount: 9999 } });
        const listed = await store.listApprovals('default', { limit: 10 });
        expect(listed.map((a) => a.params['amount'])).toEqual([9999, 9000]);
        expect(await store.listApprovals('default', { limit: 10, before_id: listed[0]!.id })).toEqual([
          stored,
        ]);
        expect(await store.listApprovals('default', { limit: 10, status: 'approved' })).toEqual([]);
      });

      it('records every key that asked for a pending approval, once each, and refuses each as approver', async () => {
        const a = {
          keyId: 'key_a',
          scopes: ['gate:evaluate' as const, 'approvals:decide' as const],
          labels: ['finance'],
        };
        const b = { ...a, keyId: 'key_b' };
        const held = await approvals.evaluate(transfer, a);
        const id = held.approval!.id;
        for (const ctx of [b, a, b, undefined]) {
          expect((await approvals.evaluate(transfer, ctx)).approval!.id).toBe(id);
        }
        const stored = (await store.getApproval('default', id))!;
        expect(stored).toMatchObject({ requested_by: 'key_a', requesters: ['key_a', 'key_b', 'in-process'] });
        expect(await store.transaction((tx) => tx.addApprovalRequester('default', id, 'key_b'))).toBe(false);
        expect(await store.transaction((tx) => tx.addApprovalRequester('default', 'apr_none', 'key_c'))).toBe(
          false,
        );
        expect(await store.transaction((tx) => tx.addApprovalRequester('t2', id, 'key_c'))).toBe(false);
        expect(await store.transaction((tx) => tx.addApprovalRequester('default', id, 'key_c'))).toBe(true);
        expect((await store.getApproval('default', id))!.requesters).toEqual([
          'key_a',
          'key_b',
          'in-process',
          'key_c',
        ]);
        for (const ctx of [a, b]) await expectCode(approvals.approve(id, {}, ctx), 'forbidden');
        expect(await approvals.approve(id, {}, finance)).toMatchObject({ status: 'approved' });
      });

      it('a transition applies only from the expected status', async () => {
        const held = await approvals.evaluate(transfer);
        const id = held.approval!.id;
        const at = clock().toISOString();
        const change = {
          to: 'denied' as const,
          updated_at: at,
          decided_by: 'k',
          decided_at: at,
          comment: 'no',
        };
        expect(
          await store.transaction((tx) =>
            tx.transitionApproval('default', id, { ...change, from: ['approved'] }),
          ),
        ).toBe(false);
        expect(
          await store.transaction((tx) =>
            tx.transitionApproval('default', id, { ...change, from: ['pending'] }),
          ),
        ).toBe(true);
        expect(await store.getApproval('default', id)).toMatchObject({
          status: 'denied',
          decided_by: 'k',
          comment: 'no',
        });
      });

      it('refuses a second open approval for one digest', async () => {
        const held = await approvals.evaluate(transfer);
        const stored = (await store.getApproval('default', held.approval!.id))!;
        const copy = { ...stored, id: `${stored.id}x` };
        await expect(store.transaction((tx) => tx.insertApproval('default', copy))).rejects.toThrow();
        expect((await store.listApprovals('default', { limit: 10 })).length).toBe(1);
      });

      it('takes the last use exactly once, even when raced; never after expiry', async () => {
        const held = await approvals.evaluate(transfer);
        const id = held.approval!.id;
        await approvals.approve(id, {}, finance);
        const now = clock().toISOString();
        const takes = await Promise.all(
          Array.from({ length: 8 }, () => store.transaction((tx) => tx.consumeApproval('default', id, now))),
        );
        expect(takes.filter((t) => t !== null)).toEqual([{ uses_left: 0, status: 'used' }]);
        expect(await store.getApproval('default', id)).toMatchObject({ status: 'used', uses_left: 0 });

        clock.advance(1);
        const second = await approvals.evaluate({ ...transfer, params: { amount: 9001 } });
        await approvals.approve(second.approval!.id, {}, finance);
        const late = new Date(clock().getTime() + 15 * 60 * 1000).toISOString();
        expect(
          await store.transaction((tx) => tx.consumeApproval('default', second.approval!.id, late)),
        ).toBeNull();
        const due = await store.transaction((tx) => tx.listDueApprovals('default', late, 10));
        expect(due.map((a) => a.id)).toEqual([second.approval!.id]);
      });

      it('concurrent evaluations consume one approval once', async () => {
        const held = await approvals.evaluate(transfer);
        await approvals.approve(held.approval!.id, {}, finance);
        const decisions = await Promise.all(Array.from({ length: 6 }, () => approvals.evaluate(transfer)));
        expect(decisions.filter((d) => d.verdict === 'Allow')).toHaveLength(1);
        const pending = new Set(decisions.filter((d) => d.verdict === 'Block').map((d) => d.approval!.id));
        expect(pending.size).toBe(1);
        expect((await approvals.verifyHistory()).ok).toBe(true);
      });

      it('moves with a dump, labels of keys included', async () => {
        await approvals.evaluate(transfer);
        await store.insertApiKey({
          id: 'key_l',
          tenant_id: 'default',
          name: 'fin',
          prefix: 'gh_abc',
          hash: 'f'.repeat(64),
          scopes: ['approvals:decide'],
          sources: [],
          created_at: clock().toISOString(),
          revoked_at: null,
          labels: ['finance'],
        });
        const target = await factory.open();
        try {
          await target.loadRows(store.dumpRows());
          expect(await target.listApprovals('default', { limit: 10 })).toEqual(
            await store.listApprovals('default', { limit: 10 }),
          );
          expect((await target.findApiKeyByHash('f'.repeat(64)))?.labels).toEqual(['finance']);
        } finally {
          await target.close();
        }
      });
    });
    policyRevisionContract(
      () => ({ store, gh }),
      () => factory.open(),
    );
    describe('group commit', () => {
      let n = 0;
      /** Appends one event to `tenantId`'s chain in `tx`, as the core's append does. */
      async function appendOne(tx: StoreTx, tenantId: string, sessionId: string): Promise<StoredEvent> {
        const head = await tx.lockChainHead(tenantId);
        n += 1;
        const base = {
          event_id: `evt_group${n}`,
          seq: (head?.seq ?? 0) + 1,
          type: 'action_outcome' as const,
          session_id: sessionId,
          occurred_at: clock().toISOString(),
          data: { n },
          prev_hash: head?.hash ?? '0'.repeat(64),
        };
        const event: StoredEvent = {
          ...base,
          hash: hashEvent({ tenant_id: tenantId, ...base }),
          decision_id: null,
        };
        await tx.appendEvent(tenantId, event);
        return event;
      }
      const sessionsOf = async (tenantId: string) =>
        (await gh.readHistory({ order: 'asc' }, { tenantId })).events.map((e) => [e.seq, e.session_id]);

      it('commits concurrent callers of two tenants, interleaved, each on its own chain in order', async () => {
        const tenants = ['a', 'b'];
        const calls = Array.from({ length: 24 }, (_, i) =>
          i % 3 === 2
            ? gh.evaluate(
                { session_id: `s${i % 4}`, action: 'payments.transfer', params: { amount: i } },
                { tenantId: tenants[i % 2]! },
              )
            : gh.recordState(item({ session_id: `s${i % 4}`, value: String(i) }), {
                tenantId: tenants[i % 2]!,
              }),
        );
        await Promise.all(calls);
        for (const tenantId of tenants) {
          const events = (await gh.readHistory({ order: 'asc', limit: 500 }, { tenantId })).events;
          expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
          expect(events.filter((e) => e.type === 'gate_evaluation')).toHaveLength(4);
          expect(await gh.verifyHistory({ tenantId })).toMatchObject({ ok: true, checked: events.length });
        }
      });

      it('undoes only the failing caller: the next one chains on the head before it', async () => {
        const declared = (tenantId: string, fn: (tx: StoreTx) => Promise<unknown>) =>
          store.transaction(fn, { tenantId });
        const results = await Promise.allSettled([
          declared('default', (tx) => appendOne(tx, 'default', 'first')),
          declared('t2', (tx) => appendOne(tx, 't2', 'other-1')),
          declared('default', async (tx) => {
            await appendOne(tx, 'default', 'failed');
            await tx.insertItemVersion('default', storedItem('s1', clock));
            throw new Error('boom');
          }),
          declared('default', (tx) => appendOne(tx, 'default', 'second')),
          declared('t2', (tx) => appendOne(tx, 't2', 'other-2')),
        ]);
        expect(results.map((r) => r.status)).toEqual([
          'fulfilled',
          'fulfilled',
          'rejected',
          'fulfilled',
          'fulfilled',
        ]);
        expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ message: 'boom' });
        expect(await store.getItem('default', 's1', 'a.b')).toBeNull();
        expect(await sessionsOf('default')).toEqual([
          [1, 'first'],
          [2, 'second'],
        ]);
        expect(await sessionsOf('t2')).toEqual([
          [1, 'other-1'],
          [2, 'other-2'],
        ]);
        expect((await gh.verifyHistory()).ok).toBe(true);
        expect((await gh.verifyHistory({ tenantId: 't2' })).ok).toBe(true);
        // The failed caller's event took no seq: the chain goes on from 'second'.
        await gh.recordState(item());
        expect((await sessionsOf('default')).at(-1)).toEqual([3, 's1']);
      });

      it('undoes a failing rerunnable caller by running its rerunnable neighbours again, in order', async () => {
        const rerunnable = (fn: (tx: StoreTx) => Promise<unknown>) =>
          store.transaction(fn, { tenantId: 'default', rerunnable: true });
        const failing = (session: string) =>
          rerunnable(async (tx) => {
            await appendOne(tx, 'default', session);
            await tx.insertItemVersion('default', storedItem(session, clock));
            throw new Error(`boom ${session}`);
          });
        const results = await Promise.allSettled([
          rerunnable((tx) => appendOne(tx, 'default', 'r1')),
          rerunnable((tx) => appendOne(tx, 'default', 'r2')),
          failing('bad1'),
          rerunnable((tx) => appendOne(tx, 'default', 'r3')),
          store.transaction((tx) => appendOne(tx, 'default', 'n1'), { tenantId: 'default' }),
          failing('bad2'),
          rerunnable((tx) => appendOne(tx, 'default', 'r4')),
        ]);
        expect(results.map((r) => r.status)).toEqual([
          'fulfilled',
          'fulfilled',
          'rejected',
          'fulfilled',
          'fulfilled',
          'rejected',
          'fulfilled',
        ]);
        expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ message: 'boom bad1' });
        expect((results[5] as PromiseRejectedResult).reason).toMatchObject({ message: 'boom bad2' });
        // What each caller got is what was committed: the event it returned is in the chain.
        const committed = (await gh.readHistory({ order: 'asc' })).events;
        for (const r of results) {
          if (r.status === 'fulfilled') {
            const e = r.value as StoredEvent;
            expect(committed.find((c) => c.seq === e.seq)).toMatchObject({
              event_id: e.event_id,
              hash: e.hash,
            });
          }
        }
        expect(await sessionsOf('default')).toEqual([
          [1, 'r1'],
          [2, 'r2'],
          [3, 'r3'],
          [4, 'n1'],
          [5, 'r4'],
        ]);
        expect(await store.getItem('default', 'bad1', 'a.b')).toBeNull();
        expect(await store.getItem('default', 'bad2', 'a.b')).toBeNull();
        expect((await gh.verifyHistory()).ok).toBe(true);
      });

      it('leaves nothing of a caller that fails right after appending (a store may hold the event back)', async () => {
        const rerunnable = (fn: (tx: StoreTx) => Promise<unknown>) =>
          store.transaction(fn, { tenantId: 'default', rerunnable: true });
        const results = await Promise.allSettled([
          rerunnable((tx) => appendOne(tx, 'default', 'r1')),
          rerunnable(async (tx) => {
            await appendOne(tx, 'default', 'bad');
            throw new Error('boom');
          }),
          rerunnable(async (tx) => {
            await appendOne(tx, 'default', 'r2');
            // Read after append, in the same transaction: the caller sees its own event.
            return tx.queryEvents('default', { session_id: 'r2', order: 'asc', limit: 5 });
          }),
        ]);
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        expect((results[2] as PromiseFulfilledResult<StoredEvent[]>).value).toHaveLength(1);
        expect(await sessionsOf('default')).toEqual([
          [1, 'r1'],
          [2, 'r2'],
        ]);
        expect((await gh.verifyHistory()).ok).toBe(true);
      });

      it('sees the items and conflicts retention cleared earlier in the batch', async () => {
        await gh.recordState(item());
        const guess = await gh.recordState(item({ value: '9000', source: 'tool_output' }));
        const opts = { tenantId: 'default' };
        const seen = async (tx: StoreTx) => [
          (await tx.lockItem('default', 's1', 'budget.limit'))?.status,
          (await tx.listConflicts('default', { session_id: 's1', key: 'budget.limit', status: 'open' }))
            .length,
        ];
        const results = await Promise.all([
          store.transaction(seen, opts),
          store.transaction(async (tx) => {
            await tx.expireItems('default', [{ session_id: 's1', key: 'budget.limit', version: 1 }]);
            await tx.expireConflicts('default', [guess.conflict!.conflict_id], {
              erasedBy: 99,
              at: clock().toISOString(),
            });
          }, opts),
          store.transaction(seen, opts),
        ]);
        expect(results).toEqual([['conflicted', 1], undefined, ['erased', 0]]);
      });

      it("sees the webhook changes of earlier callers in the batch, and not a failed caller's", async () => {
        const w = await gh.createWebhook({ url: 'https://hooks.example.com/g', events: ['*'] });
        const status = async (tx: StoreTx) => (await tx.listWebhooks('default')).map((x) => x.status);
        const opts = { tenantId: 'default' };
        const results = await Promise.allSettled([
          store.transaction(status, opts),
          store.transaction((tx) => tx.updateWebhook('default', w.id, { status: 'disabled' }), opts),
          store.transaction(status, opts),
          store.transaction(async (tx) => {
            await tx.updateWebhook('default', w.id, { status: 'active' });
            expect(await status(tx)).toEqual(['active']);
            throw new Error('boom');
          }, opts),
          store.transaction(status, opts),
        ]);
        expect(results.map((r) => (r.status === 'fulfilled' ? r.value : 'rejected'))).toEqual([
          ['active'],
          undefined,
          ['disabled'],
          'rejected',
          ['disabled'],
        ]);
        expect((await gh.getWebhook(w.id)).status).toBe('disabled');
      });
    });

    describe('api keys', () => {
      it('stores keys by hash, lists by tenant, revokes', async () => {
        const key = {
          id: 'key_1',
          tenant_id: 't1',
          name: 'ci',
          prefix: 'gh_abcdef',
          hash: 'a'.repeat(64),
          scopes: ['gate:evaluate' as const],
          sources: ['tool_output'],
          created_at: clock().toISOString(),
          revoked_at: null,
          labels: [],
        };
        await store.insertApiKey(key);
        expect(await store.findApiKeyByHash(key.hash)).toEqual(key);
        expect(await store.listApiKeys('t2')).toEqual([]);
        expect(await store.countApiKeys()).toBe(1);
        expect(await store.revokeApiKey('key_1', clock().toISOString())).toBe(true);
        expect(await store.revokeApiKey('key_1', clock().toISOString())).toBe(false);
        expect((await store.findApiKeyByHash(key.hash))?.revoked_at).not.toBeNull();
      });

      it('inserts the first key only while there is none, even when raced', async () => {
        const make = (i: number) => ({
          id: `key_${i}`,
          tenant_id: 'default',
          name: 'bootstrap',
          prefix: `gh_${i}`,
          hash: String(i).repeat(64).slice(0, 64),
          scopes: ['admin' as const],
          sources: ['user_input'],
          created_at: clock().toISOString(),
          revoked_at: null,
          labels: [],
        });
        const results = await Promise.all([1, 2, 3, 4].map((i) => store.insertFirstApiKey(make(i))));
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await store.countApiKeys()).toBe(1);
        expect(await store.insertFirstApiKey(make(5))).toBe(false);
      });
    });
  });
}
