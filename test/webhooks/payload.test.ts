import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildWebhookPayload, WebhookEventSchema } from '../../src/webhooks/index.js';

const event = {
  event_id: 'evt_01J',
  type: 'state_change',
  occurred_at: '2025-01-01T00:00:00.000Z',
  session_id: 'sess_1',
  data: { key: 'user.email', version: 2 },
};

describe('buildWebhookPayload', () => {
  it('is the exact JSON string {id, type, occurred_at, session_id, data}, in that order', () => {
    expect(buildWebhookPayload(event)).toBe(
      '{"id":"evt_01J","type":"state_change","occurred_at":"2025-01-01T00:00:00.000Z",' +
        '"session_id":"sess_1","data":{"key":"user.email","version":2}}',
    );
  });

  it('drops fields the event carries beyond the contract', () => {
    const extra = { ...event, tenant_id: 't1', hash: 'abc' } as typeof event;
    expect(Object.keys(JSON.parse(buildWebhookPayload(extra)))).toEqual([
      'id',
      'type',
      'occurred_at',
      'session_id',
      'data',
    ]);
  });

  it('sends undefined data as null so the field is always present', () => {
    expect(JSON.parse(buildWebhookPayload({ ...event, data: undefined })).data).toBeNull();
  });

  it('is the same body when built around data already written as JSON (as a store keeps it)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), (value, id) => {
        // A store writes JSON.stringify(data) and reads the event's data back by parsing it.
        const stored = JSON.stringify(value);
        const read = { ...event, event_id: id, data: JSON.parse(stored) };
        expect(buildWebhookPayload(read, stored)).toBe(buildWebhookPayload(read));
      }),
    );
  });

  it('round-trips through the receiver schema', () => {
    expect(WebhookEventSchema.parse(JSON.parse(buildWebhookPayload(event)))).toEqual({
      id: 'evt_01J',
      type: 'state_change',
      occurred_at: '2025-01-01T00:00:00.000Z',
      session_id: 'sess_1',
      data: { key: 'user.email', version: 2 },
    });
  });
});
