/**
 * Deterministic sensitivity classification of a state item from its key name and value.
 *
 * Every regex here runs in time linear in the value: each starts with a literal or a character
 * class guarded by a look-behind (so a failed attempt is never retried from inside the same run),
 * and every repetition that is followed by something else is bounded or unambiguous. A 16 KiB
 * value of adversarial input is part of the test suite.
 */
import { keyCategory } from './canonicalKey.js';

/** How sensitive a value is. `secret` values are masked in history events and webhook payloads. */
export type Sensitivity = 'public' | 'pii' | 'secret';

/** The result of {@link classify}. */
export interface Classification {
  /** The strictest sensitivity any detector reported (`public` when none fired). */
  sensitivity: Sensitivity;
  /** The key's area: its first segment. */
  category: string;
  /** Names of the detectors that fired, in {@link DETECTOR_NAMES} order. */
  detectors: string[];
}

/** What {@link maskValue} puts in place of a secret. */
export const MASKED_SECRET = '[secret masked]';

interface Detector {
  name: string;
  sensitivity: Exclude<Sensitivity, 'public'>;
  /** `words` are the key name's lower-case tokens (`apiKey` and `api_key` both give api, key). */
  test(value: string, words: readonly string[]): boolean;
}

// ---------------------------------------------------------------------------------------------
// Value detectors: secrets

const PRIVATE_KEY = /-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY|PuTTY-User-Key-File-[0-9]/;
const AWS_ACCESS_KEY = /(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])/;
const VENDOR_API_KEYS: readonly RegExp[] = [
  /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}/, // OpenAI (sk-, sk-proj-), Anthropic (sk-ant-)
  /(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}/, // Stripe secret and restricted keys
  /(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,}/, // GitHub tokens
  /(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,}/, // GitHub fine-grained tokens
  /(?<![A-Za-z0-9-])xox[baprs]-[A-Za-z0-9-]{10,}/, // Slack
  /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}/, // Google API keys
  /(?<![A-Za-z0-9_-])glpat-[0-9A-Za-z_-]{20,}/, // GitLab personal access tokens
  /(?<![A-Za-z0-9_])whsec_[A-Za-z0-9+/]{20,}/, // Standard Webhooks secrets, ours included
];
// `token=…`, `"client_secret": "…"`, `api-key: …`: the value counts only when it looks random.
const SECRET_ASSIGNMENT =
  /(?:token|secret|api[_-]?key|access[_-]?key|private[_-]?key)(?:[_-]?key)?["']?\s{0,8}[=:]\s{0,8}["']?([A-Za-z0-9+/_.~-]{16,})/gi;
const MIN_ASSIGNED_SECRET_ENTROPY = 3;
const PASSWORD_ASSIGNMENT = /(?:password|passwd|passphrase)["']?\s{0,8}[=:]\s{0,8}["']?[^\s"',;&]{4,}/i;
const JWT = /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*/;
const BEARER_TOKEN = /(?<![A-Za-z0-9])bearer[ \t]{1,8}[A-Za-z0-9._~+/-]{16,}/i;
const BASIC_AUTH = /(?<![A-Za-z0-9])basic[ \t]{1,8}([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])/gi;
// scheme://user:password@host. Anchored on the literal `://`, with bounded parts.
const URL_CREDENTIALS = /:\/\/[^\s/?#@:]{1,256}:[^\s/?#@]{1,256}@/;

// ---------------------------------------------------------------------------------------------
// Value detectors: personal data

// 13–19 digits, single spaces or dashes allowed between them, not part of a longer digit run.
const CARD_CANDIDATE = /(?<![0-9][ -]?)[0-9](?:[ -]?[0-9]){12,18}(?![ -]?[0-9])/g;
// Local part bounded to 64 (RFC 5321) and the domain to 253; the domain is checked in code.
const EMAIL_CANDIDATE = /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@([A-Za-z0-9.-]{1,253})/g;
const INTERNATIONAL_PHONE = /(?<![A-Za-z0-9+])\+[0-9][0-9 ().-]{8,22}[0-9](?![0-9])/g;
const NANP_PHONE = /(?<![0-9])(?:\([0-9]{3}\) ?|[0-9]{3}[ .-])[0-9]{3}[ .-][0-9]{4}(?![0-9])/;
// Country code, check digits, then the BBAN printed in groups of four (spaces optional).
const IBAN_CANDIDATE =
  /(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![A-Za-z0-9])/g;
const US_SSN = /(?<![0-9])([0-9]{3})([- ])([0-9]{2})\2([0-9]{4})(?![0-9])/g;

// ---------------------------------------------------------------------------------------------
// Key-name detectors

const SECRET_WORDS = new Set([
  'password',
  'passwd',
  'passphrase',
  'passcode',
  'secret',
  'secrets',
  'credential',
  'credentials',
  'authorization',
  'apikey',
  'privatekey',
  'accesskey',
  'secretkey',
]);
/** `<word> key` pairs that name a secret (`api_key`, `signingKey`). */
const SECRET_KEY_QUALIFIERS = new Set([
  'api',
  'private',
  'secret',
  'access',
  'signing',
  'encryption',
  'ssh',
  'master',
  'client',
  'auth',
  'license',
]);
/** A `token` next to one of these is a count (`max_tokens` is not matched at all: plural). */
const TOKEN_COUNT_WORDS = new Set([
  'count',
  'counts',
  'limit',
  'limits',
  'budget',
  'usage',
  'used',
  'total',
  'max',
  'min',
  'remaining',
  'estimate',
  'cost',
  'per',
]);
const PII_WORDS = new Set([
  'email',
  'emails',
  'phone',
  'phones',
  'mobile',
  'telephone',
  'msisdn',
  'fax',
  'address',
  'addresses',
  'street',
  'zip',
  'zipcode',
  'postcode',
  'ssn',
  'dob',
  'birthdate',
  'birthday',
  'birth',
  'passport',
  'iban',
  'firstname',
  'lastname',
  'fullname',
  'surname',
  'middlename',
  'givenname',
  'familyname',
  'maidenname',
  'legalname',
  'username',
]);
/** `<word> <second>` pairs that name personal data. */
const PII_PAIRS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['e', new Set(['mail'])],
  ['postal', new Set(['code'])],
  ['first', new Set(['name'])],
  ['last', new Set(['name'])],
  ['full', new Set(['name'])],
  ['given', new Set(['name'])],
  ['family', new Set(['name'])],
  ['middle', new Set(['name'])],
  ['maiden', new Set(['name'])],
  ['legal', new Set(['name'])],
  ['national', new Set(['id'])],
  ['tax', new Set(['id'])],
  ['social', new Set(['security'])],
  ['driver', new Set(['license', 'licence'])],
  ['drivers', new Set(['license', 'licence'])],
  ['card', new Set(['number'])],
  ['credit', new Set(['card'])],
  ['account', new Set(['number'])],
]);
/** A bare `name` is personal data only next to one of these (`user.name`, not `tool.name`). */
const PERSON_WORDS = new Set([
  'user',
  'customer',
  'person',
  'contact',
  'patient',
  'employee',
  'member',
  'owner',
  'holder',
  'cardholder',
  'recipient',
  'sender',
  'guest',
  'student',
  'applicant',
  'beneficiary',
  'spouse',
]);

function hasSecretKeyName(words: readonly string[]): boolean {
  for (const [i, word] of words.entries()) {
    if (SECRET_WORDS.has(word)) return true;
    const prev = words[i - 1];
    if (word === 'key' && prev !== undefined && SECRET_KEY_QUALIFIERS.has(prev)) return true;
    if (word === 'token') {
      const next = words[i + 1];
      const isCount =
        (prev !== undefined && TOKEN_COUNT_WORDS.has(prev)) ||
        (next !== undefined && TOKEN_COUNT_WORDS.has(next));
      if (!isCount) return true;
    }
  }
  return false;
}

function hasPiiKeyName(words: readonly string[]): boolean {
  for (const [i, word] of words.entries()) {
    if (PII_WORDS.has(word)) return true;
    const next = words[i + 1];
    if (next !== undefined && PII_PAIRS.get(word)?.has(next)) return true;
    if (word === 'name' && words.some((w) => PERSON_WORDS.has(w))) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Checks behind the candidates

function shannonEntropy(text: string): number {
  const counts = new Map<string, number>();
  for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / text.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

function hasRandomLookingAssignment(value: string): boolean {
  for (const match of value.matchAll(SECRET_ASSIGNMENT)) {
    const assigned = match[1] ?? '';
    if (shannonEntropy(assigned) >= MIN_ASSIGNED_SECRET_ENTROPY) return true;
  }
  return false;
}

function hasBasicCredentials(value: string): boolean {
  for (const match of value.matchAll(BASIC_AUTH)) {
    const decoded = Buffer.from(match[1] ?? '', 'base64').toString('latin1');
    // Decoded Basic credentials are printable `user:password`; ordinary words decode to noise.
    if (/^[\x20-\x7e]+$/.test(decoded) && decoded.includes(':')) return true;
  }
  return false;
}

function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

function hasCardNumber(value: string): boolean {
  for (const match of value.matchAll(CARD_CANDIDATE)) {
    const digits = match[0].replace(/[ -]/g, '');
    // All-same digits pass Luhn for some lengths (0000…) but are placeholders, not cards.
    if (/^(\d)\1*$/.test(digits)) continue;
    if (luhnValid(digits)) return true;
  }
  return false;
}

function hasEmail(value: string): boolean {
  for (const match of value.matchAll(EMAIL_CANDIDATE)) {
    const labels = (match[1] ?? '').replace(/\.$/, '').split('.');
    if (labels.length < 2) continue;
    const tld = labels[labels.length - 1] ?? '';
    const wellFormed = labels.every(
      (l) => l.length > 0 && l.length <= 63 && !l.startsWith('-') && !l.endsWith('-'),
    );
    if (wellFormed && /^[A-Za-z]{2,63}$/.test(tld)) return true;
  }
  return false;
}

function hasPhone(value: string): boolean {
  if (NANP_PHONE.test(value)) return true;
  for (const match of value.matchAll(INTERNATIONAL_PHONE)) {
    const digits = match[0].replace(/[^0-9]/g, '').length;
    if (digits >= 10 && digits <= 15) return true;
  }
  return false;
}

function ibanValid(compact: string): boolean {
  if (compact.length < 15 || compact.length > 34) return false;
  const rearranged = compact.slice(4) + compact.slice(0, 4);
  let remainder = 0;
  for (const c of rearranged) {
    const code = c.charCodeAt(0);
    const n = code >= 65 ? code - 55 : code - 48;
    remainder = (n >= 10 ? remainder * 100 + n : remainder * 10 + n) % 97;
  }
  return remainder === 1;
}

function hasIban(value: string): boolean {
  for (const match of value.matchAll(IBAN_CANDIDATE)) {
    if (ibanValid(match[0].replace(/ /g, ''))) return true;
  }
  return false;
}

function hasUsSsn(value: string): boolean {
  for (const match of value.matchAll(US_SSN)) {
    const [, area = '', , group = '', serial = ''] = match;
    // SSA never issues area 000, 666 or 900–999, group 00 or serial 0000.
    if (area === '000' || area === '666' || area.startsWith('9')) continue;
    if (group === '00' || serial === '0000') continue;
    return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------

const DETECTORS: readonly Detector[] = [
  { name: 'password_key', sensitivity: 'secret', test: (_v, words) => hasSecretKeyName(words) },
  { name: 'private_key', sensitivity: 'secret', test: (v) => PRIVATE_KEY.test(v) },
  { name: 'aws_access_key', sensitivity: 'secret', test: (v) => AWS_ACCESS_KEY.test(v) },
  {
    name: 'api_key',
    sensitivity: 'secret',
    test: (v) => VENDOR_API_KEYS.some((re) => re.test(v)) || hasRandomLookingAssignment(v),
  },
  { name: 'password_assignment', sensitivity: 'secret', test: (v) => PASSWORD_ASSIGNMENT.test(v) },
  { name: 'jwt', sensitivity: 'secret', test: (v) => JWT.test(v) },
  { name: 'bearer_token', sensitivity: 'secret', test: (v) => BEARER_TOKEN.test(v) },
  { name: 'basic_auth', sensitivity: 'secret', test: (v) => hasBasicCredentials(v) },
  { name: 'url_credentials', sensitivity: 'secret', test: (v) => URL_CREDENTIALS.test(v) },
  { name: 'pii_key', sensitivity: 'pii', test: (_v, words) => hasPiiKeyName(words) },
  { name: 'card_number', sensitivity: 'pii', test: (v) => hasCardNumber(v) },
  { name: 'email', sensitivity: 'pii', test: (v) => hasEmail(v) },
  { name: 'phone', sensitivity: 'pii', test: (v) => hasPhone(v) },
  { name: 'iban', sensitivity: 'pii', test: (v) => hasIban(v) },
  { name: 'us_ssn', sensitivity: 'pii', test: (v) => hasUsSsn(v) },
];

/**
 * Every detector {@link classify} can report, in report order. Key-name detectors are
 * `password_key` (secret) and `pii_key` (pii); the others read the value.
 */
export const DETECTOR_NAMES: readonly string[] = DETECTORS.map((d) => d.name);

const RANK: Record<Sensitivity, number> = { public: 0, pii: 1, secret: 2 };

function keyWords(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
}

/**
 * Classifies a state item by running every detector over its key name and value. Deterministic,
 * no I/O; the strictest sensitivity any detector reports wins. Never throws: the key need not be
 * canonical (field names such as `params.apiKey` work too).
 *
 * Secret detectors: `password_key` (key names such as password, secret, token, api_key,
 * private_key, credential), `private_key` (PEM/PuTTY), `aws_access_key`, `api_key` (sk-…,
 * sk_live_…, ghp_…, github_pat_…, xox?-…, AIza…, glpat-…, whsec_…, or a random-looking value
 * after `token=`/`secret=`/`api_key=`), `password_assignment` (`password=…`), `jwt`,
 * `bearer_token`, `basic_auth`, `url_credentials` (`scheme://user:pass@`).
 * PII detectors: `pii_key` (email, phone, address, ssn, dob, first/last name, `user.name`…),
 * `card_number` (Luhn-valid), `email`, `phone` (`+` and 10–15 digits, or `(555) 123-4567`),
 * `iban` (mod-97 valid), `us_ssn` (`123-45-6789`, SSA-valid ranges).
 *
 * @example
 * classify('user.email', 'ada@example.com')
 * // { sensitivity: 'pii', category: 'user', detectors: ['pii_key', 'email'] }
 */
export function classify(key: string, value: string): Classification {
  const words = keyWords(key);
  const detectors: string[] = [];
  let sensitivity: Sensitivity = 'public';
  for (const detector of DETECTORS) {
    if (!detector.test(value, words)) continue;
    detectors.push(detector.name);
    if (RANK[detector.sensitivity] > RANK[sensitivity]) sensitivity = detector.sensitivity;
  }
  return { sensitivity, category: keyCategory(key), detectors };
}

/**
 * Returns what may be shown of a value of the given sensitivity: {@link MASKED_SECRET}
 * (`'[secret masked]'`) for `secret`, the value unchanged otherwise.
 * @example
 * maskValue('sk-live-…', 'secret') // '[secret masked]'
 * maskValue('ada@example.com', 'pii') // 'ada@example.com'
 */
export function maskValue(value: string, sensitivity: Sensitivity): string {
  return sensitivity === 'secret' ? MASKED_SECRET : value;
}
