import { test } from 'node:test';
import assert from 'node:assert/strict';
import { API_VERSION } from '../schemas/common.ts';
import { defaultRoutePolicy } from './route-policy.default.ts';
import { validateRoutePolicy } from './route-policy.validate.ts';

const route = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'shop' };
const policy = (spec: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion: API_VERSION,
  kind: 'SvcRoutePolicy',
  metadata: { name: 'shop-auth', namespace: 'apps' },
  spec: { targetRefs: [route], ...spec },
});

interface Case {
  name: string;
  spec: Record<string, unknown>;
  /** Expected errors as `path: type`; none: admitted. */
  errors?: string[];
}

const cases: Case[] = [
  { name: 'auth tokens on a route', spec: { use_standard_auth: true } },
  {
    name: 'IP lists and a rate limit on a Gateway listener',
    spec: {
      targetRefs: [{ ...route, kind: 'Gateway', name: 'edge', sectionName: 'http' }],
      enable_ip_whitelisting: true,
      allowed_ips: ['10.0.0.0/8', '::1'],
      enable_ip_blacklisting: true,
      blacklisted_ips: ['10.1.2.3'],
      global_rate_limit: { rate: 3, per: 60 },
    },
  },
  {
    name: 'JWT with a JWKS URL and default policies',
    spec: {
      enable_jwt: true,
      jwt_signing_method: 'rsa',
      jwt_source: 'https://idp.example/jwks',
      jwt_default_policies: ['gold'],
    },
  },
  {
    name: 'basic auth and static mTLS',
    spec: { use_basic_auth: true, use_mutual_tls_auth: true, client_certificate_refs: ['ca'] },
  },
  { name: 'no targets', spec: { targetRefs: [] }, errors: ['spec.targetRefs: Invalid'] },
  {
    name: 'a target of another kind',
    spec: { targetRefs: [{ ...route, kind: 'GRPCRoute' }] },
    errors: ['spec.targetRefs[0].kind: NotSupported'],
  },
  {
    name: 'a target of another group',
    spec: { targetRefs: [{ ...route, group: 'networking.k8s.io' }] },
    errors: ['spec.targetRefs[0].group: NotSupported'],
  },
  {
    name: 'a target listed twice',
    spec: { targetRefs: [route, { ...route }] },
    errors: ['spec.targetRefs[1]: Invalid'],
  },
  {
    name: 'keyless with auth tokens (the ApiDefinition rule)',
    spec: { use_keyless: true, use_standard_auth: true },
    errors: ['spec.use_keyless: Forbidden'],
  },
  {
    name: 'an IP list entry that is not an address (the ApiDefinition rule)',
    spec: { enable_ip_blacklisting: true, blacklisted_ips: ['10.0.0.*'] },
    errors: ['spec.blacklisted_ips[0]: Invalid'],
  },
  {
    name: 'JWT without its key (the ApiDefinition rule)',
    spec: { enable_jwt: true },
    errors: ['spec.jwt_signing_method: Required', 'spec.jwt_source: Required'],
  },
  {
    name: 'a field an ApiDefinition has but a policy does not carry',
    spec: { proxy: { listen_path: '/x' } },
    errors: ['spec.proxy: Forbidden'],
  },
];

for (const c of cases) {
  test(`validateRoutePolicy: ${c.name}`, async () => {
    const v = await validateRoutePolicy(defaultRoutePolicy(policy(c.spec)));
    const got = v.errors.map((e) => `${e.path}: ${e.type}`);
    assert.deepEqual(got, c.errors ?? [], JSON.stringify(v.errors));
    for (const e of v.errors) assert.ok(e.message.length > 0, `${e.path} says why`);
  });
}

test('defaultRoutePolicy: the group of targets, and use_keyless as the operator reads it', () => {
  const input = policy({ targetRefs: [{ kind: 'HTTPRoute', name: 'shop' }], use_standard_auth: true });
  const before = structuredClone(input);
  assert.deepEqual(defaultRoutePolicy(input), policy({ use_standard_auth: true, use_keyless: false }));
  assert.deepEqual(input, before, 'the input is not modified');
  assert.deepEqual(
    defaultRoutePolicy(policy({ enable_ip_blacklisting: true })),
    policy({ enable_ip_blacklisting: true, use_keyless: true }),
  );
  assert.deepEqual(defaultRoutePolicy(policy({ use_keyless: false })), policy({ use_keyless: false }));
  assert.equal(defaultRoutePolicy('x'), 'x', 'a malformed object is returned as it is');
});
