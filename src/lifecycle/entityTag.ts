/** HTTP entity tags of policy revisions (`ETag` / `If-Match`). */

/** The `ETag` of a revision: a strong entity tag. */
export function entityTagOf(revision: string): string {
  return `"${revision}"`;
}

/**
 * The revision an `If-Match` value names: one entity tag, quoted or not (`W/` ignored).
 * @example revisionFromEntityTag('"3f2a…"') // '3f2a…'
 */
export function revisionFromEntityTag(tag: string | undefined): string | undefined {
  if (tag === undefined) return undefined;
  const trimmed = tag.trim().replace(/^W\//, '');
  return trimmed.length >= 2 && trimmed.startsWith('"') && trimmed.endsWith('"')
    ? trimmed.slice(1, -1)
    : trimmed;
}
