import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statusRow, statusTable } from './status.ts';

test('a Ready API and a refused policy: IDs, condition, gateway, the message only when not Ready', () => {
  const rows = [
    statusRow('ApiDefinition', {
      metadata: { name: 'orders', namespace: 'shop' },
      status: {
        api_id: 'a1',
        pushedTo: { url: 'http://gw:8080' },
        conditions: [{ type: 'Ready', status: 'True', reason: 'Synced', message: 'ok' }],
      },
    }),
    statusRow('SecurityPolicy', {
      metadata: { name: 'gold', namespace: 'shop' },
      status: {
        pol_id: 'p1',
        pushedTo: { url: 'http://gw2:8080', contextRef: { name: 'ctx', namespace: 'ops' } },
        conditions: [{ type: 'Ready', status: 'False', reason: 'ApiNotFound', message: 'orders missing' }],
      },
    }),
    statusRow('ApiDefinition', { metadata: { name: 'new', namespace: 'shop' } }),
  ];
  const text = statusTable(rows);
  assert.match(text, /^KIND +NAMESPACE +NAME +ID +READY +REASON +GATEWAY +MESSAGE$/m);
  assert.match(text, /^ApiDefinition +shop +orders +a1 +True +Synced +http:\/\/gw:8080$/m);
  assert.match(
    text,
    /^SecurityPolicy +shop +gold +p1 +False +ApiNotFound +http:\/\/gw2:8080 \(ops\/ctx\) +orders missing$/m,
  );
  assert.match(text, /^ApiDefinition +shop +new +Unknown$/m);
});

test('nothing listed', () => {
  assert.equal(statusTable([]), 'No svc resources found.\n');
});
