/**
 * SvcOasApiDefinition end to end: a real control plane, a real gateway process, real upstreams
 * and the operator as a process. The OAS document lives in a ConfigMap; each edit of it is
 * served within seconds, a broken edit keeps the last good version serving, and a SecurityPolicy
 * on the OAS API lets a key in. No webhooks here: the broken edits must reach the operator, whose
 * own check is the backstop when webhooks are off.
 *
 * Also runs against a cluster (`SVC_E2E_CLUSTER=1`, `make e2e-cluster`, the node suite
 * e2e/node/cluster-suites.node.ts, e2e/harness/world.ts), where the chart's webhooks are on: there
 * the API server refuses the broken edit (the ConfigMap webhook names the key and the API reading
 * it) before the operator sees it; either way the last good version keeps serving. Likewise the
 * delete of an API a policy covers is refused by the API server there, held by the operator's
 * finalizer here (InUse). The examples test writes to the namespace `default` and deletes what it
 * applied.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { derivedId } from '../../operator/ids.ts';
import { clusterMode, startWorld, type Upstream, type World } from '../harness/world.ts';
import { httpRequest, waitFor } from '../harness/processes.ts';
import { admin, applyManifest, isReady, readyOf, root, waitForStatus, waitReady } from './helpers.ts';

const KEY = 'e2e-oas-key';
/** How soon a ConfigMap edit must be served. */
const SECONDS = 10_000;
const cluster = clusterMode();

let w: World;
let upstream2: Upstream;
/** The suite's namespace (`shop` locally). */
let SHOP: string;
let ID: string;

before(async () => {
  w = await startWorld({
    name: 'oas',
    namespaces: ['shop'],
    secrets: ['e2e-oas-secret', 'e2e-oas-secret-2'],
    org: 'e2e-org',
    // The resync is left at its default: edits must arrive through the ConfigMap watch.
    operatorEnv: { WATCH_NAMESPACE: 'shop,default', LOG_LEVEL: 'debug' },
  });
  SHOP = w.ns('shop');
  ID = derivedId(SHOP, 'petstore');
  upstream2 = await w.startUpstream('echo-2');
});

after(async () => {
  await w.stop();
});

const apply = (manifest: string): Promise<void> => applyManifest(w, manifest);
const oasApi = (): { kind: string; ns: string; name: string } => ({
  kind: 'svcoasapidefinition',
  ns: SHOP,
  name: 'petstore',
});

/** The ConfigMap `shop/petstore-oas` (or in `ns`) with an OAS document as its `oas.json`. */
function configMap(
  doc: { listenPath: string; upstream: string; token?: boolean } | { raw: string },
  ns = SHOP,
): string {
  const text =
    'raw' in doc
      ? doc.raw
      : JSON.stringify({
          openapi: '3.0.3',
          info: { title: 'Petstore', version: '1.0.0' },
          paths: {},
          ...(doc.token
            ? {
                components: {
                  securitySchemes: { token: { type: 'apiKey', in: 'header', name: 'Authorization' } },
                },
                security: [{ token: [] }],
              }
            : {}),
          'x-svc-api-gateway': {
            info: { name: 'petstore', state: { active: true } },
            upstream: { url: doc.upstream },
            server: {
              listenPath: { value: doc.listenPath, strip: true },
              ...(doc.token
                ? { authentication: { enabled: true, securitySchemes: { token: { enabled: true } } } }
                : {}),
            },
          },
        });
  return `apiVersion: v1
kind: ConfigMap
metadata: {name: petstore-oas, namespace: ${ns}}
data:
  oas.json: ${JSON.stringify(text)}
`;
}

const oasManifest = (): string => `apiVersion: svc.svc.io/v1alpha1
kind: SvcOasApiDefinition
metadata: {name: petstore, namespace: ${SHOP}}
spec:
  svcOAS:
    configmapRef: {name: petstore-oas, keyName: oas.json}
`;

/** A client request through the gateway: status and, for a 200, the upstream that answered. */
async function call(path: string, key?: string): Promise<{ status: number; upstream?: string }> {
  const r = await httpRequest(`${w.gateway.url}${path}`, { headers: key ? { authorization: key } : {} });
  return {
    status: r.status,
    ...(r.status === 200 ? { upstream: (JSON.parse(r.body) as { upstream: string }).upstream } : {}),
  };
}

/** Waits (a few seconds at most) until a request through the gateway gets `want`. */
async function served(
  what: string,
  path: string,
  want: { status: number; upstream?: string },
): Promise<void> {
  await waitFor(
    what,
    async () => {
      const got = await call(path);
      return got.status === want.status && (want.upstream === undefined || got.upstream === want.upstream);
    },
    SECONDS,
  );
}

test('an OAS ConfigMap applied: served by the gateway, status filled', async () => {
  await apply(configMap({ listenPath: '/pets/', upstream: w.upstream.url }));
  await apply(oasManifest());
  const st = await waitReady(w, oasApi());
  assert.equal(st.api_id, ID);
  assert.equal(st.listen_path, '/pets/');
  assert.equal(st.target_url, w.upstream.url);
  assert.equal(st.enabled, true);
  assert.equal(typeof st.latestConfigMapHash, 'string');
  assert.equal((st.latestTransaction as { status: string }).status, 'Successful');
  await served('the API served', '/pets/dogs', { status: 200, upstream: 'echo' });

  const held = await admin(w.gateway, 'GET', `/svc/apis/oas/${ID}`);
  assert.equal(held.status, 200);
  const info = (held.body as { 'x-svc-api-gateway': { info: { id: string; orgId: string } } })[
    'x-svc-api-gateway'
  ].info;
  assert.equal(info.id, ID);
  assert.equal(info.orgId, w.org);

  const cols = await w.kubectl(['get', 'svcoas', 'petstore', '-n', SHOP]);
  assert.match(cols.stdout, /API ID\s+LISTEN PATH\s+TARGET URL\s+ENABLED\s+READY/);
  assert.match(cols.stdout, new RegExp(`${ID}\\s+/pets/\\s+${w.upstream.url}\\s+true\\s+True`));
});

test('the listen path edited in the ConfigMap: served on the new path within seconds', async () => {
  await apply(configMap({ listenPath: '/pets2/', upstream: w.upstream.url }));
  await served('the new listen path served', '/pets2/dogs', { status: 200, upstream: 'echo' });
  await served('the old listen path gone', '/pets/dogs', { status: 404 });
  await waitForStatus(
    w,
    oasApi(),
    'listen_path /pets2/',
    (st) => st.listen_path === '/pets2/' && isReady(st),
  );
});

test('the upstream edited: requests go to the new upstream within seconds', async () => {
  await apply(configMap({ listenPath: '/pets2/', upstream: upstream2.url }));
  await served('the new upstream answers', '/pets2/dogs', { status: 200, upstream: 'echo-2' });
  await waitForStatus(w, oasApi(), 'target_url updated', (st) => st.target_url === upstream2.url);
});

test('authentication switched from keyless to token: a request without a key is refused', async () => {
  await apply(configMap({ listenPath: '/pets2/', upstream: upstream2.url, token: true }));
  await served('requests without a key refused', '/pets2/dogs', { status: 401 });
  await waitReady(w, oasApi());
});

test('a broken edit (invalid JSON): the old version keeps serving, the user is told why', async () => {
  const before = await admin(w.gateway, 'GET', `/svc/apis/oas/${ID}`);
  const broken = configMap({ raw: '{"openapi": "3.0.3", "x-svc-api-gateway": ' });
  if (cluster) {
    // The chart's ConfigMap webhook: the API server refuses the edit, naming the key and the API.
    const r = await w.kubectl(['apply', '--server-side', '--field-manager=e2e', '-f', '-'], {
      input: broken,
      allowFailure: true,
    });
    assert.notEqual(r.code, 0, 'the broken edit is refused');
    // kubectl prints the webhook's causes: the field, then the message.
    assert.match(
      r.stderr,
      new RegExp(
        `The ConfigMap "petstore-oas" is invalid: data\\["oas\\.json"\\]: Invalid value: SvcOasApiDefinition ${SHOP}/petstore reads its document from this key, and would be refused: the document does not parse as JSON`,
      ),
    );
    const cm = await w.kubectl([
      'get',
      'configmap',
      'petstore-oas',
      '-n',
      SHOP,
      '-o',
      'jsonpath={.data.oas\\.json}',
    ]);
    assert.match(
      cm.stdout,
      /"listenPath":\{"value":"\/pets2\/"/,
      'the ConfigMap keeps the last good document',
    );
    assert.deepEqual((await admin(w.gateway, 'GET', `/svc/apis/oas/${ID}`)).body, before.body);
    assert.equal((await call('/pets2/dogs')).status, 401, 'the last good version is still served');
    assert.equal(readyOf(await waitReady(w, oasApi()))?.status, 'True');
    return;
  }
  await apply(broken);
  const st = await waitForStatus(
    w,
    oasApi(),
    'Ready=False, DocumentInvalid',
    (s) => readyOf(s)?.reason === 'DocumentInvalid',
  );
  const cond = readyOf(st);
  assert.ok(cond?.message);
  assert.equal(cond.status, 'False');
  assert.match(
    cond.message,
    new RegExp(`ConfigMap ${SHOP}/petstore-oas key "oas.json": the document does not parse as JSON`),
  );
  assert.match(cond.message, new RegExp(`API ${ID} keeps serving its last good version`));
  assert.equal(st.listen_path, '/pets2/', 'the status still describes the version served');
  assert.deepEqual((await admin(w.gateway, 'GET', `/svc/apis/oas/${ID}`)).body, before.body);
  assert.equal((await call('/pets2/dogs')).status, 401, 'the last good version is still served');

  // Fixed: Ready again.
  await apply(configMap({ listenPath: '/pets2/', upstream: upstream2.url, token: true }));
  await waitReady(w, oasApi(), SECONDS);
});

test('examples/oas-api-definition.yaml reconciles Ready; its ConfigMap (same name, other namespace) changes nothing here', async (t) => {
  const before = await waitReady(w, oasApi());
  const example = join(root, 'examples', 'oas-api-definition.yaml');
  // The example writes to the namespace default: on a cluster others use too, it goes again (the
  // API first: the ConfigMap webhook refuses to delete a document an API still reads).
  t.after(async () => {
    await w.kubectl([
      'delete',
      'svcoasapidefinition',
      'petstore',
      '-n',
      'default',
      '--ignore-not-found',
      '--timeout=60s',
    ]);
    await w.kubectl(['delete', '-f', example, '--ignore-not-found', '--timeout=60s']);
  });
  const r = await w.kubectl(['apply', '-f', example], { allowFailure: true });
  assert.equal(r.code, 0, r.stderr);
  const st = await waitReady(w, { kind: 'svcoasapidefinition', ns: 'default', name: 'petstore' });
  assert.equal(st.api_id, derivedId('default', 'petstore'));
  assert.equal(st.listen_path, '/petstore/');
  await served('the example served (token-protected)', '/petstore/pets', { status: 401 });

  // default/petstore-oas has another listen path and upstream: shop/petstore is untouched.
  const after = await waitReady(w, oasApi());
  assert.equal(after.latestConfigMapHash, before.latestConfigMapHash);
  assert.deepEqual(after.latestTransaction, before.latestTransaction);
  assert.equal(after.listen_path, '/pets2/');
  assert.equal((await call('/pets2/dogs')).status, 401);
});

test('a SecurityPolicy on the OAS API: Ready, versions [""], a key with it gets in', async () => {
  await apply(`apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: pets-plan, namespace: ${SHOP}}
spec:
  name: pets-plan
  access_rights_array:
    - {name: petstore, kind: SvcOasApiDefinition}
`);
  const st = await waitReady(w, { kind: 'securitypolicy', ns: SHOP, name: 'pets-plan' });
  const polId = st.pol_id as string;
  const pol = await admin(w.gateway, 'GET', `/svc/policies/${polId}`);
  assert.equal(pol.status, 200);
  assert.deepEqual(
    (pol.body as { access_rights: Record<string, { versions: string[] }> }).access_rights[ID]?.versions,
    [''],
  );
  await waitForStatus(
    w,
    oasApi(),
    'linked_by_policies',
    (s) => JSON.stringify(s.linked_by_policies) === JSON.stringify([{ name: 'pets-plan', namespace: SHOP }]),
  );

  const key = await admin(w.gateway, 'POST', `/svc/keys/${KEY}`, { org_id: w.org, apply_policies: [polId] });
  assert.equal(key.status, 200, JSON.stringify(key.body));
  assert.deepEqual(await call('/pets2/dogs', KEY), { status: 200, upstream: 'echo-2' });
  assert.equal((await call('/pets2/dogs')).status, 401);
});

test('deleted while the policy covers it: held (InUse); once the policy goes, deleted from the gateway', async () => {
  const del = await w.kubectl(['delete', 'svcoasapidefinition', 'petstore', '-n', SHOP, '--wait=false'], {
    allowFailure: true,
  });
  if (cluster) {
    // The chart's webhooks are on: the API server refuses the delete, naming the policy.
    assert.notEqual(del.code, 0, 'the delete of a covered API is refused');
    assert.match(
      del.stderr,
      new RegExp(`SvcOasApiDefinition ${SHOP}/petstore is still used by SecurityPolicy ${SHOP}/pets-plan`),
    );
  } else {
    // No webhooks: the operator's finalizer holds the API and its status says why.
    assert.equal(del.code, 0, del.stderr);
    await waitForStatus(w, oasApi(), 'InUse', (s) => readyOf(s)?.reason === 'InUse');
  }
  assert.equal((await admin(w.gateway, 'GET', `/svc/apis/oas/${ID}`)).status, 200, 'still held');
  assert.equal((await call('/pets2/dogs', KEY)).status, 200, 'still served');

  await w.kubectl(['delete', 'securitypolicy', 'pets-plan', '-n', SHOP, '--wait=false']);
  if (cluster) {
    // Once the policy is gone, the delete is admitted.
    await waitFor('the delete admitted once the policy is gone', async () => {
      const r = await w.kubectl(['delete', 'svcoasapidefinition', 'petstore', '-n', SHOP, '--wait=false'], {
        allowFailure: true,
      });
      return r.code === 0;
    });
  }
  await waitFor('the OAS API gone from the gateway', async () => {
    return (await admin(w.gateway, 'GET', `/svc/apis/oas/${ID}`)).status === 404;
  });
  await served('no longer served', '/pets2/dogs', { status: 404 });
  await waitFor('the resource gone', async () => {
    const r = await w.kubectl(['get', 'svcoasapidefinition', 'petstore', '-n', SHOP], {
      allowFailure: true,
    });
    return r.code !== 0;
  });
});
