/**
 * SecurityPolicy end to end: a real control plane with the real webhooks (called by the API
 * server over TLS through the chart's configurations), real gateway processes, a real upstream
 * and the operator as a process. Keys are created through the gateway's management API with the
 * policy the operator pushed, and clients see what the policy allows and refuses.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { derivedId } from '../../operator/ids.ts';
import type { startOperator } from '../harness/processes.ts';
import { httpRequest, waitFor, type GatewayProc } from '../harness/processes.ts';
import { startLocalWebhooks, type WebhookServer } from '../webhooks/helpers.ts';
import {
  admin,
  apiDefinitionManifest,
  applyExamples,
  applyManifest,
  readyOf,
  startWorld,
  stopWorld,
  waitForStatus,
  type OperatorWorld,
  startWorldOperator,
  waitReady,
  isReady,
} from './helpers.ts';

const ORG = 'e2e-org';
const KEY = 'e2e-catalog-key';

/** The suite's processes: the world, the webhooks, and the operator (restarted by one test). */
let w: OperatorWorld;
let webhooks: WebhookServer;
let operator: Awaited<ReturnType<typeof startOperator>> | undefined;
let runs = 0;

async function runOperator(): Promise<typeof operator> {
  runs++;
  return startWorldOperator(w, {
    name: `policy-operator-${runs}`,
    org: ORG,
    env: { WATCH_NAMESPACE: 'shop,default', SVC_RESYNC_PERIOD: '2s', LOG_LEVEL: 'debug' },
  });
}

before(async () => {
  w = await startWorld({ name: 'policy', namespaces: ['shop'] });
  webhooks = await startLocalWebhooks(w.cp, w.dir, 'policy-webhooks');
  operator = await runOperator();
});

after(() => stopWorld(w, operator, webhooks));

const apply = (manifest: string): Promise<void> => applyManifest(w.cp, manifest);
const policy = (ns: string, name: string) => ({ kind: 'securitypolicy', ns, name });
const apiDef = (ns: string, name: string) => ({ kind: 'apidefinition', ns, name });
/** An ApiDefinition in `shop` proxying to the echo upstream; keyless unless `protect`. */
const apiManifest = (name: string, protect: boolean, extra = ''): string =>
  apiDefinitionManifest({
    ns: 'shop',
    name,
    target: w.upstream.url,
    protect,
    extra: `${protect ? '  strip_auth_data: true\n' : ''}${extra}`,
  });

function policyManifest(name: string, spec: string): string {
  return `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: ${name}, namespace: shop}
spec:
  name: ${name}
${spec}`;
}

/** `kubectl patch --type=merge` of a resource in `shop`. */
async function patch(kind: string, name: string, patchBody: unknown): Promise<void> {
  await w.cp.kubectl(['patch', kind, name, '-n', 'shop', '--type=merge', '-p', JSON.stringify(patchBody)]);
}

/** The status code of a client request through the gateway, with the key when given. */
async function call(path: string, key?: string, method = 'GET'): Promise<number> {
  const r = await httpRequest(`${w.gw.url}${path}`, { method, headers: key ? { authorization: key } : {} });
  return r.status;
}

/** The policy as a gateway holds it, or undefined on 404. */
async function held(gateway: GatewayProc, id: string): Promise<Record<string, unknown> | undefined> {
  const r = await admin(gateway, 'GET', `/svc/policies/${id}`);
  return r.status === 200 ? (r.body as Record<string, unknown>) : undefined;
}

test('examples: the example policy is admitted and Ready against the example API', async () => {
  const r = await applyExamples(w.cp, ['api-definition', 'security-policy']);
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /Warning/);
  const st = await waitReady(w.cp, { kind: 'securitypolicy', ns: 'default', name: 'orders-standard' });
  const polId = derivedId('default', 'orders-standard');
  assert.equal(st.pol_id, polId);
  assert.deepEqual(st.linked_apis, [{ kind: 'ApiDefinition', name: 'orders', namespace: 'default' }]);
  const p = await held(w.gw, polId);
  const ordersId = derivedId('default', 'orders');
  assert.deepEqual(p?.access_rights, {
    [ordersId]: {
      api_id: ordersId,
      versions: ['Default'],
      allowed_urls: [
        { url: '/orders(.*)', methods: ['GET'] },
        { url: '/orders/$', methods: ['POST'] },
      ],
    },
  });
  await waitForStatus(
    w.cp,
    { kind: 'apidefinition', ns: 'default', name: 'orders' },
    'linked_by_policies',
    (s) => {
      const linked = s.linked_by_policies as { name: string; namespace: string }[] | undefined;
      return linked?.some((l) => l.name === 'orders-standard' && l.namespace === 'default') === true;
    },
  );
});

test('a policy applied before its API: ApiNotFound, then Ready once the API is applied', async () => {
  await apply(policyManifest('early', '  access_rights_array: [{name: late}]\n'));
  const waiting = await waitForStatus(
    w.cp,
    policy('shop', 'early'),
    'ApiNotFound',
    (s) => readyOf(s)?.reason === 'ApiNotFound',
  );
  assert.equal(readyOf(waiting)?.status, 'False');
  assert.match(readyOf(waiting)?.message ?? '', /ApiDefinition shop\/late, which does not exist yet/);
  assert.equal(await held(w.gw, derivedId('shop', 'early')), undefined);

  await apply(apiManifest('late', false));
  await waitForStatus(w.cp, policy('shop', 'early'), 'Ready after the API appeared', isReady);
  const p = await held(w.gw, derivedId('shop', 'early'));
  assert.deepEqual(Object.keys(p?.access_rights ?? {}), [derivedId('shop', 'late')]);
});

test('a key with a rate-limited policy: requests allowed and refused as the policy says', async () => {
  await apply(apiManifest('catalog', true));
  await apply(
    policyManifest(
      'catalog-basic',
      `  rate: 3
  per: 60
  access_rights_array:
    - name: catalog
      allowed_urls: [{url: "/catalog/items(.*)", methods: [GET]}]
`,
    ),
  );
  const st = await waitReady(w.cp, policy('shop', 'catalog-basic'));
  const polId = st.pol_id as string;
  const key = await admin(w.gw, 'POST', `/svc/keys/${KEY}`, { org_id: ORG, apply_policies: [polId] });
  assert.equal(key.status, 200, JSON.stringify(key.body));
  await waitFor('the API served (401 without a key)', async () => (await call('/catalog/items/1')) === 401);

  assert.equal(await call('/catalog/items/1', KEY), 200);
  assert.equal(await call('/catalog/items/1', KEY, 'POST'), 403, 'POST is not in allowed_urls');
  assert.equal(await call('/catalog/admin', KEY), 403, '/catalog/admin is not in allowed_urls');
  assert.equal(await call('/catalog/items/2', KEY), 200);
  assert.equal(await call('/catalog/items/3', KEY), 200);
  assert.equal(await call('/catalog/items/4', KEY), 429, 'the fourth request in a minute is over the rate');
});

test('the rate changed in the cluster: clients see the new limit', async () => {
  await patch('securitypolicy', 'catalog-basic', { spec: { rate: 100 } });
  await waitFor(
    'requests allowed again under the new rate',
    async () => (await call('/catalog/items/5', KEY)) === 200,
  );
  assert.equal((await held(w.gw, derivedId('shop', 'catalog-basic')))?.rate, 100);
});

test('deny: the policy leaves the gateway and the key is refused; active again, the key works', async () => {
  const polId = derivedId('shop', 'catalog-basic');
  await patch('securitypolicy', 'catalog-basic', { spec: { state: 'deny' } });
  const st = await waitForStatus(
    w.cp,
    policy('shop', 'catalog-basic'),
    'Denied',
    (s) => readyOf(s)?.reason === 'Denied',
  );
  assert.match(readyOf(st)?.message ?? '', /not published \(state deny\)/);
  assert.equal(await held(w.gw, polId), undefined);
  await waitFor('the key refused', async () => (await call('/catalog/items/1', KEY)) === 403);

  await patch('securitypolicy', 'catalog-basic', { spec: { state: 'active' } });
  await waitFor('the key allowed again', async () => (await call('/catalog/items/1', KEY)) === 200);
});

test('drift: an edit and a delete made in the gateway are reverted', async () => {
  const polId = derivedId('shop', 'catalog-basic');
  const p = await held(w.gw, polId);
  assert.equal(
    (await admin(w.gw, 'PUT', `/svc/policies/${polId}`, { ...p, rate: 1, per: 3600 })).status,
    200,
  );
  await waitFor('the edit reverted', async () => (await held(w.gw, polId))?.rate === 100);
  assert.equal((await admin(w.gw, 'DELETE', `/svc/policies/${polId}`)).status, 200);
  await waitFor('the policy back', async () => (await held(w.gw, polId)) !== undefined);
  await waitFor('the key allowed', async () => (await call('/catalog/items/1', KEY)) === 200);
});

test('contextRef moves a policy to another gateway: it is deleted from the first', async () => {
  await apply(`apiVersion: svc.svc.io/v1alpha1
kind: OperatorContext
metadata: {name: second, namespace: shop}
spec: {env: {mode: ce, url: "${w.gw2.url}", auth: ${w.gw2.secret}, org: ${ORG}}}
`);
  const polId = derivedId('shop', 'early');
  assert.notEqual(await held(w.gw, polId), undefined);
  await patch('securitypolicy', 'early', { spec: { contextRef: { name: 'second' } } });
  await waitFor('the policy in the second gateway', async () => (await held(w.gw2, polId)) !== undefined);
  await waitFor('the policy gone from the first', async () => (await held(w.gw, polId)) === undefined);
  const st = await waitForStatus(w.cp, policy('shop', 'early'), 'pushedTo the second gateway', (s) => {
    return (s.pushedTo as { url?: string } | undefined)?.url === w.gw2.url && isReady(s);
  });
  assert.deepEqual(st.pushedTo, { url: w.gw2.url, contextRef: { name: 'second', namespace: 'shop' } });
});

test('a policy named in jwt_default_policies cannot be deleted while the API names it', async () => {
  await apply(apiManifest('reports', false, '  jwt_default_policies: [{name: catalog-basic}]\n'));
  const polId = derivedId('shop', 'catalog-basic');
  await waitReady(w.cp, apiDef('shop', 'reports'));
  const api = await admin(w.gw, 'GET', `/svc/apis/${derivedId('shop', 'reports')}`);
  assert.deepEqual((api.body as { jwt_default_policies?: string[] }).jwt_default_policies, [polId]);
  await waitForStatus(
    w.cp,
    policy('shop', 'catalog-basic'),
    'linked_apis lists the API',
    (s) => (s.linked_apis as { name: string }[] | undefined)?.some((l) => l.name === 'reports') === true,
  );
  const refused = await w.cp.kubectl(['delete', 'securitypolicy', 'catalog-basic', '-n', 'shop'], {
    allowFailure: true,
  });
  assert.notEqual(refused.code, 0);
  assert.match(
    refused.stderr,
    /SecurityPolicy shop\/catalog-basic is still used by ApiDefinition shop\/reports/,
  );
  await w.cp.kubectl(['delete', 'apidefinition', 'reports', '-n', 'shop', '--wait=true', '--timeout=30s']);
});

test('the policy deleted: gone from the gateway, its key refused, its API no longer lists it', async () => {
  const polId = derivedId('shop', 'catalog-basic');
  await w.cp.kubectl([
    'delete',
    'securitypolicy',
    'catalog-basic',
    '-n',
    'shop',
    '--wait=true',
    '--timeout=30s',
  ]);
  assert.equal(await held(w.gw, polId), undefined);
  await waitFor('the key refused', async () => (await call('/catalog/items/1', KEY)) === 403);
  await waitForStatus(
    w.cp,
    apiDef('shop', 'catalog'),
    'linked_by_policies empty',
    (s) => s.linked_by_policies === undefined,
  );
});

test('operator restart: changes made while it was down converge, drift is reverted', async () => {
  await operator?.stop();
  const earlyId = derivedId('shop', 'early');
  assert.equal((await admin(w.gw2, 'DELETE', `/svc/policies/${earlyId}`)).status, 200);
  await patch('securitypolicy', 'early', { spec: { quota_max: 50, quota_renewal_rate: 3600 } });
  await apply(policyManifest('offline', '  access_rights_array: [{name: late}]\n'));

  operator = await runOperator();
  await waitFor(
    'early back in the second gateway, edited',
    async () => (await held(w.gw2, earlyId))?.quota_max === 50,
  );
  await waitFor(
    'offline created',
    async () => (await held(w.gw, derivedId('shop', 'offline'))) !== undefined,
  );
});

test('without webhooks, an API still covered by policies is held by its finalizer, which names them', async () => {
  await w.cp.kubectl([
    'delete',
    'validatingwebhookconfiguration',
    'svc-operator-validating-webhook-configuration',
  ]);
  // The API server drops the configuration asynchronously: retry until the delete is admitted.
  await waitFor('the delete admitted without webhooks', async () => {
    const r = await w.cp.kubectl(['delete', 'apidefinition', 'late', '-n', 'shop', '--wait=false'], {
      allowFailure: true,
    });
    return r.code === 0;
  });
  const st = await waitForStatus(
    w.cp,
    apiDef('shop', 'late'),
    'InUse',
    (s) => readyOf(s)?.reason === 'InUse',
  );
  assert.match(
    readyOf(st)?.message ?? '',
    /still used by SecurityPolicy shop\/early, SecurityPolicy shop\/offline/,
  );
  assert.equal(
    (await admin(w.gw, 'GET', `/svc/apis/${derivedId('shop', 'late')}`)).status,
    200,
    'still served',
  );

  await w.cp.kubectl([
    'delete',
    'securitypolicy',
    'early',
    'offline',
    '-n',
    'shop',
    '--wait=true',
    '--timeout=30s',
  ]);
  await waitFor('the API gone', async () => {
    const r = await w.cp.kubectl(['get', 'apidefinition', 'late', '-n', 'shop'], { allowFailure: true });
    return r.code !== 0 && r.stderr.includes('NotFound');
  });
  assert.equal((await admin(w.gw, 'GET', `/svc/apis/${derivedId('shop', 'late')}`)).status, 404);
  assert.equal(await held(w.gw2, derivedId('shop', 'early')), undefined);
});
