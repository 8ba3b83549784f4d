/**
 * svc installed on the node the way a cluster admin installs it (docs/install.md): `helm upgrade
 * --install` of charts/svc-gateway (its Redis store in a pod, from the Redis image tools/images.sh
 * makes) and charts/svc-operator (the webhooks' certificates self-managed), from the images built
 * here; every pod Ready; then an ApiDefinition whose upstream is a Service in a pod addressed as
 * `<service>.<namespace>.svc:<port>` is served through the gateway's Service to a client pod.
 * Both releases are uninstalled at the end. Installs svc-operator: run under
 * `flock /tmp/svc-node-operator.lock` (`make e2e-node` does). Not run by `make e2e`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  GATEWAY_NS,
  OPERATOR_NS,
  dumpOnFailure,
  imageRef,
  kubectl,
  assertEchoedFromPod,
  useNamespace,
  waitForPodsReady,
  applyEchoApi,
} from './helpers.ts';
import { installGatewayAndOperator, uninstallOperator } from './install.ts';

const ns = useNamespace('svc-node-charts');
dumpOnFailure(GATEWAY_NS, OPERATOR_NS);

before(async () => {
  await installGatewayAndOperator();
});

after(async () => {
  await uninstallOperator({ gateway: true });
});

test('every pod of both charts and of Redis is Ready', { timeout: 300_000 }, async () => {
  for (const n of [GATEWAY_NS, OPERATOR_NS]) {
    await waitForPodsReady(n);
    const pods = await kubectl([
      '-n',
      n,
      'get',
      'pods',
      '-o',
      'jsonpath={range .items[*]}{.metadata.name} {.status.phase}{"\\n"}{end}',
    ]);
    assert.ok(pods.trim().split('\n').length >= 1, `no pod in ${n}`);
    assert.doesNotMatch(pods, / (Pending|Failed|Unknown)$/m, pods);
  }
});

test(
  'an ApiDefinition is served through the gateway Service to a client pod',
  { timeout: 300_000 },
  async () => {
    const image = await imageRef('gateway');
    const listenPath = `/httpbin-${randomBytes(3).toString('hex')}/`;
    await applyEchoApi({ name: 'httpbin', ns, image, listenPath });
    // The client retries until the operator has pushed the API and the gateway serves it.
    await assertEchoedFromPod(
      { ns, image },
      `http://svc-gateway.${GATEWAY_NS}.svc:8080${listenPath}anything?x=1`,
      'httpbin',
      '/anything?x=1',
    );
  },
);

test(
  "uninstalling svc-operator removes the webhooks' CA Secret, which the server made, with the release's ServiceAccount",
  { timeout: 300_000 },
  async () => {
    const owners = await kubectl([
      '-n',
      OPERATOR_NS,
      'get',
      'secret',
      'svc-operator-webhook-ca',
      '-o',
      'jsonpath={range .metadata.ownerReferences[*]}{.kind}/{.name}{"\\n"}{end}',
    ]);
    assert.equal(owners.trim(), 'ServiceAccount/svc-operator-controller-manager');
    await uninstallOperator();
    // The cluster's garbage collector deletes it once its owner is gone.
    let left = 'svc-operator-webhook-ca';
    for (let i = 0; i < 120 && left !== ''; i++) {
      left = (
        await kubectl(['-n', OPERATOR_NS, 'get', 'secrets', '-o', 'jsonpath={.items[*].metadata.name}'])
      )
        .split(' ')
        .filter((n) => n === 'svc-operator-webhook-ca')
        .join('');
      if (left !== '') await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    assert.equal(left, '', 'the CA Secret is still there two minutes after the uninstall');
  },
);
