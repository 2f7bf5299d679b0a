/**
 * The trust a caller can claim: the highest trust among the sources it may write. The core uses
 * it to decide who may resolve a conflict; faces use it to tell a client what it cannot overwrite.
 */

/**
 * The highest trust among `allowedSources` in the policy's source table; `-Infinity` when the
 * caller may claim no source the policy defines.
 * @param sources the policy's source → trust table (`policy.sources`)
 * @param allowedSources the sources the caller may claim
 * @default allowedSources: every source of the table
 * @example
 * maxClaimableTrust({ user_input: 3, tool_output: 2 }, ['tool_output']); // 2
 */
export function maxClaimableTrust(
  sources: Readonly<Record<string, number>>,
  allowedSources: readonly string[] = Object.keys(sources),
): number {
  return Math.max(-Infinity, ...allowedSources.map((s) => sources[s] ?? -Infinity));
}
