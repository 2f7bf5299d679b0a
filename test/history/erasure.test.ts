/**
 * Erasure of a session on real stores (SQLite files always, PostgreSQL when configured): a random
 * marker written as a state value, in params and so in a rendered reason, is found in the raw
 * database files, the export, the history and the webhook payloads before the erasure — so the
 * scans work — and nowhere after it; verify names exactly the erased fields and still fails on
 * every kind of tampering; a 4-digit value cannot be recovered from its commitment.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/canonicalJson.js';
import {
  type CallContext,
  commitField,
  compilePolicy,
  createGatehouse,
  type Gatehouse,
  type SealedEvent,
  type Store,
} from '../../src/index.js';
import { STORE_TARGETS, type StoreTarget } from './storeTargets.js';

const POLICY = `
version: 1
actions:
  "payments.*":
    requires:
      - key: budget.limit
        min_trust: user_input
    rules:
      - name: over_budget
        when: "double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} to {params.to} exceeds the budget of {state['budget.limit'].value}"
  "refunds.*":
    rules:
      - name: refund_review
        when: "true"
        verdict: Block
        message: "Refund for {params.to} needs a second look"
        approval: { expires_in: 1h, allow_self_approval: true }
`;

afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

async function expectRefused(p: Promise<unknown>) {
  await expect(p).rejects.toMatchObject({ code: 'invalid_request' });
}

async function dump(store: Store): Promise<string> {
  const rows: unknown[] = [];
  for await (const r of store.dumpRows()) rows.push(r);
  return JSON.stringify(rows);
}

let claims = 0;
/** The payloads the webhook would get now (claimed later each time, so every lease has run out). */
async function payloads(store: Store): Promise<string> {
  claims += 1;
  const far = new Date(Date.now() + 365 * 86_400_000 * claims).toISOString();
  const claimed = await store.claimDueDeliveries({ now: far, leaseUntil: far, limit: 100 });
  return claimed.map((c) => c.event_data_json ?? JSON.stringify(c.event.data)).join('\n');
}

function rawFiles(place: string): Buffer {
  return Buffer.concat([place, `${place}-wal`].filter(existsSync).map((f) => readFileSync(f)));
}

interface World {
  store: Store;
  gh: Gatehouse;
  place: string;
  marker: string;
}

async function world(target: StoreTarget): Promise<World> {
  const place = target.place();
  const store = await target.open(place);
  const gh = createGatehouse({ store, policy: compilePolicy(POLICY), checkWebhookUrl: async () => {} });
  return { store, gh, place, marker: `mk${randomBytes(8).toString('hex')}` };
}

/** Writes the marker into session `erase-me` (state, metadata, params, reason, outcome) and some of `keep-me`. */
async function writeSessions({ gh, marker }: World) {
  await gh.createWebhook({ url: 'https://hooks.example.com/in', events: ['*'] });
  for (const session_id of ['erase-me', 'keep-me']) {
    await gh.recordState({
      session_id,
      key: 'budget.limit',
      value: '5000',
      type: 'fact',
      source: 'user_input',
    });
  }
  await gh.recordState({
    session_id: 'erase-me',
    key: 'user.name',
    value: marker,
    type: 'fact',
    source: 'user_input',
    metadata: { said_by: marker },
  });
  const blocked = await gh.evaluate({
    session_id: 'erase-me',
    action: 'payments.transfer',
    params: { amount: 9000, to: marker },
  });
  expect(blocked.reason).toContain(marker);
  await gh.recordOutcome(blocked.decision_id, { outcome: 'failed', detail: `refused for ${marker}` });
  const held = await gh.evaluate({ session_id: 'erase-me', action: 'refunds.issue', params: { to: marker } });
  expect(held.approval?.status).toBe('pending');
  await gh.evaluate({
    session_id: 'keep-me',
    action: 'payments.transfer',
    params: { amount: 10, to: 'Bob' },
  });
  return { blocked, held };
}

describe.each(STORE_TARGETS)('erasure on $name', (target) => {
  it('leaves no trace of the marker in files, export, history or webhook payloads, and verify names what went', async () => {
    const w = await world(target);
    const { store, gh, marker } = w;
    try {
      const { blocked, held } = await writeSessions(w);
      // Before: every scan finds the marker, so a scan that finds nothing later means something.
      if (target.name === 'sqlite') expect(rawFiles(w.place).includes(marker)).toBe(true);
      expect(await dump(store)).toContain(marker);
      expect(JSON.stringify(await gh.readHistory({ limit: 500 }))).toContain(marker);
      expect(await payloads(store)).toContain(marker);

      const dry = await gh.eraseSession({ session_id: 'erase-me', dry_run: true });
      expect(dry).toMatchObject({
        dry_run: true,
        state_items: ['budget.limit', 'user.name'],
        pending_approvals: [held.approval!.id],
        erasure: null,
      });
      expect(dry.events.map((e) => e.type)).toEqual([
        'state_change',
        'state_change',
        'gate_evaluation',
        'action_outcome',
        'gate_evaluation',
        'approval.requested',
      ]);
      expect(dry.events.find((e) => e.type === 'gate_evaluation')!.paths).toEqual(
        expect.arrayContaining(['/params', '/context', '/reason', '/reasons/0/message']),
      );
      expect(dry.pending_deliveries.length).toBeGreaterThan(0);
      // A dry run changes nothing.
      expect(JSON.stringify(await gh.readHistory({ limit: 500 }))).toContain(marker);

      const report = await gh.eraseSession(
        { session_id: 'erase-me', reference: 'ticket-42' },
        { keyId: 'key_dpo' },
      );
      expect(report.erasure).not.toBeNull();
      expect({ ...report, erasure: null, dry_run: true }).toEqual({ ...dry, reference: 'ticket-42' });

      // After: nowhere.
      if (target.name === 'sqlite') expect(rawFiles(w.place).includes(marker)).toBe(false);
      expect(await dump(store)).not.toContain(marker);
      const history = await gh.readHistory({ limit: 500, order: 'asc' });
      expect(JSON.stringify(history)).not.toContain(marker);
      expect(await payloads(store)).not.toContain(marker);

      // Readers show erased fields as erased, and keep the envelope.
      const by = report.erasure!.seq;
      const decision = await gh.getDecision(blocked.decision_id);
      expect(decision).toMatchObject({
        verdict: 'Block',
        reasons: [{ rule: 'over_budget', verdict: 'Block', message: { erased: true, by } }],
        reason: { erased: true, by },
        params: { erased: true, by },
        state_versions: blocked.state_versions,
      });
      expect(await gh.getItem('erase-me', 'user.name')).toMatchObject({ value: '', status: 'erased' });
      expect(await gh.getApproval(held.approval!.id)).toMatchObject({
        status: 'denied',
        params: { erased: true, by },
      });
      const erasureEvent = history.events.at(-1)!;
      expect(erasureEvent).toMatchObject({
        type: 'erasure.completed',
        session_id: 'erase-me',
        data: { reference: 'ticket-42', requested_by: 'key_dpo', fields: report.fields },
      });
      // The erasure event goes to webhooks too, so receivers can erase their copies.
      expect(await payloads(store)).toContain('"requested_by":"key_dpo"');
      // The other session is untouched.
      expect(await gh.getItem('keep-me', 'budget.limit')).toMatchObject({ value: '5000', status: 'current' });
      // An erased required key is missing to the gate: fail closed.
      const after = await gh.evaluate({
        session_id: 'erase-me',
        action: 'payments.transfer',
        params: { amount: 1 },
      });
      expect(after.reasons.map((r) => r.rule)).toContain('required_missing');

      const verified = await gh.verifyHistory();
      expect(verified.ok).toBe(true);
      const named = report.events.flatMap((e) => e.paths.map((path) => ({ seq: e.seq, path })));
      expect(verified.erased).toEqual(named);
      expect(verified.erased_fields).toBe(report.fields);
      expect(verified.verified_fields).toBeGreaterThan(0);

      // Replay counts the decisions it can no longer replay.
      const replay = await gh.replayPolicy({ policy: POLICY });
      expect(replay.unreplayable).toBe(2);
      expect(replay.decisions).toBeGreaterThan(0);

      // A second erasure finds only what was written since (the evaluation above).
      const again = await gh.eraseSession({ session_id: 'erase-me', dry_run: true });
      expect(again).toMatchObject({ state_items: [], pending_approvals: [], approved_approvals: [] });
      expect(again.events.map((e) => e.type)).toEqual(['gate_evaluation']);
    } finally {
      await store.close();
    }
  });

  describe('verify still fails on tampering', () => {
    async function erasedWorld() {
      const w = await world(target);
      await writeSessions(w);
      const report = await w.gh.eraseSession({ session_id: 'erase-me' });
      expect((await w.gh.verifyHistory()).ok).toBe(true);
      const keep = (await w.gh.readHistory({ session_id: 'keep-me', type: 'state_change' })).events[0]!;
      return { ...w, report, keepSeq: keep.seq };
    }
    const liftTrigger = (t: StoreTarget) =>
      t.name === 'sqlite'
        ? 'DROP TRIGGER events_no_update'
        : 'ALTER TABLE events DISABLE TRIGGER events_no_update_or_delete';

    it('a changed kept value (commitment mismatch)', async () => {
      const w = await erasedWorld();
      try {
        await target.exec(
          w.store,
          `UPDATE event_values SET fields = replace(fields, '5000', '5001') WHERE seq = ${w.keepSeq}`,
        );
        expect(await w.gh.verifyHistory()).toMatchObject({
          ok: false,
          first_bad_seq: w.keepSeq,
          problem: expect.stringMatching(/does not match its commitment/),
        });
      } finally {
        await w.store.close();
      }
    });

    it('a value row deleted without an erasure event', async () => {
      const w = await erasedWorld();
      try {
        await target.exec(w.store, `DELETE FROM event_values WHERE seq = ${w.keepSeq}`);
        expect(await w.gh.verifyHistory()).toMatchObject({
          ok: false,
          first_bad_seq: w.keepSeq,
          problem: expect.stringMatching(/without an erasure/),
        });
      } finally {
        await w.store.close();
      }
    });

    it('values of another session marked erased by the erasure event', async () => {
      const w = await erasedWorld();
      try {
        await target.exec(
          w.store,
          `UPDATE event_values SET fields = NULL, erased_by = ${w.report.erasure!.seq} WHERE seq = ${w.keepSeq}`,
        );
        expect(await w.gh.verifyHistory()).toMatchObject({
          ok: false,
          first_bad_seq: w.report.erasure!.seq,
          problem: expect.stringMatching(/does not name exactly/),
        });
      } finally {
        await w.store.close();
      }
    });

    it('a changed erasure event', async () => {
      const w = await erasedWorld();
      try {
        await target.exec(w.store, liftTrigger(target));
        await target.exec(
          w.store,
          `UPDATE events SET data = replace(data, '"fields":${w.report.fields}', '"fields":1') WHERE type = 'erasure.completed'`,
        );
        expect(await w.gh.verifyHistory()).toMatchObject({
          ok: false,
          first_bad_seq: w.report.erasure!.seq,
          problem: expect.stringMatching(/altered/),
        });
      } finally {
        await w.store.close();
      }
    });
  });

  it('a 4-digit value cannot be recovered from its commitment once its salt is gone', async () => {
    const w = await world(target);
    const { store, gh } = w;
    try {
      const pin = String(1000 + Math.floor(Math.random() * 9000));
      const written = await gh.recordState({
        session_id: 'pin',
        key: 'card.pin',
        value: pin,
        type: 'fact',
        source: 'user_input',
      });
      const sealedOf = async (seq: number) => {
        for await (const page of store.scanEvents('default')) {
          const e = page.find((x) => x.seq === seq);
          if (e) return e as SealedEvent;
        }
        throw new Error(`no event ${seq}`);
      };
      const seq = (await gh.readHistory({ session_id: 'pin' })).events[0]!.seq;
      void written;
      const before = await sealedOf(seq);
      const commitment = (before.data['commitments'] as Record<string, string>)['/value']!;
      const candidates = Array.from({ length: 10_000 }, (_, n) => String(n).padStart(4, '0'));
      // With the salt (before erasure) trying every PIN finds it: the search itself works.
      const field = (before.values as { fields: Record<string, { salt: string }> }).fields['/value']!;
      const salt = field.salt;
      expect(salt).toMatch(/^[0-9a-f]{32,}$/);
      expect(candidates.filter((c) => commitField(salt, c) === commitment)).toEqual([pin]);

      await gh.eraseSession({ session_id: 'pin' });
      const after = await sealedOf(seq);
      expect(after.values).toEqual({ erased_by: expect.any(Number) });
      expect(JSON.stringify(after)).not.toContain(field.salt);
      // Without it, no candidate matches: neither unsalted nor with any salt left in the database.
      const unsalted = (c: string) => createHash('sha256').update(canonicalJson(c)).digest('hex');
      expect(candidates.filter((c) => unsalted(c) === commitment)).toEqual([]);
      expect(await dump(store)).not.toContain(field.salt);
    } finally {
      await store.close();
    }
  });

  it("a subject tag lets one request erase all of a person's sessions, and the tag itself", async () => {
    const w = await world(target);
    const { store, gh, marker } = w;
    try {
      for (const session_id of ['visit-1', 'visit-2', 'other']) {
        await gh.recordState({
          session_id,
          key: 'user.name',
          value: `${marker}-${session_id}`,
          type: 'fact',
          source: 'user_input',
        });
      }
      const subject = `p-${marker}`;
      await gh.tagSession({ session_id: 'visit-1', subject });
      expect(await gh.tagSession({ session_id: 'visit-2', subject })).toMatchObject({
        session_id: 'visit-2',
        subject,
      });
      await gh.tagSession({ session_id: 'other', subject: 'p-someone-else' });
      await expectRefused(gh.tagSession({ session_id: 'visit-1', subject: 'alice@example.com' }));
      // An agent's key (state:write) tags sessions, but cannot move one out of a subject's erasure.
      const agent = { keyId: 'key_agent', scopes: ['state:write' as const] };
      await expect(gh.tagSession({ session_id: 'visit-2', subject: 'p-decoy' }, agent)).rejects.toMatchObject(
        {
          code: 'forbidden',
          requiredScope: 'data:erase',
        },
      );
      await gh.tagSession({ session_id: 'visit-2', subject }, agent);
      await gh.tagSession({ session_id: 'visit-3', subject: 'p-new' }, agent);
      const eraser = { keyId: 'key_dpo', scopes: ['data:erase' as const] };
      await gh.tagSession({ session_id: 'visit-3', subject: 'p-moved' }, eraser);

      const dry = await gh.eraseSubject({ subject, dry_run: true });
      expect(dry.sessions.map((s) => [s.session_id, s.fields])).toEqual([
        ['visit-1', 2],
        ['visit-2', 2],
      ]);
      const dpo = {
        keyId: 'key_dpo',
        scopes: ['data:erase' as const],
        principal: { kind: 'key' as const, key_id: 'key_dpo' },
      };
      const done = await gh.eraseSubject({ subject, reference: 'DSR-8' }, dpo);
      expect(done.sessions.map((s) => s.erasure !== null)).toEqual([true, true]);
      // Who erased is on the erasure events, as on every event a caller causes.
      const erasures = await gh.readHistory({ type: 'erasure.completed', limit: 5 });
      expect(erasures.events.map((e) => e.data['principal'])).toEqual([
        { kind: 'key', key_id: 'key_dpo' },
        { kind: 'key', key_id: 'key_dpo' },
      ]);

      const text = JSON.stringify(await gh.readHistory({ limit: 500 }));
      expect(text).not.toContain(`${marker}-visit`);
      expect(text).toContain(`${marker}-other`);
      // The tag went too: the subject is nowhere in the database, and a second request finds nothing.
      expect(await dump(store)).not.toContain(subject);
      if (target.name === 'sqlite') expect(rawFiles(w.place).includes(subject)).toBe(false);
      expect((await gh.eraseSubject({ subject, dry_run: true })).sessions).toEqual([]);
      const verified = await gh.verifyHistory();
      expect(verified).toMatchObject({ ok: true, erased_fields: 4 });
    } finally {
      await store.close();
    }
  });

  it('an erasure by a token holder denies and expires held decisions and still verifies', async () => {
    const w = await world(target);
    const officer: CallContext = {
      keyId: 'sub_0123456789abcdef',
      scopes: ['admin'],
      principal: { kind: 'oidc', iss: 'https://idp.example', sub: 'dpo@idp.example', client_id: 'console' },
    };
    try {
      const refund = { session_id: 'erase-me', action: 'refunds.issue', params: { to: w.marker } };
      const pending = await w.gh.evaluate(refund);
      const approved = await w.gh.evaluate({ ...refund, params: { to: 'Bob' } });
      await w.gh.approve(approved.approval!.id, {}, officer);
      expect(pending.approval?.status).toBe('pending');

      const report = await w.gh.eraseSession({ session_id: 'erase-me', reference: 'DSR-9' }, officer);
      expect(report).toMatchObject({ pending_approvals: [pending.approval!.id] });
      expect(report.approved_approvals).toEqual([approved.approval!.id]);
      const verified = await w.gh.verifyHistory();
      expect(verified).toMatchObject({ ok: true, problem: null });
      // The events the erasure appended keep who erased: that is not the session's content.
      const { events } = await w.gh.readHistory({ session_id: 'erase-me', order: 'asc', limit: 100 });
      const after = events.filter((e) => e.seq > report.erasure!.seq - 3);
      expect(after.map((e) => [e.type, (e.data['principal'] as { sub?: unknown })?.sub])).toEqual([
        ['approval.denied', 'dpo@idp.example'],
        ['approval.expired', 'dpo@idp.example'],
        ['erasure.completed', 'dpo@idp.example'],
      ]);
      expect(JSON.stringify(events)).not.toContain(w.marker);
    } finally {
      await w.store.close();
    }
  });

  it('the same value in two events gives two commitments', async () => {
    const w = await world(target);
    try {
      for (const session_id of ['a', 'b']) {
        await w.gh.recordState({
          session_id,
          key: 'user.name',
          value: 'Alice',
          type: 'fact',
          source: 'user_input',
        });
      }
      const commitments: string[] = [];
      for await (const page of w.store.scanEvents('default')) {
        for (const e of page) commitments.push((e.data['commitments'] as Record<string, string>)['/value']!);
      }
      expect(new Set(commitments).size).toBe(2);
    } finally {
      await w.store.close();
    }
  });
});
