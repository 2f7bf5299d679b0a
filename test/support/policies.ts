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
