/**
 * Pruning a chain prefix behind a signed checkpoint, on real stores (SQLite files always,
 * PostgreSQL when configured): 600 of 1,000 events go with their values and deliveries; the kept
 * suffix verifies from the stored checkpoint and from a copy kept elsewhere; a suffix rewritten
 * together with the stored checkpoint (re-signed by another key) fails against that copy; the
 * events table refuses a DELETE no checkpoint covers; pruning inside the floor or without a key
 * is refused. A prune deletes in batches: when the process stops after the first, the chain still
 * verifies (the events left at or below the checkpoint are checked against it), a tampered one
 * among them fails, and the next retention run or prune finishes the deletion.
 */
import { afterAll, describe, expect, it } from 'vitest';
import {
  type CheckpointSigner,
  createGatehouse,
  type Gatehouse,
  GENESIS_HASH,
  generateCheckpointKeyPair,
  hashEvent,
  loadCheckpointPublicKey,
  loadCheckpointSigner,
  parseCheckpoint,
  type SealedEvent,
  type Store,
  type StoreTx,
  signCheckpoint,
} from '../../src/index.js';
import { STORE_TARGETS, type StoreTarget } from './storeTargets.js';

afterAll(async () => {
  for (const t of STORE_TARGETS) await t.cleanup();
});

const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const keyA = generateCheckpointKeyPair();
const keyB = generateCheckpointKeyPair();

interface World {
  store: Store;
  gh: Gatehouse;
  clock: { now: number };
}

async function world(target: StoreTarget, signer: CheckpointSigner | undefined): Promise<World> {
  const store = await target.open(target.place());
  const clock = { now: T0 };
  const gh = createGatehouse({
    store,
    clock: () => new Date(clock.now),
    checkWebhookUrl: async () => {},
    ...(signer ? { checkpointSigner: signer } : {}),
  });
  return { store, gh, clock };
}

/**
 * Writes 1,000 events, then prunes through seq 600 on a store that fails the second batch
 * deletion: decided (checkpoint and event) and one batch of 500 deleted.
 */
async function cutShortPrune(w: World, signer: CheckpointSigner): Promise<void> {
  await write1000(w);
  w.clock.now = T0 + 200 * DAY;
  const crashing = createGatehouse({
    store: crashingAt(w.store, 2),
    clock: () => new Date(w.clock.now),
    checkpointSigner: signer,
  });
  await expect(crashing.pruneHistory({ through_seq: 600 })).rejects.toThrow(/simulated crash/);
}

/** `count` state changes in one session, one a minute from T0; the clock then 400 days on. */
async function writeNotes({ gh, clock }: World, count: number) {
  for (let i = 0; i < count; i += 1) {
    clock.now = T0 + i * 60_000;
    await gh.recordState({
      session_id: 's1',
      key: 'agent.note',
      value: `v${i}`,
      type: 'fact',
      source: 'user_input',
    });
  }
  clock.now = T0 + 400 * DAY;
}

/** 1,000 state changes, one a minute from T0, each delivered to a webhook. */
async function write1000({ gh, clock }: World) {
  await gh.createWebhook({ url: 'https://hooks.example.com/in', events: ['state_change'] });
  for (let i = 0; i < 1000; i += 1) {
    clock.now = T0 + i * 60_000;
    await gh.recordState({
      session_id: `s${i % 10}`,
      key: 'agent.note',
      value: `value ${i}`,
      type: 'fact',
      source: 'user_input',
    });
  }
}

async function count(target: StoreTarget, store: Store, sql: string): Promise<number> {
  const [row] = await target.query(store, sql);
  return Number(Object.values(row!)[0]);
}

async function expectRefused(p: Promise<unknown>, message: RegExp) {
  await expect(p).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringMatching(message) });
}

/**
 * The store, but the process "stops" at the `n`th batch delete of a prune: that transaction
 * fails, and with it the prune, as a crash would leave it (earlier batches committed).
 */
function crashingAt(store: Store, n: number): Store {
  let deletes = 0;
  const tx = (inner: StoreTx): StoreTx =>
    new Proxy(inner, {
      get(target, prop) {
        if (prop === 'pruneEvents') {
          return async (t: string, seq: number) => {
            deletes += 1;
            if (deletes >= n) throw new Error('simulated crash');
            return target.pruneEvents(t, seq);
          };
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'transaction') {
        return (fn: (t: StoreTx) => Promise<unknown>, options?: unknown) =>
          target.transaction((inner) => fn(tx(inner)), options as never);
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

/** Changes one stored event behind the store's back (the UPDATE trigger lifted first). */
async function tamperEvent(target: StoreTarget, store: Store, seq: number) {
  const lift =
    target.name === 'sqlite'
      ? 'DROP TRIGGER IF EXISTS events_no_update;'
      : 'ALTER TABLE events DISABLE TRIGGER events_no_update_or_delete;';
  await target.exec(
    store,
    `${lift}\nUPDATE events SET occurred_at = '2020-01-01T00:00:00.000Z' WHERE tenant_id = 'default' AND seq = ${seq};`,
  );
}

/** Rewrites the kept suffix to link to `forgedHash`, as an attacker with the database could. */
async function rewriteSuffix(target: StoreTarget, store: Store, forgedHash: string) {
  const events: SealedEvent[] = [];
  for await (const page of store.scanEvents('default')) events.push(...page);
  let prev = forgedHash;
  const updates: string[] = [];
  for (const e of events) {
    const hash = hashEvent({
      tenant_id: 'default',
      seq: e.seq,
      event_id: e.event_id,
      type: e.type,
      session_id: e.session_id,
      occurred_at: e.occurred_at,
      data: e.data,
      prev_hash: prev,
    });
    updates.push(
      `UPDATE events SET prev_hash = '${prev}', hash = '${hash}' WHERE tenant_id = 'default' AND seq = ${e.seq};`,
    );
    prev = hash;
  }
  const lift =
    target.name === 'sqlite'
      ? ['DROP TRIGGER events_no_update;']
      : ['ALTER TABLE events DISABLE TRIGGER events_no_update_or_delete;'];
  await target.exec(store, [...lift, ...updates].join('\n'));
}

describe.each(STORE_TARGETS)('pruning behind a signed checkpoint on $name', (target) => {
  it('prunes 600 of 1,000 events; the suffix verifies from the stored and an external checkpoint; a rewrite of both fails', async () => {
    const signer = loadCheckpointSigner(keyA.privateKey);
    const w = await world(target, signer);
    const { store, gh, clock } = w;
    try {
      await write1000(w);
      expect(await count(target, store, 'SELECT count(*) FROM deliveries')).toBe(1000);

      // Inside the floor (183 days): refused, and nothing changes.
      clock.now = T0 + 100 * DAY;
      await expectRefused(gh.pruneHistory({ through_seq: 600 }), /retention floor of 183 days/);
      // The events table itself refuses a DELETE no checkpoint covers.
      await expect(
        target.exec(store, `DELETE FROM events WHERE tenant_id = 'default' AND seq = 1`),
      ).rejects.toThrow(/append-only/);
      expect(await count(target, store, 'SELECT count(*) FROM events')).toBe(1000);

      clock.now = T0 + 200 * DAY;
      const report = await gh.pruneHistory({ through_seq: 600, reference: 'RET-1' });
      expect(report).toMatchObject({
        from_seq: 1,
        through_seq: 600,
        events: 600,
        below_floor: false,
        event: { seq: 1001 },
        checkpoint: { tenant_id: 'default', seq: 600, event_count: 600, key_id: signer.keyId },
      });
      // The checkpoint kept elsewhere: a file's JSON.
      const external = parseCheckpoint(JSON.stringify(report.checkpoint));

      expect(await count(target, store, 'SELECT count(*) FROM events')).toBe(401);
      expect(await count(target, store, 'SELECT min(seq) FROM events')).toBe(601);
      expect(await count(target, store, 'SELECT count(*) FROM event_values WHERE seq <= 600')).toBe(0);
      expect(await count(target, store, 'SELECT count(*) FROM deliveries')).toBe(400);
      expect(await count(target, store, 'SELECT count(*) FROM checkpoints')).toBe(1);

      const pruned = (await gh.readHistory({ type: 'retention.pruned' })).events[0]!;
      expect(pruned.data).toMatchObject({
        from_seq: 1,
        through_seq: 600,
        events: 600,
        checkpoint_seq: 600,
        checkpoint_hash: report.checkpoint.hash,
        key_id: signer.keyId,
        reference: 'RET-1',
      });

      const stored = await gh.verifyHistory();
      expect(stored).toMatchObject({ ok: true, checked: 401, pruned_through: 600, problem: null });
      const publicA = loadCheckpointPublicKey(keyA.publicKey);
      expect(await gh.verifyFromCheckpoint({ checkpoint: external, public_key: publicA })).toMatchObject({
        ok: true,
        checked: 401,
        pruned_through: 600,
      });
      // An external checkpoint signed by another key proves nothing.
      expect(
        await gh.verifyFromCheckpoint({
          checkpoint: external,
          public_key: loadCheckpointPublicKey(keyB.publicKey),
        }),
      ).toMatchObject({ ok: false });

      // The attacker rewrites the suffix onto a forged prefix and re-signs the stored checkpoint
      // with a key of their own.
      const forgedHash = 'f'.repeat(64);
      await rewriteSuffix(target, store, forgedHash);
      const forged = signCheckpoint(
        {
          tenant_id: 'default',
          seq: 600,
          hash: forgedHash,
          event_count: 600,
          created_at: external.created_at,
        },
        loadCheckpointSigner(keyB.privateKey),
      );
      await target.exec(
        store,
        `DELETE FROM checkpoints; INSERT INTO checkpoints (tenant_id, seq, hash, event_count, created_at, key_id, signature)
         VALUES ('default', 600, '${forged.hash}', 600, '${forged.created_at}', '${forged.key_id}', '${forged.signature}')`,
      );
      // Consistent with the attacker's key: the rewrite itself is sound…
      const attackers = createGatehouse({
        store,
        checkpointPublicKey: loadCheckpointPublicKey(keyB.publicKey),
      });
      expect(await attackers.verifyHistory()).toMatchObject({ ok: true, checked: 401 });
      // …but fails with the configured key, and against the checkpoint kept elsewhere.
      expect(await gh.verifyHistory()).toMatchObject({
        ok: false,
        first_bad_seq: 600,
        problem: expect.stringMatching(/signed by key .* not by the configured key/),
      });
      expect(await gh.verifyFromCheckpoint({ checkpoint: external, public_key: publicA })).toMatchObject({
        ok: false,
        first_bad_seq: 601,
        problem: expect.stringMatching(/does not link to the previous hash/),
      });
    } finally {
      await store.close();
    }
  }, 120_000);

  it('prunes in batches: cut short after the first, the chain verifies and the next run finishes it', async () => {
    const signer = loadCheckpointSigner(keyA.privateKey);
    const w = await world(target, signer);
    const { store, gh } = w;
    try {
      await cutShortPrune(w, signer);
      // Decided (checkpoint and event) and one batch of 500 deleted; 501..600 still stored.
      expect(await count(target, store, 'SELECT count(*) FROM checkpoints')).toBe(1);
      expect(await count(target, store, 'SELECT min(seq) FROM events')).toBe(501);
      expect(await count(target, store, 'SELECT count(*) FROM events')).toBe(501);
      expect(await count(target, store, 'SELECT count(*) FROM deliveries')).toBe(500);
      expect(await count(target, store, 'SELECT min(seq) FROM event_values')).toBe(501);
      const report = (await gh.readHistory({ type: 'retention.pruned' })).events[0]!;
      expect(report.data).toMatchObject({ from_seq: 1, through_seq: 600, events: 600 });
      const checkpoint = parseCheckpoint(
        JSON.stringify(await store.transaction(async (tx) => (await tx.checkpointAt('default', 600))!)),
      );

      // The events left at or below the checkpoint are verified with the chain, against it.
      expect(await gh.verifyHistory()).toMatchObject({
        ok: true,
        checked: 501,
        pruned_through: 600,
        verified_fields: 1000,
      });
      const publicA = loadCheckpointPublicKey(keyA.publicKey);
      expect(await gh.verifyFromCheckpoint({ checkpoint, public_key: publicA })).toMatchObject({
        ok: true,
        checked: 501,
      });
      // The retention run (no retention set) finishes the deletion.
      const run = await gh.runRetention();
      expect(run).toMatchObject({ finished_prune: 100, pruned: null, problem: null });
      expect(await count(target, store, 'SELECT min(seq) FROM events')).toBe(601);
      expect(await count(target, store, 'SELECT count(*) FROM deliveries')).toBe(400);
      expect(await count(target, store, 'SELECT count(*) FROM event_values WHERE seq <= 600')).toBe(0);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, checked: 401, pruned_through: 600 });
      expect((await gh.runRetention()).finished_prune).toBe(0);
      // A prune at or below the one decided is refused, and says why.
      await expectRefused(gh.pruneHistory({ through_seq: 600 }), /through seq 600 are already pruned/);
    } finally {
      await store.close();
    }
  }, 120_000);

  it('a tampered event left below the checkpoint by a cut-short prune fails verify; a later prune finishes the deletion', async () => {
    const signer = loadCheckpointSigner(keyA.privateKey);
    const w = await world(target, signer);
    const { store, gh } = w;
    try {
      await cutShortPrune(w, signer);
      await tamperEvent(target, store, 550);
      expect(await gh.verifyHistory()).toMatchObject({
        ok: false,
        first_bad_seq: 550,
        problem: expect.stringMatching(/was altered/),
      });
      // The next prune first deletes what the last one covers, then its own range.
      const next = await gh.pruneHistory({ through_seq: 700 });
      expect(next).toMatchObject({ from_seq: 601, through_seq: 700, events: 100 });
      expect(await count(target, store, 'SELECT min(seq) FROM events')).toBe(701);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, pruned_through: 700 });
    } finally {
      await store.close();
    }
  }, 120_000);

  it('refuses pruning without a checkpoint key, and a pruned chain without a checkpoint fails verify', async () => {
    const w = await world(target, undefined);
    const { store, gh, clock } = w;
    try {
      await write1000(w);
      clock.now = T0 + 200 * DAY;
      await expectRefused(gh.pruneHistory({ through_seq: 600 }), /No checkpoint key is configured/);
      // Below the floor only when asked, and recorded.
      const signed = createGatehouse({
        store,
        clock: () => new Date(clock.now),
        checkpointSigner: loadCheckpointSigner(keyA.privateKey),
      });
      clock.now = T0 + 10 * DAY;
      const report = await signed.pruneHistory({ through_seq: 10, allow_below_floor: true });
      expect(report.below_floor).toBe(true);
      expect((await signed.readHistory({ type: 'retention.pruned' })).events[0]!.data).toMatchObject({
        below_floor: true,
      });
      // Without a public key the stored checkpoint cannot be trusted.
      expect(await gh.verifyHistory()).toMatchObject({
        ok: false,
        problem: expect.stringMatching(/no checkpoint public key is configured/),
      });
      await target.exec(store, 'DELETE FROM checkpoints');
      expect(await signed.verifyHistory()).toMatchObject({
        ok: false,
        first_bad_seq: 11,
        problem: expect.stringMatching(/missing and no checkpoint covers them/),
      });
      expect(GENESIS_HASH).toHaveLength(64);
    } finally {
      await store.close();
    }
  }, 120_000);

  it('a prune through a seq checkpointed with another key re-signs it with the key configured now', async () => {
    const w = await world(target, loadCheckpointSigner(keyA.privateKey));
    const { store, gh, clock } = w;
    try {
      await writeNotes(w, 40);
      expect((await gh.createCheckpoint()).seq).toBe(40);
      const rotated = createGatehouse({
        store,
        clock: () => new Date(clock.now),
        checkpointSigner: loadCheckpointSigner(keyB.privateKey),
      });
      const pruned = await rotated.pruneHistory({ through_seq: 40 });
      const stored = await store.transaction((tx) => tx.checkpointAt('default', 40));
      expect(stored).toEqual(pruned.checkpoint);
      expect(await rotated.verifyHistory()).toMatchObject({ ok: true, pruned_through: 40 });
    } finally {
      await store.close();
    }
  });

  it('a checkpoint at the head proves no prune: verify anchors on the latest prune, and fails where events went without one', async () => {
    const signer = loadCheckpointSigner(keyA.privateKey);
    const w = await world(target, signer);
    const { store, gh } = w;
    try {
      await writeNotes(w, 60);
      // A checkpoint at the head, then a prune through the same seq: one checkpoint serves both.
      expect((await gh.createCheckpoint()).seq).toBe(60);
      await gh.pruneHistory({ through_seq: 20 });
      const pruned = await gh.pruneHistory({ through_seq: 60 });
      expect(pruned.checkpoint.seq).toBe(60);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, pruned_through: 60 });

      // Later events and a head checkpoint past the prune: the prune's checkpoint stays the anchor.
      for (let i = 0; i < 20; i += 1) {
        await gh.recordState({
          session_id: 's1',
          key: 'agent.note',
          value: `w${i}`,
          type: 'fact',
          source: 'user_input',
        });
      }
      const head = await gh.createCheckpoint();
      expect(head.seq).toBe(82);
      expect(await gh.verifyHistory()).toMatchObject({ ok: true, checked: 22, pruned_through: 60 });

      // The head checkpoint lets the events table take a DELETE, but no prune is on the chain.
      await target.exec(store, "DELETE FROM events WHERE tenant_id = 'default' AND seq <= 61");
      expect(await gh.verifyHistory()).toMatchObject({
        ok: false,
        first_bad_seq: 62,
        problem: 'events before seq 62 are missing; the checkpoint is at seq 60',
      });
      // With the prune's own event gone too, nothing anchors the chain.
      await target.exec(store, "DELETE FROM event_values WHERE tenant_id = 'default' AND seq <= 70");
      await target.exec(store, "DELETE FROM events WHERE tenant_id = 'default' AND seq <= 70");
      expect(await gh.verifyHistory()).toMatchObject({
        ok: false,
        first_bad_seq: 71,
        problem: 'events before seq 71 are missing and no checkpoint covers them',
      });
    } finally {
      await store.close();
    }
  });
});
