/**
 * Keeping secret values out of event data: a value classified `secret` is masked where it is
 * the value, and a session's secret values are masked wherever they turn up in free text.
 */
import { classify, maskValue } from '../state/classify.js';
import type { StoreReader } from '../store.js';

/** The event data of one side of a value, secrets masked. */
export function valueData(item: { key: string; value: string; sensitivity?: string }): string {
  const sensitivity = item.sensitivity ?? classify(item.key, item.value).sensitivity;
  return sensitivity === 'secret' ? maskValue(item.value, 'secret') : item.value;
}

/**
 * The values of a session's secret items: masked wherever they appear in free text (notes,
 * outcome details, metadata), not only where a detector recognises them.
 */
export async function sessionSecrets(
  reader: StoreReader,
  tenantId: string,
  sessionId: string,
): Promise<Set<string>> {
  const items = await reader.listItems(tenantId, sessionId);
  return new Set(items.filter((i) => i.sensitivity === 'secret').map((i) => i.value));
}
