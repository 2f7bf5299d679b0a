/**
 * The history events of state changes that more than one operation writes: a new version of an
 * item, and open conflicts settled because the value they disagreed with is no longer current.
 */
import type { Conflict, StateItem } from '../schemas.js';
import { maskSecrets } from '../state/maskSecrets.js';
import type { StoreTx } from '../store.js';
import type { EventDraft } from './appendEvents.js';
import { valueData } from './eventSecrets.js';

/** Options for {@link stateChangeDraft}. */
export interface StateChangeDraftOptions {
  /** The version `item` replaces; null for a new item. */
  previousVersion: number | null;
  /** Secret values of the session, masked in the metadata. */
  secrets: ReadonlySet<string>;
  /** The conflict whose resolution wrote this version. */
  conflictId?: string;
}

/** The `state_change` event of a new version of an item, secrets masked. */
export function stateChangeDraft(item: StateItem, options: StateChangeDraftOptions): EventDraft {
  return {
    type: 'state_change',
    session_id: item.session_id,
    data: {
      key: item.key,
      version: item.version,
      previous_version: options.previousVersion,
      value: valueData(item),
      type: item.type,
      source: item.source,
      trust: item.trust,
      sensitivity: item.sensitivity,
      category: item.category,
      metadata: maskSecrets(item.metadata, `${item.key}.metadata`, options.secrets),
      ...(options.conflictId === undefined ? {} : { conflict_id: options.conflictId }),
    },
  };
}

/**
 * Marks open conflicts `superseded` by the new version `version` of their item, written at `at`;
 * returns their `conflict_resolved` events.
 */
export async function supersedeConflicts(
  tx: StoreTx,
  tenantId: string,
  conflicts: readonly Conflict[],
  options: { at: string; version: number },
): Promise<EventDraft[]> {
  const drafts: EventDraft[] = [];
  for (const c of conflicts) {
    await tx.updateConflict(tenantId, c.conflict_id, {
      status: 'resolved',
      resolution: 'superseded',
      resolved_at: options.at,
    });
    drafts.push({
      type: 'conflict_resolved',
      session_id: c.session_id,
      data: { conflict_id: c.conflict_id, key: c.key, resolution: 'superseded', version: options.version },
    });
  }
  return drafts;
}
