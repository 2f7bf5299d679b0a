/**
 * Matching action names against `actions` patterns: exact names, or picomatch globs over
 * `.`-separated segments (`payments.*` is one segment, `payments.**` any number).
 */
import picomatch from 'picomatch';

/** Tests whether an action name matches one pattern. */
export type ActionMatcher = (action: string) => boolean;

// picomatch separates segments with `/`; action names with `.`. Both become `/` so that `*`
// stays within one segment of an action name.
const toPath = (name: string): string => name.replaceAll('.', '/');

/**
 * Compiles one `actions` pattern. A pattern without glob syntax matches only the same name.
 * @throws Error when picomatch rejects the pattern.
 */
export function compileActionPattern(pattern: string): ActionMatcher {
  const scan = picomatch.scan(pattern);
  if (!scan.isGlob && !scan.negated) return (action) => action === pattern;
  const isMatch = picomatch(toPath(pattern), { dot: true });
  return (action) => isMatch(toPath(action));
}
