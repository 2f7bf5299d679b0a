import { describe, expect, it } from 'vitest';
import * as consoleLists from '../../console/vocabulary.js';
import { ApprovalStatusSchema, DeliverySchema, EVENT_TYPES, VerdictSchema } from '../../src/index.js';

describe('the console offers the server’s choices', () => {
  it('every event type, verdict, approval status and delivery status, in the server’s order', () => {
    expect([...consoleLists.EVENT_TYPES]).toEqual([...EVENT_TYPES]);
    expect([...consoleLists.VERDICTS]).toEqual(VerdictSchema.options);
    expect([...consoleLists.APPROVAL_STATUSES]).toEqual(ApprovalStatusSchema.options);
    expect([...consoleLists.DELIVERY_STATUSES]).toEqual(DeliverySchema.shape.status.options);
  });
});
