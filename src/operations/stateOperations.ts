/**
 * State items: recording with the conflict rule, reading versions, and resolving conflicts.
 */
import { GatehouseError } from '../errors.js';
import type { Gatehouse } from '../gatehouseTypes.js';
import {
  type Conflict,
  RecordStateInputSchema,
  ResolveConflictInputSchema,
  type StateItem,
} from '../schemas.js';
import { canonicalKey, keyCategory } from '../state/canonicalKey.js';
import { classify } from '../state/classify.js';
import { decideWrite } from '../state/conflictRules.js';
import { maskSecrets } from '../state/maskSecrets.js';
import type { StoreReader } from '../store.js';
import { parseInput, type UnknownValue, unknownValues } from '../validation.js';
import type { EventDraft } from './appendEvents.js';
import { sessionSecrets, valueData } from './eventSecrets.js';
import { assertPlausibleId, notFound } from './notFound.js';
import type { OperationContext } from './operationContext.js';
import { stateChangeDraft, supersedeConflicts } from './stateEvents.js';

/**
 * A conflict as callers get it: each side's value classified, so a reader that masks secrets
 * masks a secret proposal too (the item's sensitivity is the current value's only). An erased
 * side (a marker, not a string) has nothing to classify.
 */
function classified(conflict: Conflict): Conflict {
  const of = (value: unknown) =>
    typeof value === 'string' ? { sensitivity: classify(conflict.key, value).sensitivity } : {};
  return {
    ...conflict,
    current: { ...conflict.current, ...of(conflict.current.value) },
    proposed: { ...conflict.proposed, ...of(conflict.proposed.value) },
  };
}

/** State items: recording with the conflict rule, reading versions, and resolving conflicts. */
export function stateOperations(
  shared: OperationContext,
): Pick<
  Gatehouse,
  | 'recordState'
  | 'getItem'
  | 'getItemVersion'
  | 'listItemVersions'
  | 'listItems'
  | 'listConflicts'
  | 'getConflict'
  | 'resolveConflict'
> {
  const { store, ids, tenantOf, now, append, checkSource, maxTrust, requireItem, parseSession } = shared;
  const { tenantTransaction } = shared;

  async function requireConflict(
    reader: StoreReader,
    tenantId: string,
    conflictId: string,
  ): Promise<Conflict> {
    assertPlausibleId(conflictId, 'Conflict');
    const conflict = await reader.getConflict(tenantId, conflictId);
    if (!conflict) throw notFound(`Conflict '${conflictId}'`);
    return conflict;
  }
  return {
    async recordState(rawInput, ctx) {
      const input = parseInput(RecordStateInputSchema, rawInput, 'state item');
      const key = canonicalKey(input.key);
      const tenantId = tenantOf(ctx);
      const { types, sources } = await shared.policyFor(tenantId);
      const unknown: UnknownValue[] = [];
      if (!types.includes(input.type)) unknown.push({ field: 'type', value: input.type, allowed: types });
      if (!Object.hasOwn(sources, input.source)) {
        unknown.push({ field: 'source', value: input.source, allowed: Object.keys(sources) });
      }
      if (unknown.length > 0) throw unknownValues(unknown);
      const trust = checkSource(input.source, ctx, 'write state');
      const { sensitivity } = classify(key, input.value);
      const metadata = input.metadata ?? {};

      return shared.itemTransaction(tenantId, { sessionId: input.session_id, key }, async (tx) => {
        const current = await tx.lockItem(tenantId, input.session_id, key);
        const currentVersion = current?.version ?? 0;
        if (input.expected_version !== undefined && input.expected_version !== currentVersion) {
          throw new GatehouseError(
            'version_conflict',
            `Item '${key}' is at version ${currentVersion}, not the expected ${input.expected_version}.`,
          );
        }
        const at = now();
        // An erased item is no state (its value and source are gone): a write to it starts afresh.
        const live = current?.status === 'erased' ? null : current;
        const outcome = decideWrite(live, { value: input.value, type: input.type, trust });
        if (outcome === 'unchanged') {
          return { outcome, changed: false, item: current!, conflict: null, event_id: null };
        }
        if (outcome === 'conflict') {
          const cur = current!;
          const open = await tx.listConflicts(tenantId, {
            session_id: input.session_id,
            key,
            status: 'open',
          });
          const same = open.find(
            (c) =>
              c.proposed.value === input.value &&
              c.proposed.source === input.source &&
              c.proposed.type === input.type,
          );
          if (same) {
            return { outcome, changed: false, item: cur, conflict: classified(same), event_id: null };
          }
          const conflict: Conflict = {
            conflict_id: ids('cfl'),
            session_id: input.session_id,
            key,
            status: 'open',
            current: {
              value: cur.value,
              type: cur.type,
              source: cur.source,
              trust: cur.trust,
              version: cur.version,
            },
            proposed: { value: input.value, type: input.type, source: input.source, trust, metadata },
            resolution: null,
            created_at: at,
            resolved_at: null,
          };
          await tx.insertConflict(tenantId, conflict);
          await tx.setItemStatus(tenantId, input.session_id, key, 'conflicted');
          const [event] = await append(
            tx,
            tenantId,
            [
              {
                type: 'state_conflict',
                session_id: input.session_id,
                data: {
                  conflict_id: conflict.conflict_id,
                  key,
                  current: { ...conflict.current, value: valueData(cur) },
                  proposed: {
                    value: valueData({ key, value: input.value, sensitivity }),
                    type: input.type,
                    source: input.source,
                    trust,
                  },
                },
              },
            ],
            ctx,
          );
          return {
            outcome,
            changed: false,
            item: { ...cur, status: 'conflicted' },
            conflict: classified(conflict),
            event_id: event!.event_id,
          };
        }
        // created or superseded: a new version; a higher-trust write settles open conflicts.
        const settled =
          current?.status === 'conflicted' || current?.status === 'erased'
            ? await tx.listConflicts(tenantId, { session_id: input.session_id, key, status: 'open' })
            : [];
        const item: StateItem = {
          session_id: input.session_id,
          key,
          value: input.value,
          type: input.type,
          source: input.source,
          trust,
          sensitivity,
          category: keyCategory(key),
          version: currentVersion + 1,
          status: 'current',
          metadata,
          updated_at: at,
        };
        await tx.insertItemVersion(tenantId, item);
        const known =
          Object.keys(metadata).length === 0
            ? new Set<string>()
            : await sessionSecrets(tx, tenantId, input.session_id);
        const settledDrafts = await supersedeConflicts(tx, tenantId, settled, { at, version: item.version });
        const events = await append(
          tx,
          tenantId,
          [
            stateChangeDraft(item, { previousVersion: current?.version ?? null, secrets: known }),
            ...settledDrafts,
          ],
          ctx,
        );
        return { outcome, changed: true, item, conflict: null, event_id: events[0]!.event_id };
      });
    },

    async getItem(sessionId, key, ctx) {
      return requireItem(tenantOf(ctx), parseSession(sessionId), canonicalKey(key));
    },

    async getItemVersion(sessionId, key, version, ctx) {
      const k = canonicalKey(key);
      if (!Number.isInteger(version) || version < 1) {
        throw new GatehouseError('invalid_request', 'version must be a positive integer.', {
          errors: [{ path: 'version', message: 'must be a positive integer' }],
        });
      }
      const item = await store.getItemVersion(tenantOf(ctx), parseSession(sessionId), k, version);
      if (!item) throw notFound(`Version ${version} of '${k}' in session '${sessionId}'`);
      return item;
    },

    async listItemVersions(sessionId, key, ctx) {
      const k = canonicalKey(key);
      const versions = await store.listItemVersions(tenantOf(ctx), parseSession(sessionId), k);
      if (versions.length === 0) throw notFound(`State item '${k}' in session '${sessionId}'`);
      return versions;
    },

    async listItems(sessionId, ctx) {
      const items = await store.listItems(tenantOf(ctx), parseSession(sessionId));
      // A store may hand out its cached, frozen items: the caller gets its own copies.
      return items.map((item) => ({ ...item, metadata: { ...item.metadata } }));
    },

    async listConflicts(query = {}, ctx) {
      const conflicts = await store.listConflicts(tenantOf(ctx), {
        session_id: query.session_id === undefined ? undefined : parseSession(query.session_id),
        key: query.key === undefined ? undefined : canonicalKey(query.key),
        status: query.status,
      });
      return conflicts.map(classified);
    },

    async getConflict(conflictId, ctx) {
      return classified(await requireConflict(store, tenantOf(ctx), conflictId));
    },

    async resolveConflict(conflictId, rawInput, ctx) {
      const input = parseInput(ResolveConflictInputSchema, rawInput, 'resolution');
      const tenantId = tenantOf(ctx);
      return tenantTransaction(tenantId, async (tx) => {
        const found = await requireConflict(tx, tenantId, conflictId);
        const current = await tx.lockItem(tenantId, found.session_id, found.key);
        // Read again under the item lock: a concurrent resolver may have settled it meanwhile.
        const conflict = (await tx.getConflict(tenantId, conflictId)) ?? found;
        if (conflict.status !== 'open' || !current) {
          throw new GatehouseError('version_conflict', `Conflict '${conflictId}' is already resolved.`);
        }
        if (maxTrust(ctx) < current.trust) {
          throw new GatehouseError(
            'forbidden',
            `Resolving this conflict needs trust ${current.trust} (source '${current.source}'); this caller may claim at most ${maxTrust(ctx)}.`,
          );
        }
        const at = now();
        const open = await tx.listConflicts(tenantId, {
          session_id: conflict.session_id,
          key: conflict.key,
          status: 'open',
        });
        const resolved: Conflict = {
          ...conflict,
          status: 'resolved',
          resolution: input.resolution,
          resolved_at: at,
        };
        await tx.updateConflict(tenantId, conflictId, resolved);
        const drafts: EventDraft[] = [];
        let version: number = current.version;
        const known = await sessionSecrets(tx, tenantId, conflict.session_id);
        if (classify(conflict.key, conflict.proposed.value).sensitivity === 'secret') {
          known.add(conflict.proposed.value);
        }
        if (input.resolution === 'accept_proposed') {
          const p = conflict.proposed;
          const item: StateItem = {
            ...current,
            value: p.value,
            type: p.type,
            source: p.source,
            trust: p.trust,
            sensitivity: classify(conflict.key, p.value).sensitivity,
            version: current.version + 1,
            status: 'current',
            metadata: p.metadata,
            updated_at: at,
          };
          version = item.version;
          await tx.insertItemVersion(tenantId, item);
          drafts.push(
            stateChangeDraft(item, { previousVersion: current.version, secrets: known, conflictId }),
          );
        }
        drafts.push({
          type: 'conflict_resolved',
          session_id: conflict.session_id,
          data: {
            conflict_id: conflictId,
            key: conflict.key,
            resolution: input.resolution,
            version,
            ...(input.note === undefined ? {} : { note: maskSecrets(input.note, 'note', known) }),
          },
        });
        const others = open.filter((c) => c.conflict_id !== conflictId);
        if (input.resolution === 'accept_proposed') {
          // The others disagreed with a value that is no longer current.
          drafts.push(...(await supersedeConflicts(tx, tenantId, others, { at, version })));
        } else if (others.length === 0 && current.status !== 'erased') {
          // An erased item stays erased: keeping it is keeping nothing.
          await tx.setItemStatus(tenantId, conflict.session_id, conflict.key, 'current');
        }
        await append(tx, tenantId, drafts, ctx);
        return classified(resolved);
      });
    },
  };
}
