/** Policies shared by tests of several faces, so each face is held to the same rules. */

/** `payments.*` needs a user-set budget and may not exceed it. */
export const BUDGET_POLICY = `
version: 1
actions:
  "payments.*":
    requires:
      - key: budget.limit
        min_trust: user_input
    rules:
      - name: over_budget
        when: "double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds the budget of {state['budget.limit'].value}"
`;

/**
 * {@link BUDGET_POLICY} with the over-budget rule holding the transfer for an approver labelled
 * `finance` instead of refusing it; `refunds.*` allows two uses and self-approval.
 */
export const APPROVAL_POLICY = `
version: 1
actions:
  "payments.*":
    requires:
      - key: budget.limit
        min_trust: user_input
    rules:
      - name: large_transfer
        when: "double(params.amount) > state['budget.limit'].number"
        verdict: Block
        message: "Transfer of {params.amount} exceeds the budget of {state['budget.limit'].value}"
        approval: { expires_in: 15m, approvers: [finance] }
  "refunds.*":
    rules:
      - name: refund_review
        when: "true"
        verdict: Block
        message: "Refunds need a second look"
        approval: { expires_in: 1h, uses: 2, allow_self_approval: true }
`;
