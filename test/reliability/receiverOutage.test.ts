/**
 * A webhook receiver down for hours (connection refused on its loopback port), then back: every
 * matching event is delivered, nothing else is, every attempt is recorded, and the receiver —
 * `verifyWebhook` + `createDeduper` — processes each `webhook-id` exactly once, even when a
 * response is lost after processing and the sender retries. The dispatcher runs in-process on a
 * manual clock, so hours of backoff take no real time.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../adapters/sqlite/index.js';
import {
  assertWebhookUrlAllowed,
  createDeduper,
  createWebhookDispatcher,
  verifyWebhook,
} from '../../adapters/webhooks/index.js';
import { compilePolicy, createGatehouse, createIdGenerator } from '../../src/index.js';
import { manualClock } from '../store/contract.js';
import { POLICY } from './fixtures.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A free loopback port, closed again: connecting to it is refused until someone listens. */
async function refusedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((r) => probe.close(() => r()));
  return port;
}

describe('receiver outage', () => {
  it('delivers every matching event once the receiver is back; each webhook-id is processed once', async () => {
    const port = await refusedPort();
    const url = `http://127.0.0.1:${port}/hook`;
    const clock = manualClock(new Date().toISOString());
    const store = openSqliteStore();
    const gh = createGatehouse({
      store,
      clock,
      ids: createIdGenerator(clock),
      policy: compilePolicy(POLICY),
      checkWebhookUrl: async (u) => {
        await assertWebhookUrlAllowed(u, { policy: { allowInsecureLoopback: true } });
      },
    });
    const dispatcher = createWebhookDispatcher({
      store,
      urlPolicy: { allowInsecureLoopback: true },
      clock,
      random: () => 0.5,
      timeoutMs: 2_000,
    });
    cleanups.push(async () => {
      await dispatcher.close();
      await store.close();
    });

    // Subscribed: state changes and decisions of session s1. Not: conflicts, other sessions.
    const hook = await gh.createWebhook({
      url,
      events: ['state_change', 'gate_evaluation'],
      filter: { session_id: 's1' },
    });
    const sort = (session_id: string, id: string) => (session_id === 's1' ? matching : other).add(id);
    const matching = new Set<string>();
    const other = new Set<string>();
    for (let i = 0; i < 24; i++) {
      const session_id = `s${i % 3}`;
      const w = await gh.recordState({
        session_id,
        key: 'budget.limit',
        value: String(1000 + i),
        type: 'fact',
        source: 'user_input',
      });
      sort(session_id, w.event_id!);
      for (const amount of [10, 999_999]) {
        const d = await gh.evaluate({ session_id, action: 'payments.transfer', params: { amount } });
        const [event] = (await gh.readHistory({ decision_id: d.decision_id })).events;
        sort(session_id, event!.event_id);
      }
      // A lower-trust write: a conflict event (not subscribed); the next write settles it.
      const c = await gh.recordState({
        session_id,
        key: 'budget.limit',
        value: '1',
        type: 'fact',
        source: 'tool_output',
      });
      other.add(c.event_id!);
    }
    expect(matching.size).toBeGreaterThan(20);
    expect(other.size).toBeGreaterThan(20);

    // Three hours down: every attempt is refused and recorded, on the backoff schedule.
    const downUntil = clock().getTime() + 3 * 3600_000;
    while (clock().getTime() < downUntil) {
      await dispatcher.drain();
      clock.advance(60_000);
    }
    const during = await gh.listDeliveries(hook.id, { limit: 500 });
    expect(during).toHaveLength(matching.size);
    for (const d of during) {
      expect(d).toMatchObject({ status: 'pending', last_status_code: null, delivered_at: null });
      // 0 s, +5 s, +5 min, +30 min, +2 h: five refused attempts in three hours.
      expect(d.attempts).toBe(5);
      expect(d.last_error).toMatch(/ECONNREFUSED/);
    }

    // Back up, on the same port: verify, dedupe, process; the first response of every third
    // event is lost after processing (the connection drops), so the sender retries it.
    const deduper = createDeduper();
    const processed: string[] = [];
    let received = 0;
    let dropped = 0;
    const server: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        received++;
        try {
          const event = verifyWebhook(hook.secret, req.headers, Buffer.concat(chunks), { now: clock });
          if (await deduper.claim(event.id)) {
            processed.push(event.id);
            if (processed.length % 3 === 0) {
              dropped++;
              req.socket.destroy();
              return;
            }
          }
          res.writeHead(204).end();
        } catch {
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          server.closeAllConnections();
          server.close(() => r());
        }),
    );

    for (let hours = 0; hours < 24; hours++) {
      await dispatcher.drain();
      clock.advance(3600_000);
    }
    const after = await gh.listDeliveries(hook.id, { limit: 500 });
    expect(after.filter((d) => d.status !== 'delivered')).toEqual([]);
    for (const d of after) {
      expect(d).toMatchObject({ last_status_code: 204, last_error: null, delivered_at: expect.any(String) });
      expect(d.attempts).toBeGreaterThanOrEqual(6);
    }
    expect(new Set(processed)).toEqual(matching);
    expect(processed).toHaveLength(matching.size);
    expect(dropped).toBeGreaterThan(0);
    expect(received).toBe(matching.size + dropped);
    for (const id of other) expect(processed).not.toContain(id);
  });
});
