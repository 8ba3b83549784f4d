/**
 * The operator's finalizer set by the mutating webhook at create: a real control plane calling
 * the real webhooks through the chart's configurations, the operator watching `shop`, a gateway
 * and an upstream. What a user sees in the object's managedFields: no field manager owns the
 * finalizer (the webhook's patch is part of the create), and the operator's field manager
 * (svc-operator) owns only the status subresource: it wrote no finalizer PATCH.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { API_FINALIZER } from '../../schemas/finalizers.ts';
import { httpRequest, waitFor, type OperatorProc } from '../harness/processes.ts';
import { startLocalWebhooks, type WebhookServer } from '../webhooks/helpers.ts';
import {
  apiDefinitionManifest,
  applyManifest,
  startWorld,
  stopWorld,
  type OperatorWorld,
  startWorldOperator,
  waitReady,
} from './helpers.ts';

let w: OperatorWorld;
let webhooks: WebhookServer;
let operator: OperatorProc;

before(async () => {
  w = await startWorld({ name: 'finalizer', namespaces: ['shop', 'elsewhere'] });
  webhooks = await startLocalWebhooks(w.cp, w.dir, 'finalizer-webhooks', { operatorNamespaces: 'shop' });
  operator = await startWorldOperator(w, { env: { WATCH_NAMESPACE: 'shop', LOG_LEVEL: 'debug' } });
});

after(() => stopWorld(w, operator, webhooks));

interface ManagedFields {
  manager: string;
  operation: string;
  subresource?: string;
  fieldsV1?: { 'f:metadata'?: { 'f:finalizers'?: Record<string, unknown> } };
}

interface Stored {
  metadata: { finalizers?: string[]; managedFields?: ManagedFields[] };
}

const apiManifest = (ns: string, name: string, listenPath: string): string =>
  apiDefinitionManifest({ ns, name, listenPath, target: w.upstream.url });

async function stored(ns: string, name: string): Promise<Stored> {
  const r = await w.cp.kubectl([
    'get',
    'apidefinition',
    name,
    '-n',
    ns,
    '-o',
    'json',
    '--show-managed-fields',
  ]);
  return JSON.parse(r.stdout) as Stored;
}

/** The managers owning our finalizer, and those of the operator's writes outside `status`. */
function owners(obj: Stored): { finalizer: string[]; operatorOutsideStatus: ManagedFields[] } {
  const fields = obj.metadata.managedFields ?? [];
  return {
    finalizer: fields
      .filter((f) => f.fieldsV1?.['f:metadata']?.['f:finalizers']?.[`v:"${API_FINALIZER}"`] !== undefined)
      .map((f) => `${f.manager}/${f.operation}`),
    operatorOutsideStatus: fields.filter((f) => f.manager === 'svc-operator' && f.subresource !== 'status'),
  };
}

async function serves(path: string): Promise<number> {
  return (await httpRequest(`${w.gw.url}${path}`)).status;
}

test('an ApiDefinition created through the webhook is served; the operator wrote no finalizer', async () => {
  await applyManifest(w.cp, apiManifest('shop', 'orders', '/orders/'));
  await waitFor('/orders/ served', async () => (await serves('/orders/')) === 200);
  await waitReady(w.cp, { kind: 'apidefinition', ns: 'shop', name: 'orders' });
  const obj = await stored('shop', 'orders');
  assert.deepEqual(obj.metadata.finalizers, [API_FINALIZER]);
  const o = owners(obj);
  // Set by the webhook within the create, no field manager owns it; had the operator added it,
  // svc-operator would.
  assert.deepEqual(o.finalizer, []);
  assert.deepEqual(o.operatorOutsideStatus, [], 'the operator patched the object outside its status');
});

test('a server-side re-apply without the finalizer keeps it; the operator still writes none', async () => {
  await applyManifest(w.cp, apiManifest('shop', 'orders', '/orders-v2/'));
  await waitFor('/orders-v2/ served', async () => (await serves('/orders-v2/')) === 200);
  const obj = await stored('shop', 'orders');
  assert.deepEqual(obj.metadata.finalizers, [API_FINALIZER]);
  assert.deepEqual(owners(obj).operatorOutsideStatus, []);
});

test('deleted: the operator removes its finalizer, the object goes and the API is no longer served', async () => {
  await w.cp.kubectl(['delete', 'apidefinition', 'orders', '-n', 'shop', '--wait=true', '--timeout=60s']);
  const r = await w.cp.kubectl(['get', 'apidefinition', 'orders', '-n', 'shop'], { allowFailure: true });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /NotFound/);
  await waitFor('/orders-v2/ no longer served', async () => (await serves('/orders-v2/')) === 404);
});

test('outside the watched namespaces no finalizer is added, so a delete is not held', async () => {
  await applyManifest(w.cp, apiManifest('elsewhere', 'stray', '/stray/'));
  const obj = await stored('elsewhere', 'stray');
  assert.equal(obj.metadata.finalizers, undefined);
  await w.cp.kubectl(['delete', 'apidefinition', 'stray', '-n', 'elsewhere', '--wait=true', '--timeout=30s']);
});
