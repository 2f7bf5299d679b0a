/**
 * Matching action names against `actions` patterns: exact names, or globs over `.`-separated
 * segments (`/` also separates): `*` within one segment, `**` any number of whole segments, `?`
 * one character, `{a,b}` alternatives, a leading `!` negates.
 *
 * Written here rather than taken from picomatch (which this replaced, and whose semantics it
 * keeps: the tests compare the two): picomatch compiles a glob to a backtracking regular
 * expression, and `*a*a*a…*b` against a 40-character action ran for 34 s on the event loop.
 * This matcher takes time proportional to (pattern length × action length), whatever the
 * pattern: braces are expanded once at load (a bounded number of alternatives), segments are
 * matched by dynamic programming, and `*` within a segment by the classic wildcard scan, which
 * never revisits more than the last `*`.
 */

/** Tests whether an action name matches one pattern. */
export type ActionMatcher = (action: string) => boolean;

/** The most alternatives a pattern's `{…}` groups may expand to (`{a,b}.{c,d}` is 4). */
export const MAX_PATTERN_ALTERNATIVES = 64;

/** A pattern segment: `**` (any number of segments) or a wildcard within one segment. */
type Segment = { globstar: true } | { globstar: false; tokens: readonly Token[]; nonEmpty: boolean };

/** Within a segment: one literal character, `?` (any one character) or `*` (any run). */
type Token = string | typeof ANY | typeof STAR;
const ANY = 0;
const STAR = 1;

/**
 * Compiles one `actions` pattern. A pattern without glob syntax matches only the same name.
 * @throws Error naming what is not supported: character classes (`[…]`), groups and extglobs
 * (`(…)`), backslash escapes, `**` as a `{…}` alternative, unbalanced braces, more than
 * {@link MAX_PATTERN_ALTERNATIVES} alternatives.
 * @example compileActionPattern('payments.*')('payments.refund') // true
 */
export function compileActionPattern(pattern: string): ActionMatcher {
  const unsupported = /[[\]()\\]/.exec(pattern);
  if (unsupported) {
    const what =
      unsupported[0] === '\\'
        ? 'backslash escapes are'
        : unsupported[0] === '[' || unsupported[0] === ']'
          ? 'character classes ([…]) are'
          : 'groups and extglobs ((…)) are';
    throw new Error(
      `"${unsupported[0]}" at character ${unsupported.index + 1}: ${what} not supported; use ? for one character and {a,b} for alternatives`,
    );
  }
  let negations = 0;
  while (pattern[negations] === '!') negations++;
  const body = pattern.slice(negations);
  const alternatives = expandBraces(body);
  if (alternatives.length > 1 && /(^|[{,])\*\*($|[},])/.test(body)) {
    // picomatch reads `{**,a}` as neither `**` nor `*`: refused rather than guessed.
    throw new Error('** inside {…} is not supported; write each alternative as its own entry');
  }
  const isGlob = negations > 0 || alternatives.length > 1 || /[*?]/.test(body);
  if (!isGlob) return (action) => action === pattern;
  const compiled = alternatives.map(compileSegments);
  const negated = negations % 2 === 1;
  return (action) => {
    const segments = action.split(/[./]/);
    return compiled.some((alternative) => matchSegments(alternative, segments)) !== negated;
  };
}

/**
 * The brace-free alternatives of a pattern, in order: `{a,b}.c` → `a.c`, `b.c`; nested groups
 * expand too. A group without a top-level comma (`{a}`, `{}`) is literal text, as in picomatch.
 * @throws Error on an unbalanced brace or too many alternatives
 */
function expandBraces(text: string): string[] {
  const group = findGroup(text);
  if (group === undefined) return [text];
  const { start, end, commas } = group;
  const head = text.slice(0, start);
  const tail = expandBraces(text.slice(end + 1));
  const choices: string[] = [];
  let from = start + 1;
  for (const comma of [...commas, end]) {
    choices.push(...expandBraces(text.slice(from, comma)));
    from = comma + 1;
  }
  if (choices.length * tail.length > MAX_PATTERN_ALTERNATIVES) throw tooManyAlternatives();
  return choices.flatMap((choice) => tail.map((rest) => head + choice + rest));
}

/** The first `{…}` group with a top-level comma: its bounds and its commas. */
function findGroup(text: string): { start: number; end: number; commas: number[] } | undefined {
  const open: { start: number; commas: number[] }[] = [];
  let first: { start: number; end: number; commas: number[] } | undefined;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (char === '{') open.push({ start: index, commas: [] });
    else if (char === ',' && open.length > 0) open[open.length - 1]!.commas.push(index);
    else if (char === '}') {
      const group = open.pop();
      if (group === undefined) throw unbalanced('}', index);
      // The outermost group that has commas decides; a literal `{a}` inside it stays literal.
      if (open.length === 0 && group.commas.length > 0 && first === undefined) {
        first = { start: group.start, end: index, commas: group.commas };
      }
    }
  }
  const unclosed = open[0];
  if (unclosed !== undefined) throw unbalanced('{', unclosed.start);
  return first;
}

function unbalanced(char: string, index: number): Error {
  return new Error(`unbalanced "${char}" at character ${index + 1}; write {a,b} for alternatives`);
}

function tooManyAlternatives(): Error {
  return new Error(
    `its {…} groups expand to more than ${MAX_PATTERN_ALTERNATIVES} alternatives; split it into several entries`,
  );
}

/** One brace-free alternative as segments. */
function compileSegments(alternative: string): Segment[] {
  return alternative.split(/[./]/).map((text): Segment => {
    if (text === '**') return { globstar: true };
    const tokens: Token[] = [];
    // UTF-16 code units, as the action is compared (and as picomatch's `?` matched).
    for (let index = 0; index < text.length; index++) {
      const char = text[index]!;
      if (char === '*') {
        // A run of stars is one star (`a**b` is `a*b`, as in picomatch).
        if (tokens[tokens.length - 1] !== STAR) tokens.push(STAR);
      } else if (char === '?') tokens.push(ANY);
      else tokens.push(char);
    }
    // A segment of stars alone (`payments.*`) matches a segment, not nothing.
    return { globstar: false, tokens, nonEmpty: tokens.length === 1 && tokens[0] === STAR };
  });
}

/**
 * Whether pattern segments match action segments: `matched[j]` says the segments read so far
 * match the first `j` action segments. O(pattern length × action length).
 */
function matchSegments(pattern: readonly Segment[], action: readonly string[]): boolean {
  let matched = new Array<boolean>(action.length + 1).fill(false);
  matched[0] = true;
  for (const segment of pattern) {
    const next = new Array<boolean>(action.length + 1).fill(false);
    if (segment.globstar) {
      // Zero or more whole segments: every position at or after a matched one.
      let reached = false;
      for (let j = 0; j <= action.length; j++) {
        reached ||= matched[j]!;
        next[j] = reached;
      }
    } else {
      for (let j = 1; j <= action.length; j++) {
        if (matched[j - 1] && matchWithinSegment(segment, action[j - 1]!)) next[j] = true;
      }
    }
    matched = next;
  }
  return matched[action.length]!;
}

/**
 * `*` and `?` within one segment. On a mismatch only the last `*` is retried one character
 * further, so the scan is O(tokens × text), never exponential.
 */
function matchWithinSegment(segment: Segment & { globstar: false }, text: string): boolean {
  if (segment.nonEmpty) return text.length > 0;
  const tokens = segment.tokens;
  let t = 0;
  let c = 0;
  let star = -1;
  let resume = 0;
  while (c < text.length) {
    const token = tokens[t];
    if (token === ANY || (typeof token === 'string' && token === text[c])) {
      t++;
      c++;
    } else if (token === STAR) {
      star = t++;
      resume = c;
    } else if (star >= 0) {
      t = star + 1;
      c = ++resume;
    } else {
      return false;
    }
  }
  while (tokens[t] === STAR) t++;
  return t === tokens.length;
}
