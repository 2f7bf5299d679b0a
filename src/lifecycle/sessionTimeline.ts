/**
 * A session's governed state at any position of the history, for replay. The stored rows give
 * the exact values (every version of every item, every conflict, unmasked, with their own
 * timestamps); the history's events say which version was current and which conflicts were open
 * at each seq. Applying the session's events in seq order moves the state forward. When the
 * history's oldest events were pruned, {@link SessionTimeline.startAfterPrune} sets the state at
 * the first kept event from the rows and the events that are kept.
 */
import type { ConflictView, StateView } from '../gate/gateTypes.js';
import { KEY_SET_READ } from '../gate/stateReads.js';
import { conflictViewOf, stateViewOf } from '../gate/stateView.js';
import type { Conflict, HistoryEvent, StateItem } from '../schemas.js';
import type { StoreReader } from '../store.js';

/** `store.listConflicts` answers at most this many: an evaluation never saw more. */
const OPEN_CONFLICTS_SEEN = 500;

/** The state and open conflicts of a session at one position, as `evaluate` read them. */
export interface SessionView {
  state: Record<string, StateView>;
  conflicts: ConflictView[];
  /**
   * Keys whose version at this position has been erased since (retention, an erasure): left out
   * of `state`, as the live gate leaves out an erased item. A decision that read one of them, or
   * whose replay reads one, cannot be replayed faithfully.
   */
  erased: string[];
}

/** Event types that move a session's state. */
export const STATE_EVENT_TYPES = ['state_change', 'state_conflict', 'conflict_resolved'] as const;

/** One session's state, moved forward event by event. */
export class SessionTimeline {
  /** Version rows by key; index `version - 1`. */
  readonly #versions = new Map<string, StateItem[]>();
  readonly #conflicts = new Map<string, Conflict>();
  /** Current version per key. */
  readonly #current = new Map<string, number>();
  /** Open conflict IDs. */
  readonly #open = new Set<string>();
  /**
   * `version:key` of versions whose `state_change` event kept the value `''`: written empty. An
   * erasure leaves a version `''` without metadata, so another such row is taken as erased.
   */
  readonly #writtenEmpty = new Set<string>();
  #view: SessionView | undefined;
  /** Values of the session's secret items, to mask what a replay reports. */
  readonly secrets = new Set<string>();
  /** Rows held, the weight of this session in the replay's cache. */
  readonly weight: number;

  constructor(versions: readonly StateItem[], conflicts: readonly Conflict[]) {
    for (const item of versions) {
      let list = this.#versions.get(item.key);
      if (!list) {
        list = [];
        this.#versions.set(item.key, list);
      }
      list[item.version - 1] = item;
      if (item.sensitivity === 'secret') this.secrets.add(item.value);
    }
    for (const conflict of conflicts) this.#conflicts.set(conflict.conflict_id, conflict);
    this.weight = versions.length + conflicts.length + 1;
  }

  /** Loads a session's rows from the store. */
  static async load(store: StoreReader, tenantId: string, sessionId: string): Promise<SessionTimeline> {
    const [versions, conflicts] = await Promise.all([
      store.listSessionVersions(tenantId, sessionId),
      store.listSessionConflicts(tenantId, sessionId),
    ]);
    return new SessionTimeline(versions, conflicts);
  }

  /** Moves the state past one event of this session (other event types change nothing). */
  apply(event: Pick<HistoryEvent, 'type' | 'data'>): void {
    const d = event.data;
    switch (event.type) {
      case 'state_change':
        this.#current.set(String(d['key']), Number(d['version']));
        if (d['value'] === '') this.#writtenEmpty.add(`${d['version']}:${d['key']}`);
        break;
      case 'state_conflict':
        this.#open.add(String(d['conflict_id']));
        break;
      case 'conflict_resolved':
        this.#open.delete(String(d['conflict_id']));
        break;
      default:
        return;
    }
    this.#view = undefined;
  }

  /**
   * Sets the state as it was before the first kept event, the events before it being pruned:
   * `kept` are the session's kept {@link STATE_EVENT_TYPES} events, in any order. A key's versions
   * are written in order, so the one current then is the version before its first kept write, or
   * its newest when none is kept. A conflict opened before it was open there if it is still open
   * or its resolution's event is kept. Call it before {@link apply}.
   */
  async startAfterPrune(kept: AsyncIterable<Pick<HistoryEvent, 'type' | 'data'>>): Promise<void> {
    const firstWritten = new Map<string, number>();
    const opened = new Set<string>();
    const resolvedLater = new Set<string>();
    for await (const { type, data } of kept) {
      if (type === 'state_conflict') opened.add(String(data['conflict_id']));
      else if (type === 'conflict_resolved') resolvedLater.add(String(data['conflict_id']));
      else if (type === 'state_change') {
        const key = String(data['key']);
        const version = Number(data['version']);
        if (version < (firstWritten.get(key) ?? Number.POSITIVE_INFINITY)) firstWritten.set(key, version);
      }
    }
    for (const [key, versions] of this.#versions) {
      const version = (firstWritten.get(key) ?? versions.length + 1) - 1;
      if (version > 0) this.#current.set(key, version);
    }
    for (const [id, conflict] of this.#conflicts) {
      if (!opened.has(id) && (conflict.status === 'open' || resolvedLater.has(id))) this.#open.add(id);
    }
    this.#view = undefined;
  }

  /**
   * Closes the open conflicts an erasure (of the session, or retention) resolved `erased` at or
   * before `at` (an ISO time): that resolution writes no `conflict_resolved` event.
   */
  closeErasedConflicts(at: string): void {
    for (const id of this.#open) {
      const conflict = this.#conflicts.get(id);
      if (conflict?.resolution === 'erased' && conflict.resolved_at !== null && conflict.resolved_at <= at) {
        this.#open.delete(id);
        this.#view = undefined;
      }
    }
  }

  /**
   * The state as an evaluation at this position read it. `pinned` (a decision's recorded
   * `state_versions`) overrides the version of those keys: version 0 (read while absent) leaves
   * the key out, and {@link KEY_SET_READ} (the whole key set was read) leaves out every key it
   * does not list. `pinnedKeys` says how many keys differed from this position.
   */
  view(pinned?: Readonly<Record<string, number>>): SessionView & { pinnedKeys: number } {
    this.#view ??= this.#build(undefined);
    if (pinned === undefined) return { ...this.#view, pinnedKeys: 0 };
    let differing = 0;
    for (const [key, version] of Object.entries(pinned)) {
      if (key === KEY_SET_READ) continue;
      const differs =
        version === 0 ? this.#present(key) : this.#current.get(key) !== version && this.#has(key, version);
      if (differs) differing += 1;
    }
    if (Object.hasOwn(pinned, KEY_SET_READ)) {
      for (const key of this.#current.keys()) {
        if (!Object.hasOwn(pinned, key) && this.#present(key)) differing += 1;
      }
    }
    // A pin on an erased key can say what was read (absent then): built with the pins, not counted.
    const readErased = this.#view.erased.some(
      (key) => Object.hasOwn(pinned, key) || Object.hasOwn(pinned, KEY_SET_READ),
    );
    if (differing === 0 && !readErased) return { ...this.#view, pinnedKeys: 0 };
    return { ...this.#build(pinned), pinnedKeys: differing };
  }

  /** True when the stored rows hold this version of the key. */
  #has(key: string, version: number): boolean {
    return this.#versions.get(key)?.[version - 1] !== undefined;
  }

  /** True when the key is in the state at this position. */
  #present(key: string): boolean {
    const version = this.#current.get(key);
    const item = version === undefined ? undefined : this.#versions.get(key)?.[version - 1];
    return item !== undefined && !this.#isErased(item);
  }

  /**
   * True when the row's value has been erased: `''` without metadata, unless its `state_change`
   * event, applied here, kept the value `''` (one pruned, or whose value was erased, does not).
   */
  #isErased(item: StateItem): boolean {
    return (
      item.value === '' &&
      Object.keys(item.metadata).length === 0 &&
      !this.#writtenEmpty.has(`${item.version}:${item.key}`)
    );
  }

  #build(pinned: Readonly<Record<string, number>> | undefined): SessionView {
    // Status follows the conflict rule's invariant: an item is conflicted while it has an open conflict.
    const conflictedKeys = new Set<string>();
    const open: Conflict[] = [];
    for (const id of this.#open) {
      const conflict = this.#conflicts.get(id);
      if (!conflict) continue;
      conflictedKeys.add(conflict.key);
      open.push(conflict);
    }
    const current = new Map(this.#current);
    if (pinned) {
      if (Object.hasOwn(pinned, KEY_SET_READ)) {
        for (const key of this.#current.keys()) if (!Object.hasOwn(pinned, key)) current.delete(key);
      }
      for (const [key, version] of Object.entries(pinned)) {
        if (key === KEY_SET_READ) continue;
        if (version === 0) current.delete(key);
        else if (this.#has(key, version)) current.set(key, version);
      }
    }
    // The store lists items by key (byte order: keys are ASCII) and open conflicts newest first.
    const state: Record<string, StateView> = {};
    const erased: string[] = [];
    for (const key of [...current.keys()].sort()) {
      const item = this.#versions.get(key)?.[current.get(key)! - 1];
      if (!item) continue;
      // As the live gate does (gateStateOf): an erased item is no state.
      if (this.#isErased(item)) {
        erased.push(key);
        continue;
      }
      const view = stateViewOf(item);
      view.status = conflictedKeys.has(key) ? 'conflicted' : 'current';
      state[key] = view;
    }
    open.sort((a, b) => (a.conflict_id < b.conflict_id ? 1 : a.conflict_id > b.conflict_id ? -1 : 0));
    return { state, conflicts: open.slice(0, OPEN_CONFLICTS_SEEN).map(conflictViewOf), erased };
  }
}
