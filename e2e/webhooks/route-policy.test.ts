/**
 * SvcRoutePolicy admission end to end: a real kube-apiserver calls the real webhook server over
 * TLS through the chart's webhook configurations (startWebhooksSuite). The mutating webhook's
 * defaults are stored; the validating webhook refuses what the classic API's rules refuse, with
 * the field named (schemas/rules/route-policy.ts), where the CRD's schema and CEL rules say nothing.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { API_VERSION } from '../../schemas/common.ts';
import type { ControlPlane } from '../harness/control-plane.ts';
import {
  admitted,
  apply,
  getObject,
  refusedWith,
  startWebhooksSuite,
  type WebhooksSuite,
} from './helpers.ts';

let cp: ControlPlane;
let suite: WebhooksSuite;

before(async () => {
  suite = await startWebhooksSuite('route-policy-e2e');
  cp = suite.cp;
});

after(() => suite.stop());

const policy = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: API_VERSION,
  kind: 'SvcRoutePolicy',
  metadata: { name, namespace: 'default' },
  spec: { targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'shop' }], ...spec },
});

test('defaults are stored: the targetRef group, use_keyless as the operator reads it', async () => {
  admitted(
    await apply(cp, {
      ...policy('auth', { use_standard_auth: true }),
      spec: { targetRefs: [{ kind: 'HTTPRoute', name: 'shop' }], use_standard_auth: true },
    }),
  );
  const stored = await getObject(cp, 'svcroutepolicy', 'auth');
  assert.deepEqual(stored.spec, {
    // The ApiDefinition schema's default, the same on a policy.
    jwt_identity_base_field: 'sub',
    targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'shop' }],
    use_standard_auth: true,
    use_keyless: false,
  });
});

test('an IP list entry the gateway cannot read is refused by the webhook, naming the entry', async () => {
  refusedWith(
    await apply(cp, policy('bad-ips', { enable_ip_blacklisting: true, blacklisted_ips: ['10.0.0.*'] })),
    'The SvcRoutePolicy "bad-ips" is invalid: spec.blacklisted_ips[0]: Invalid value',
  );
});

test('a target listed twice is refused, naming the second', async () => {
  const ref = { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'edge' };
  refusedWith(
    await apply(cp, policy('twice', { targetRefs: [ref, { ...ref }] })),
    'spec.targetRefs[1]: Invalid value',
    'listed twice',
  );
});
