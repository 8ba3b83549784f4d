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
  assert.match(text, /^KIND +NAMESPACE +NAME +ID +READY +REASON +GATEWAY +SERVED +MESSAGE$/m);
  assert.match(text, /^ApiDefinition +shop +orders +a1 +True +Synced +http:\/\/gw:8080$/m);
  assert.match(
    text,
    /^SecurityPolicy +shop +gold +p1 +False +ApiNotFound +http:\/\/gw2:8080 \(ops\/ctx\) +orders missing$/m,
  );
  assert.match(text, /^ApiDefinition +shop +new +Unknown$/m);
});

test('the gateways that must serve it: how many serve the current revision, each listed in JSON', () => {
  const current = 'a'.repeat(64);
  const row = (gateways: { name: string; revision?: string }[], ready: 'True' | 'False') =>
    statusRow('SecurityPolicy', {
      metadata: { name: 'gold', namespace: 'shop' },
      status: {
        pol_id: 'p1',
        pushedTo: { url: 'http://gw:8080' },
        latestSvcSpecHash: current,
        gateways,
        conditions: [
          ready === 'True'
            ? { type: 'Ready', status: 'True', reason: 'Synced', message: 'ok' }
            : {
                type: 'Ready',
                status: 'False',
                reason: 'Pending',
                message: 'waiting for 2 of 3 gateways: gw-b:8080, gw-c:8080',
              },
        ],
      },
    });
  const both = row(
    [
      { name: 'gw-a:8080', revision: current },
      { name: 'gw-b:8080', revision: current },
    ],
    'True',
  );
  const behind = row(
    [
      { name: 'gw-a:8080', revision: current },
      { name: 'gw-b:8080', revision: 'b'.repeat(64) },
      { name: 'gw-c:8080' },
    ],
    'False',
  );
  const text = statusTable([both, behind]);
  assert.match(text, /^SecurityPolicy +shop +gold +p1 +True +Synced +http:\/\/gw:8080 +2\/2$/m);
  assert.match(
    text,
    /^SecurityPolicy +shop +gold +p1 +False +Pending +http:\/\/gw:8080 +1\/3 +waiting for 2 of 3 gateways: gw-b:8080, gw-c:8080$/m,
  );
  assert.deepEqual(
    behind.gateways.map((g) => `${g.name} ${String(g.current)}`),
    ['gw-a:8080 true', 'gw-b:8080 false', 'gw-c:8080 false'],
  );
  assert.equal(statusRow('ApiKey', { metadata: { name: 'k', namespace: 'shop' } }).served, '');
});

test('nothing listed', () => {
  assert.equal(statusTable([]), 'No svc resources found.\n');
});
