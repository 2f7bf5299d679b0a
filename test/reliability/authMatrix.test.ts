/**
 * The auth matrix: every /v1 route × {no key, malformed, unknown, revoked, missing scope, other
 * tenant} gives the documented status, and the answers leak nothing: an unknown and a revoked key
 * get the same answer, and another tenant's existing object answers exactly like one that does
 * not exist (no existence oracle). Keys never reach the logs, even at debug level.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compilePolicy, type Scope } from '../../src/index.js';
import {
  type Answer,
  call,
  createWorld,
  memoryLogger,
  type PathParam,
  POLICY,
  ROUTES,
  type Route,
  urlOf,
  type World,
} from './fixtures.js';

const log = memoryLogger();
let world: World;

beforeAll(async () => {
  world = await createWorld({ policy: compilePolicy(POLICY), app: { logger: log.logger } });
});
afterAll(async () => {
  await world.store.close();
});

const SCOPES: Scope[] = [
  'state:write',
  'state:read',
  'gate:evaluate',
  'history:read',
  'webhooks:manage',
  'approvals:decide',
  'policy:write',
  'data:erase',
];

/** A random ID shaped like `real` (same prefix and length). */
function lookalike(real: string): string {
  const [prefix] = real.split('_');
  const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';
  const tail = [...randomBytes(real.length - prefix!.length - 1)].map((b) => alphabet[b % 32]).join('');
  return `${prefix}_${tail}`;
}

/** A value for `param` naming nothing, shaped like the real one. */
function madeUp(param: PathParam): string {
  if (param === 'key') return 'budget.nothing';
  if (param === 'version') return '9';
  if (param === 'revision') return randomBytes(32).toString('hex');
  return lookalike(world.ids[param]);
}

function send(route: Route, key: string | null, ids: Partial<Record<PathParam, string>> = world.ids) {
  return call(world.app, route.method, urlOf(route, ids), {
    key,
    ...(route.body ? { body: route.body() } : {}),
  });
}

function sendWithHeader(route: Route, authorization: string) {
  return call(world.app, route.method, urlOf(route, world.ids), {
    headers: { authorization },
    ...(route.body ? { body: route.body() } : {}),
  });
}

function expectProblem(r: Answer, status: number, code: string) {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('content-type')).toBe('application/problem+json');
  expect(r.json).toMatchObject({ status, code });
}

/** The answer without its `instance` (the request's path) and with the IDs blanked. */
function normalised(r: Answer, ...ids: string[]): string {
  const { instance: _path, ...rest } = r.json as Record<string, unknown>;
  let text = JSON.stringify(rest);
  for (const id of ids) text = text.split(id).join('<id>');
  return `${r.status} ${r.headers.get('content-type')} ${text}`;
}

const cases = ROUTES.map((r) => [`${r.method} ${r.pattern}`, r] as const);

describe.each(cases)('%s', (_name, route) => {
  it('no key, malformed, unknown and revoked keys: 401 with WWW-Authenticate', async () => {
    const answers = [
      await send(route, null),
      await sendWithHeader(route, 'Basic dXNlcjpwYXNz'),
      await sendWithHeader(route, 'Bearer'),
      await sendWithHeader(route, `Bearer ${world.keys.admin} extra`),
      await sendWithHeader(route, 'Bearer not-a-gatehouse-key'),
      await send(route, `gh_${randomBytes(32).toString('base64url')}`),
      await send(route, world.keys.revoked),
    ];
    for (const r of answers) {
      expectProblem(r, 401, 'unauthorized');
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer /);
    }
    // An unknown key and a revoked one are told apart by nothing.
    expect(answers[6]!.text).toBe(answers[5]!.text);
  });

  it('a key without the scope: 403, the same for an existing and a made-up object', async () => {
    if (route.scope === null) {
      // Any valid key may call it: none is refused.
      for (const scope of SCOPES) expect((await send(route, world.keys.scoped[scope])).status).toBe(200);
      return;
    }
    for (const scope of SCOPES.filter((s) => s !== route.scope && !route.anyOf?.includes(s))) {
      const key = world.keys.scoped[scope];
      const existing = await send(route, key);
      expectProblem(existing, 403, 'forbidden');
      expect(existing.json.detail).toContain(route.scope);
      if (route.params.length > 0) {
        const fake = Object.fromEntries(route.params.map((p) => [p, madeUp(p)]));
        const made = await send(route, key, fake);
        expect(normalised(made, ...Object.values(fake))).toBe(
          normalised(existing, ...route.params.map((p) => world.ids[p])),
        );
      }
    }
  });

  it('another tenant: its objects are 404, exactly like objects that do not exist', async () => {
    const other = world.keys.otherTenant;
    const objects = route.params.filter((p) => p !== 'version');
    if (objects.length === 0) {
      // Collections: the other tenant sees its own (empty) data, nothing of ours.
      const r = await send(route, other);
      // PUT /v1/policy without If-Match answers 428 to every tenant alike.
      if (r.status !== 428) expect(r.status).toBeLessThan(300);
      for (const id of Object.values(world.ids)) {
        if (id.includes('_')) expect(r.text).not.toContain(id);
      }
      return;
    }
    const existing = await send(route, other);
    expectProblem(existing, 404, 'not_found');
    const fake: Partial<Record<PathParam, string>> = { ...world.ids };
    for (const p of objects) fake[p] = madeUp(p);
    const made = await send(route, other, fake);
    expectProblem(made, 404, 'not_found');
    expect(normalised(made, ...objects.map((p) => fake[p]!))).toBe(
      normalised(existing, ...objects.map((p) => world.ids[p])),
    );
  });

  it('the right scope is not refused', async () => {
    for (const scope of [route.scope ?? 'history:read', ...(route.anyOf ?? [])]) {
      const r = await send(route, world.keys.scoped[scope]);
      expect([401, 403]).not.toContain(r.status);
      expect(r.status).toBeLessThan(500);
    }
  });
});

describe('keys and logs', () => {
  it('no key, valid or not, ever reaches the log (debug level, failures included)', async () => {
    const bogus = `gh_${randomBytes(32).toString('base64url')}`;
    for (const route of ROUTES) {
      await send(route, world.keys.admin);
      await send(route, bogus);
      await send(route, world.keys.revoked);
      await sendWithHeader(route, `Bearer ${world.keys.otherTenant} extra`);
    }
    // An internal failure is logged with its cause: the store is gone mid-request.
    await world.store.close();
    const failed = await send(ROUTES[1]!, world.keys.admin);
    expectProblem(failed, 500, 'internal');
    expect(failed.text).not.toMatch(/sqlite|database|SELECT/i);

    const text = log.text();
    expect(text).toContain('"level":50');
    expect(text).toContain('"level":20');
    const secrets = [
      world.keys.admin,
      world.keys.revoked,
      world.keys.otherTenant,
      bogus,
      ...Object.values(world.keys.scoped),
    ];
    for (const secret of secrets) {
      expect(text).not.toContain(secret);
      // Not even the random part of it.
      expect(text).not.toContain(secret.slice(3, 20));
    }
    expect(text).not.toMatch(/authorization|bearer/i);
    world = await createWorld({ policy: compilePolicy(POLICY) });
  });
});
