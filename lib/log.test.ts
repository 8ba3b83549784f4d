import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redact } from './log.ts';

test('redact hides secret fields at any depth and keeps the rest', () => {
  assert.deepEqual(
    redact({
      headers: { Authorization: 'Bearer abc', 'x-request-id': '1' },
      body: { password: 'p', user: 'u', nested: [{ token: 't' }] },
      SVC_AUTH: 'k',
    }),
    {
      headers: { Authorization: '[redacted]', 'x-request-id': '1' },
      body: { password: '[redacted]', user: 'u', nested: [{ token: '[redacted]' }] },
      SVC_AUTH: '[redacted]',
    },
  );
});
