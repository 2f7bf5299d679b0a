/**
 * `gatehouse approvals list | show | approve | deny`: a person deciding held actions. They talk
 * to a running server over `/v1` with the approver's own API key (scope `approvals:decide`,
 * labels the policy names), so the server checks who decides, exactly as for any other client;
 * nothing here opens the database.
 */
import { type Command, Option } from 'commander';
import { type Approval, ApprovalStatusSchema, IN_PROCESS_CALLER } from '../../src/index.js';
import { createGatehouseClient, type GatehouseClient } from '../client/index.js';
import { terminalSafe, terminalText } from './terminalText.js';

/** Where the server is and which key decides. */
function clientOptions(cmd: Command): Command {
  return cmd
    .option('--url <url>', 'the Gatehouse server (env GATEHOUSE_URL)', undefined)
    .option(
      '--api-key <key>',
      'an API key with approvals:decide (env GATEHOUSE_API_KEY, else GATEHOUSE_KEY as `serve` prints it; prefer the env)',
    )
    .option('--json', 'print the JSON answer');
}

function clientFrom(flags: { url?: string; apiKey?: string }): GatehouseClient {
  // GATEHOUSE_KEY too: it is the name `serve`'s first-start banner and the README export.
  const apiKey = flags.apiKey || process.env['GATEHOUSE_API_KEY'] || process.env['GATEHOUSE_KEY'];
  if (!apiKey) {
    throw new Error('An API key is needed: set GATEHOUSE_API_KEY or GATEHOUSE_KEY (or pass --api-key).');
  }
  return createGatehouseClient({
    baseUrl: flags.url ?? process.env['GATEHOUSE_URL'] ?? 'http://127.0.0.1:8787',
    apiKey,
  });
}

/**
 * `apr_…  pending  s1  payments.transfer {"amount":9000}  expires …`. JSON escapes C0 controls
 * in params but not C1 or bidi ones, so params go through the terminal escape as well.
 */
function line(a: Approval): string {
  return terminalText`${a.id}  ${a.status.padEnd(8)}  ${a.session_id}  ${a.action} ${JSON.stringify(a.params)}  expires ${a.expires_at}  (${a.rules.join(', ')})`;
}

function details(a: Approval): string {
  const rows: Array<[string, string]> = [
    ['approval', a.id],
    ['status', a.status],
    ['session', a.session_id],
    ['action', a.action],
    ['params', JSON.stringify(a.params)],
    ['state read', JSON.stringify(a.state_versions)],
    ['held by', `${a.rules.join(', ')}: ${a.reason}`],
    [
      'approvers',
      a.approvers.length === 0
        ? 'any key with approvals:decide'
        : a.approvers.map((l) => l.join(' or ')).join(' and '),
    ],
    [
      'requested by',
      `${a.requesters.map((r) => (r === IN_PROCESS_CALLER ? 'an in-process caller' : r)).join(', ')} (decision ${a.decision_id})`,
    ],
    ['uses', `${a.uses_left} of ${a.uses} left`],
    ['created', a.created_at],
    ['expires', a.expires_at],
    ['policy', a.policy.revision],
    ['digest', a.digest],
  ];
  if (a.decided_by)
    rows.push(['decided', `${a.decided_by} at ${a.decided_at}${a.comment ? `: ${a.comment}` : ''}`]);
  // Each value escaped on its own: the reason renders agent params, the comment is free text.
  return rows.map(([k, v]) => `${k.padEnd(13)}${terminalSafe(v)}`).join('\n');
}

const print = (text: string): void => {
  process.stdout.write(`${text}\n`);
};

/** Adds `approvals` and its subcommands to the `gatehouse` program. */
export function registerApprovalsCommands(program: Command): void {
  const approvals = program
    .command('approvals')
    .description('list, show, approve and deny actions held for approval (over /v1, with your key)');

  clientOptions(approvals.command('list'))
    .description('list approvals, newest first')
    .addOption(new Option('--status <status>', 'only this status').choices([...ApprovalStatusSchema.options]))
    .option('--session <id>', 'only this session')
    .option('--limit <n>', 'how many', '50')
    .option('--cursor <cursor>', 'the next page (printed after a full page)')
    .action(async (flags) => {
      const page = await clientFrom(flags).listApprovals({
        limit: Number(flags.limit),
        ...(flags.status ? { status: flags.status } : {}),
        ...(flags.session ? { session_id: flags.session as string } : {}),
        ...(flags.cursor ? { cursor: flags.cursor as string } : {}),
      });
      if (flags.json) return print(JSON.stringify(page));
      for (const a of page.approvals) print(line(a));
      if (page.approvals.length === 0) print('no approvals');
      if (page.next_cursor) print(terminalText`more: --cursor ${page.next_cursor}`);
    });

  clientOptions(approvals.command('show'))
    .description('show one approval: what exactly would be released')
    .argument('<id>', 'approval id (apr_…)')
    .option('--wait <seconds>', 'wait up to this long (at most 60) for a decision or expiry')
    .action(async (id: string, flags) => {
      const approval = await clientFrom(flags).getApproval(
        id,
        flags.wait ? { wait: Number(flags.wait) } : {},
      );
      print(flags.json ? JSON.stringify(approval) : details(approval));
    });

  for (const verb of ['approve', 'deny'] as const) {
    clientOptions(approvals.command(verb))
      .description(
        verb === 'approve'
          ? 'approve a pending approval: the same action, params and state may then proceed'
          : 'deny a pending approval: the same action stays blocked until it would have expired',
      )
      .argument('<id>', 'approval id (apr_…)')
      .option('--comment <text>', 'a note kept in the history')
      .action(async (id: string, flags) => {
        const client = clientFrom(flags);
        const input = flags.comment === undefined ? {} : { comment: String(flags.comment) };
        const decided = verb === 'approve' ? await client.approve(id, input) : await client.deny(id, input);
        print(
          flags.json
            ? JSON.stringify(decided)
            : terminalText`${decided.status} ${decided.id}: ${decided.action} ${JSON.stringify(decided.params)} in session ${decided.session_id}`,
        );
      });
  }
}
