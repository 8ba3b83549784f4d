/**
 * Internal targets across ApiDefinitions, end to end: a real control plane, the operator as a
 * process (its default resync, hours), a gateway and an upstream. An ApiDefinition applied before
 * the ApiDefinition its `proxy.target_internal` names waits with `ApiNotFound`; the target's
 * arrival queues it at once (the controller's index of internal targets), so it is served well
 * before the 30 s it used to wait for a retry.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { derivedId } from '../../operator/ids.ts';
import { httpRequest, waitFor } from '../harness/processes.ts';
import {
  applyManifest,
  readyOf,
  startWorld,
  stopWorld,
  waitForStatus,
  type OperatorWorld,
  waitReady,
} from './helpers.ts';

let w: OperatorWorld;

before(async () => {
  w = await startWorld({
    name: 'internal-targets',
    namespaces: ['shop'],
    operator: { env: { WATCH_NAMESPACE: 'shop', LOG_LEVEL: 'debug' } },
  });
});

after(() => stopWorld(w));

test('the referrer applied first waits with ApiNotFound, then is served as soon as its target appears', async () => {
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: orders, namespace: shop}
spec:
  name: orders
  use_keyless: true
  proxy:
    listen_path: /orders/
    strip_listen_path: true
    target_internal: {target: orders-internal, path: /v2}
`,
  );
  const waiting = await waitForStatus(
    w.cp,
    { kind: 'apidefinition', ns: 'shop', name: 'orders' },
    'ApiNotFound',
    (s) => readyOf(s)?.reason === 'ApiNotFound',
  );
  assert.match(
    readyOf(waiting)?.message ?? '',
    /spec\.proxy\.target_internal\.target: ApiDefinition shop\/orders-internal does not exist/,
  );

  const applied = Date.now();
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: orders-internal, namespace: shop}
spec:
  name: orders-internal
  use_keyless: true
  internal: true
  proxy: {listen_path: /orders-internal/, target_url: "${w.upstream.url}", strip_listen_path: true}
`,
  );
  const served = await waitFor(
    'GET /orders/items/1 served through orders-internal',
    async () => {
      const r = await httpRequest(`${w.gw.url}/orders/items/1`);
      return r.status === 200 ? r : undefined;
    },
    20_000,
  );
  const took = Date.now() - applied;
  assert.ok(took < 15_000, `served ${String(took)} ms after the target appeared`);
  // The echo upstream answers with what it got: the internal API's strip and the target's path.
  assert.match(served.body, /\/v2\/items\/1/);
  const st = await waitReady(w.cp, { kind: 'apidefinition', ns: 'shop', name: 'orders' });
  assert.equal(st.api_id, derivedId('shop', 'orders'));
  // The internal API itself is served to no client.
  assert.equal((await httpRequest(`${w.gw.url}/orders-internal/items/1`)).status, 404);
});
