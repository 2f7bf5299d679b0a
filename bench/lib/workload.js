// The realistic workload shared by the benchmarks: a policy of 10 action entries and 20 CEL
// rules, a session of 50 state items, and the evaluate requests that rotate over the actions.

/** 10 action entries, 20 CEL rules (4 global + 16 per action), built-in requirement checks. */
export const BENCH_POLICY_YAML = `version: 1
default_verdict: Allow
low_trust_below: 3
open_conflicts: Warn
rules:
  - name: no_deploy_friday
    when: "action.startsWith('deploy.') && now.getDayOfWeek() == 5"
    verdict: Block
    message: "No deploys on Friday ({action})."
  - name: kill_switch
    when: "'ops.kill_switch' in state && state['ops.kill_switch'].value == 'on'"
    verdict: Block
    message: "The kill switch is on."
  - name: untrusted_origin
    when: "has(context.origin) && context.origin == 'untrusted'"
    verdict: Warn
    message: "Request from an untrusted origin."
  - name: conflict_storm
    when: "size(conflicts) > 3"
    verdict: Block
    message: "{size(conflicts)} unresolved conflicts."
actions:
  "payments.transfer":
    requires:
      - key: budget.limit
        min_trust: user_input
        types: [fact, constraint]
    rules:
      - name: over_budget
        when: "has(params.amount) && double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds the budget of {state['budget.limit'].value}."
      - name: large_transfer
        when: "has(params.amount) && double(params.amount) > 10000.0"
        verdict: Warn
        mode: shadow
      - name: currency_mismatch
        when: "has(params.currency) && 'budget.currency' in state && params.currency != state['budget.currency'].value"
        verdict: Block
        message: "Currency {params.currency} is not the budget currency."
  "payments.refund":
    requires:
      - key: budget.limit
    rules:
      - name: refund_limit
        when: "has(params.amount) && double(params.amount) > 500.0"
        verdict: Warn
        message: "Refund of {params.amount} needs review."
  "email.send":
    rules:
      - name: external_recipient
        when: "has(params.to) && !params.to.endsWith('@corp.example')"
        verdict: Warn
        message: "Mail to {params.to} leaves the company."
      - name: bulk_mail
        when: "has(params.cc) && size(params.cc) > 20"
        verdict: Block
        message: "Too many recipients."
  "files.delete":
    rules:
      - name: protected_path
        when: "has(params.path) && (params.path.startsWith('/etc') || params.path.startsWith('/usr'))"
        verdict: Block
        message: "{params.path} is protected."
      - name: recursive_delete
        when: "has(params.recursive) && params.recursive == true"
        verdict: Warn
        message: "Recursive delete."
  "files.write":
    rules:
      - name: write_quota
        when: "has(params.bytes) && 'quota.bytes' in state && double(params.bytes) > state['quota.bytes'].number"
        verdict: Block
        message: "Write over quota."
  "deploy.production":
    requires:
      - key: deploy.approved
        min_trust: user_input
    rules:
      - name: not_approved
        when: "state['deploy.approved'].value != 'yes'"
        verdict: Block
        message: "Deploy not approved."
      - name: freeze
        when: "'deploy.freeze' in state && state['deploy.freeze'].value == 'on'"
        verdict: Block
        message: "Change freeze."
  "db.query":
    rules:
      - name: destructive_sql
        when: "has(params.sql) && params.sql.matches('^ *(DROP|TRUNCATE|drop|truncate) ')"
        verdict: Block
        message: "Destructive SQL."
      - name: unbounded_select
        when: "has(params.sql) && !params.sql.contains('LIMIT')"
        verdict: Warn
        message: "Query without LIMIT."
  "calendar.create":
    rules:
      - name: too_long
        when: "has(params.hours) && double(params.hours) > 8.0"
        verdict: Warn
        message: "A meeting of {params.hours} hours."
  "crm.update":
    requires:
      - key: user.role
    rules:
      - name: role_check
        when: "state['user.role'].value != 'admin' && has(params.field) && params.field == 'owner'"
        verdict: Block
        message: "Only an admin may change the owner."
  "search.web":
    rules:
      - name: long_query
        when: "has(params.query) && size(params.query) > 500"
        verdict: Warn
        message: "Query too long."
`;

/** The 50 state items of the benchmark session. */
export function sessionItems(sessionId) {
  const fixed = [
    ['budget.limit', '5000', 'fact', 'user_input'],
    ['budget.currency', 'EUR', 'fact', 'user_input'],
    ['quota.bytes', '1048576', 'constraint', 'system'],
    ['deploy.approved', 'yes', 'fact', 'user_input'],
    ['deploy.freeze', 'off', 'fact', 'system'],
    ['ops.kill_switch', 'off', 'fact', 'system'],
    ['user.role', 'admin', 'fact', 'system'],
    ['user.email', 'ada@corp.example', 'fact', 'user_input'],
    ['user.name', 'Ada Lovelace', 'fact', 'user_input'],
    ['user.locale', 'en-GB', 'preference', 'user_input'],
  ];
  const items = fixed.map(([key, value, type, source]) => ({
    session_id: sessionId,
    key,
    value,
    type,
    source,
  }));
  const sources = ['user_input', 'tool_output', 'retrieval', 'agent_inference'];
  const types = ['fact', 'assumption', 'preference', 'constraint'];
  for (let i = items.length; i < 50; i += 1) {
    items.push({
      session_id: sessionId,
      key: `task.note_${String(i).padStart(2, '0')}`,
      value:
        i % 3 === 0 ? String(i * 37) : `observation ${i}: the tool returned ${i * 7} rows from the index`,
      type: types[i % types.length],
      source: sources[i % sources.length],
    });
  }
  return items;
}

/** System source is needed for some items: in-process callers are the owner. */
export const OWNER_SOURCES = ['system', 'user_input', 'tool_output', 'retrieval', 'agent_inference'];

/** Evaluate requests, one per action entry, with realistic params. */
export function evaluateRequests(sessionId) {
  return [
    {
      action: 'payments.transfer',
      params: { amount: 1200, currency: 'EUR', to: 'DE89370400440532013000', memo: 'invoice 2024-117' },
    },
    { action: 'payments.refund', params: { amount: 80, order: 'ord_4471' } },
    {
      action: 'email.send',
      params: {
        to: 'bob@partner.example',
        subject: 'Quarterly numbers',
        body: 'Hi Bob, the numbers are attached. Best, Ada',
      },
    },
    { action: 'files.delete', params: { path: '/tmp/build/cache', recursive: true } },
    { action: 'files.write', params: { path: '/home/ada/report.md', bytes: 4096 } },
    {
      action: 'deploy.production',
      params: { service: 'billing', version: '2.14.1' },
      context: { ticket: 'OPS-1182' },
    },
    { action: 'db.query', params: { sql: 'SELECT id, total FROM orders WHERE customer_id = 42 LIMIT 100' } },
    {
      action: 'calendar.create',
      params: { title: 'Planning', hours: 1.5, attendees: ['bob@corp.example', 'eve@corp.example'] },
    },
    { action: 'crm.update', params: { account: 'acc_991', field: 'stage', value: 'won' } },
    {
      action: 'search.web',
      params: { query: 'sqlite wal synchronous normal durability' },
      context: { origin: 'agent' },
    },
  ].map((r) => ({ session_id: sessionId, ...r }));
}
