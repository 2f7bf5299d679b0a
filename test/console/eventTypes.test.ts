import { describe, expect, it } from 'vitest';
import { EVENT_TYPES as CONSOLE_EVENT_TYPES } from '../../console/eventTypes.js';
import { EVENT_TYPES } from '../../src/index.js';

describe('console event types', () => {
  it('the history filter suggests every event type the server writes, in its order', () => {
    expect([...CONSOLE_EVENT_TYPES]).toEqual([...EVENT_TYPES]);
  });
});
