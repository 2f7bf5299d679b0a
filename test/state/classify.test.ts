import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classify, DETECTOR_NAMES, MASKED_SECRET, maskValue } from '../../src/state/classify.js';

// Credential-shaped fixtures are assembled at run time so no literal secret sits in the repo.
const b64 = (s: string) => Buffer.from(s).toString('base64');
const rand = (n: number) => 'a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ'.repeat(3).slice(0, n);

function detectorsOf(value: string, key = 'note.text'): string[] {
  return classify(key, value).detectors;
}

interface Case {
  detector: string;
  positive: string[];
  negative: string[];
}

const VALUE_CASES: Case[] = [
  {
    detector: 'private_key',
    positive: [
      `-----BEGIN RSA ${'PRIVATE KEY'}-----\nMIIEowIBAAKCAQEA…`,
      `-----BEGIN OPENSSH ${'PRIVATE KEY'}-----`,
      `-----BEGIN ${'PRIVATE KEY'}-----`,
      `-----BEGIN ENCRYPTED ${'PRIVATE KEY'}-----`,
      `-----BEGIN PGP ${'PRIVATE KEY'} BLOCK-----`,
      'PuTTY-User-Key-File-3: ssh-ed25519',
    ],
    negative: ['-----BEGIN PUBLIC KEY-----', '-----BEGIN CERTIFICATE-----', 'where is the private key?'],
  },
  {
    detector: 'aws_access_key',
    positive: [`AKIA${'IOSFODNN7EXAMPLE'}`, `id=ASIA${'Y34FZKBOKMUTVV7A'};`],
    negative: [
      `AKIA${'IOSFODNN7EXAMPL'}`,
      `XAKIA${'IOSFODNN7EXAMPLE'}`,
      `AKIA${'IOSFODNN7EXAMPLE1'}`,
      'AKIA',
    ],
  },
  {
    detector: 'api_key',
    positive: [
      `sk-${rand(40)}`,
      `key: sk-proj-${rand(48)}`,
      `sk-ant-api03-${rand(40)}`,
      `sk_live_${rand(24)}`,
      `rk_test_${rand(24)}`,
      `ghp_${rand(36)}`,
      `gho_${rand(36)}`,
      `github_pat_11ABCDEFG_${rand(40)}`,
      `xoxb-1234567890-${rand(24)}`,
      `AIza${rand(35)}`,
      `glpat-${rand(20)}`,
      `whsec_${b64('0123456789abcdef0123456789abcdef')}`,
      `https://api.example.com/v1?token=${rand(32)}`,
      `{"client_secret": "${rand(40)}"}`,
      `X-Api-Key: ${rand(24)}`,
      `SECRET_KEY=${rand(50)}`,
    ],
    negative: [
      'task-force-alpha-bravo-charlie-delta',
      'sk-short',
      'token=aaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      'token=abc123',
      'the secret is out',
      'ghp_tooShort',
      'AIza-not-a-key',
    ],
  },
  {
    detector: 'password_assignment',
    positive: ['password=hunter22', 'DB_PASSWORD: "s3cr3t!"', "passphrase = 'correct horse'"],
    negative: ['password_reset_required: true', 'forgot password? click here', 'password='],
  },
  {
    detector: 'jwt',
    positive: [
      'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      'alg none: eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiJ9.',
    ],
    negative: ['eyJhbGciOiJIUzI1NiJ9', 'eyJ.eyJ.x', 'xeyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig'],
  },
  {
    detector: 'bearer_token',
    positive: [`Authorization: Bearer ${rand(32)}`, `bearer\t${rand(20)}.${rand(10)}`],
    negative: ['the bearer of bad news', 'Bearer short', `forbearer ${rand(20)}`],
  },
  {
    detector: 'basic_auth',
    positive: [`Authorization: Basic ${b64('admin:hunter2')}`],
    negative: ['a basic understanding of things', `Basic ${b64('no colon here')}`],
  },
  {
    detector: 'url_credentials',
    positive: [
      'postgres://admin:hunter2@db.internal:5432/app',
      'redis://:p4ss@cache:6379'.replace('://:', '://u:'),
    ],
    negative: ['https://user@example.com/', 'https://example.com/a:b@c', 'mailto:bob@example.com'],
  },
  {
    detector: 'card_number',
    positive: [
      '4111 1111 1111 1111',
      '4111-1111-1111-1111',
      'card 4111111111111111 exp 12/30',
      '378282246310005',
      '5555 5555 5555 4444',
      '6011 0009 9013 9424',
    ],
    negative: [
      '4111111111111112',
      '4111 1111 1111 1112',
      '0000 0000 0000 0000',
      '411111111111',
      '41111111111111110000',
      '4111  1111  1111  1111',
    ],
  },
  {
    detector: 'email',
    positive: ['ada@example.com', 'Contact: first.last+tag@mail.example.co.uk.', 'mailto:bob@example.org'],
    negative: ['user@localhost', 'a@b', '@example.com', 'foo@bar', 'x@-bad-.com', 'v1.2.3@2024'],
  },
  {
    detector: 'phone',
    positive: [
      '+1 415 555 2671',
      '+44 20 7946 0958',
      'call +4915112345678 now',
      '(415) 555-2671',
      '415-555-2671',
    ],
    negative: ['1700000000', '+123 45', 'version 1.2.3', '+1234567890123456789', '4155552671'],
  },
  {
    detector: 'iban',
    positive: [
      'DE89 3704 0044 0532 0130 00',
      'GB82WEST12345698765432',
      'pay to FR1420041010050500013M02606 today',
    ],
    negative: ['DE89 3704 0044 0532 0130 01', 'GB82WEST12345698765433', 'de89370400440532013000', 'AB12'],
  },
  {
    detector: 'us_ssn',
    positive: ['123-45-6789', 'SSN 078 05 1120'],
    negative: [
      '000-12-3456',
      '666-12-3456',
      '900-12-3456',
      '123-00-4567',
      '123-45-0000',
      '123-456-789',
      '123-45 6789',
      '1123-45-6789',
    ],
  },
];

describe('classify: value detectors', () => {
  for (const { detector, positive, negative } of VALUE_CASES) {
    describe(detector, () => {
      it.each(positive)('detects %j', (value) => {
        expect(detectorsOf(value)).toContain(detector);
      });
      it.each(negative)('does not detect %j', (value) => {
        expect(detectorsOf(value)).not.toContain(detector);
      });
    });
  }

  it('finds a valid card after a non-Luhn candidate in the same value', () => {
    expect(detectorsOf('ref 4111111111111112, card 4111111111111111')).toContain('card_number');
  });
});

describe('classify: key-name detectors', () => {
  it.each([
    'user.password',
    'db.passwd',
    'github.token',
    'oauth.access_token',
    'github.api_key',
    'params.apiKey',
    'params.APIKey',
    'ssh.private_key',
    'aws.credentials',
    'oauth.client_secret',
    'stripe.secret',
    'webhook.signing-key',
    'headers.authorization',
  ])('%s is a secret name (password_key)', (key) => {
    const result = classify(key, 'x');
    expect(result.detectors).toContain('password_key');
    expect(result.sensitivity).toBe('secret');
  });

  it.each([
    'llm.max_tokens',
    'usage.token_count',
    'budget.max_token',
    'user.keyboard',
    'config.public_key',
    'auth.mode',
    'task.status',
  ])('%s is not a secret name', (key) => {
    expect(classify(key, 'x').detectors).not.toContain('password_key');
  });

  it.each([
    'user.email',
    'contact.phone',
    'contact.mobile',
    'shipping.address',
    'user.ssn',
    'user.dob',
    'patient.date_of_birth',
    'user.name',
    'customer.first_name',
    'user.firstName',
    'user.e-mail',
    'kyc.national_id',
    'billing.iban',
  ])('%s is a personal-data name (pii_key)', (key) => {
    const result = classify(key, 'x');
    expect(result.detectors).toContain('pii_key');
    expect(result.sensitivity).toBe('pii');
  });

  it.each(['tool.name', 'project.name', 'agent.status', 'mail.provider', 'order.total'])(
    '%s is not a personal-data name',
    (key) => {
      expect(classify(key, 'x').detectors).not.toContain('pii_key');
    },
  );
});

describe('classify: result', () => {
  it('is public with no detectors for ordinary values, with the key area as category', () => {
    expect(classify('trip.destination', 'Lisbon')).toEqual({
      sensitivity: 'public',
      category: 'trip',
      detectors: [],
    });
  });

  it('lets the strictest sensitivity win and reports every detector in a fixed order', () => {
    const result = classify('user.email', `ada@example.com sk-${rand(30)}`);
    expect(result.sensitivity).toBe('secret');
    expect(result.detectors).toEqual(['api_key', 'pii_key', 'email']);
    expect(classify('user.email', 'ada@example.com').sensitivity).toBe('pii');
  });

  it('accepts non-canonical field names and never throws', () => {
    expect(classify('Params.apiKey', 'x')).toMatchObject({ category: 'params', sensitivity: 'secret' });
    expect(classify('', '')).toEqual({ sensitivity: 'public', category: '', detectors: [] });
  });

  it('property: total, deterministic, and sensitivity follows the detectors', () => {
    const secretDetectors = new Set(DETECTOR_NAMES.slice(0, DETECTOR_NAMES.indexOf('pii_key')));
    fc.assert(
      fc.property(
        fc.string({ maxLength: 30 }),
        fc.string({ unit: 'binary', maxLength: 200 }),
        (key, value) => {
          const a = classify(key, value);
          expect(classify(key, value)).toEqual(a);
          for (const d of a.detectors) expect(DETECTOR_NAMES).toContain(d);
          const expected = a.detectors.some((d) => secretDetectors.has(d))
            ? 'secret'
            : a.detectors.length > 0
              ? 'pii'
              : 'public';
          expect(a.sensitivity).toBe(expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('completes on 16 KiB adversarial values (linear-time patterns)', () => {
    const n = 16 * 1024;
    const fill = (unit: string) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
    const values = [
      fill('a'),
      fill('0'),
      fill('1 '),
      fill('1-'),
      fill('eyJ'),
      fill('eyJa.'),
      fill('-----BEGIN '),
      fill('-----BEGIN A'),
      fill('token='),
      fill('token=a'),
      fill('password:'),
      fill('a@'),
      fill('a.'),
      `${fill('a')}@`,
      `${fill('a.')}@x`,
      fill('+1'),
      fill('+1 '),
      fill('(415) '),
      fill('AA00'),
      fill('AA00 '),
      fill('://a:'),
      fill('://a:b'),
      fill('bearer '),
      fill('basic QUFB'),
      fill('sk-'),
      fill('AKIA'),
      fill('123-45-'),
      fill('a%+'),
      fill('\t \n'),
    ];
    for (const value of values) {
      expect(value.length).toBeGreaterThanOrEqual(n);
      expect(() => classify('probe.value', value)).not.toThrow();
    }
  });
});

describe('maskValue', () => {
  it('masks secrets only', () => {
    expect(maskValue(`sk-${rand(30)}`, 'secret')).toBe(MASKED_SECRET);
    expect(MASKED_SECRET).toBe('[secret masked]');
    expect(maskValue('ada@example.com', 'pii')).toBe('ada@example.com');
    expect(maskValue('Lisbon', 'public')).toBe('Lisbon');
  });
});
