/**
 * Masking of secret state values. The API answers a key with `state:read` with the raw value of
 * every item, secrets included, by design; the console never shows one. A copy of the server's
 * rule (src/state/classify.ts `maskValue`), because the console is built on its own for the
 * browser; test/console/secretMask.test.ts holds it to the server's function.
 */

/** What {@link maskValue} puts in place of a secret (the server's `MASKED_SECRET`). */
export const MASKED_SECRET = '[secret masked]';

/**
 * The value to show for an item of this sensitivity: {@link MASKED_SECRET} for `secret`, the
 * value itself otherwise.
 * @example maskValue('sk_live_…', 'secret') // '[secret masked]'
 */
export function maskValue(value: string, sensitivity: string): string {
  return sensitivity === 'secret' ? MASKED_SECRET : value;
}
