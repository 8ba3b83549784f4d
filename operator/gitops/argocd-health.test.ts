/**
 * The chart's Argo CD health check (charts/svc-operator/argocd/health.lua) run with Lua, as Argo
 * CD runs it, on objects the operator wrote against a real API server (testdata/: captured from
 * the suite e2e/operator/gitops.test.ts, which also runs the script on the live objects), one or
 * more per kind, and on the states around them: not reconciled yet, an older generation, being
 * deleted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { argoHealth } from './testing.ts';

interface Captured {
  kind: string;
  metadata: { name: string; generation?: number; deletionTimestamp?: string };
  status?: Record<string, unknown>;
}

const load = async (file: string): Promise<Captured> =>
  JSON.parse(await readFile(join(import.meta.dirname, 'testdata', file), 'utf8')) as Captured;

/** The objects as the operator left them, and what Argo CD is to show for each. */
const cases: { file: string; status: string; message: RegExp }[] = [
  { file: 'apidefinition.ready.json', status: 'Healthy', message: /^API \S+ is served by http:/ },
  { file: 'svcoasapidefinition.ready.json', status: 'Healthy', message: /^API \S+ is served by http:/ },
  { file: 'svcstreamsapidefinition.ready.json', status: 'Healthy', message: /^API \S+ is served by http:/ },
  { file: 'securitypolicy.ready.json', status: 'Healthy', message: /^policy \S+ is held by http:/ },
  { file: 'operatorcontext.ready.json', status: 'Healthy', message: /^mode ce at http:/ },
  { file: 'apikey.ready.json', status: 'Healthy', message: /^key [0-9a-f]{64} is held by http:/ },
  {
    file: 'apikey.secret-not-found.json',
    status: 'Progressing',
    message: /^SecretNotFound: Secret default\/later-credentials does not exist yet/,
  },
  {
    file: 'apikey.gateway-unavailable.json',
    status: 'Degraded',
    message: /^GatewayUnavailable: gateway http:\/\/svc-gateway\.payments\.svc:8080 unreachable/,
  },
];

for (const c of cases) {
  test(`${c.file}: ${c.status}`, async () => {
    const h = await argoHealth(await load(c.file));
    assert.equal(h.status, c.status, h.message);
    assert.match(h.message, c.message);
  });
}

test('every kind, not reconciled yet (no status) or reconciled for an older generation: Progressing', async () => {
  for (const c of cases.filter((x) => x.file.endsWith('.ready.json'))) {
    const obj = await load(c.file);
    const { status: _status, ...fresh } = obj;
    assert.deepEqual(await argoHealth(fresh), {
      status: 'Progressing',
      message: 'Waiting for the operator to reconcile it',
    });
    const generation = (obj.metadata.generation ?? 1) + 1;
    assert.deepEqual(await argoHealth({ ...obj, metadata: { ...obj.metadata, generation } }), {
      status: 'Progressing',
      message: `Waiting for the operator to reconcile generation ${String(generation)}`,
    });
  }
});

test('written, waiting for every gateway to serve it (Pending): Progressing, the gateways named', async () => {
  for (const file of ['apidefinition.ready.json', 'securitypolicy.ready.json']) {
    const obj = await load(file);
    const message =
      'written to http://gw-a:8080; waiting for 1 of 2 gateways to serve revision 3f2a9c1d0b7e: gw-b:8080';
    const conditions = (obj.status?.conditions as { type: string }[]).map((c) =>
      c.type === 'Ready' ? { ...c, status: 'False', reason: 'Pending', message } : c,
    );
    const h = await argoHealth({ ...obj, status: { ...obj.status, conditions } });
    assert.equal(h.status, 'Progressing', `${file}: ${h.message}`);
    assert.equal(h.message, `Pending: ${message}`);
  }
});

test('being deleted, even when Ready: Progressing', async () => {
  const obj = await load('apikey.ready.json');
  const h = await argoHealth({
    ...obj,
    metadata: { ...obj.metadata, deletionTimestamp: '2026-11-27T21:00:00Z' },
  });
  assert.equal(h.status, 'Progressing');
  assert.match(h.message, /^Being deleted/);
});

test('one script for the six kinds: each kind is in testdata/', async () => {
  const kinds = new Set<string>();
  for (const c of cases) kinds.add((await load(c.file)).kind);
  assert.deepEqual([...kinds].sort(), [
    'ApiDefinition',
    'ApiKey',
    'OperatorContext',
    'SecurityPolicy',
    'SvcOasApiDefinition',
    'SvcStreamsApiDefinition',
  ]);
});
