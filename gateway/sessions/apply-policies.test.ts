/** The policy merge rules of GATEWAY-BEHAVIOUR §5, as a table. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GatewayPolicy, GatewaySession } from '../../schemas/generated/models.ts';
import { applyPolicies, type Applied } from './apply-policies.ts';

const policies: Record<string, GatewayPolicy> = {
  a: {
    name: 'a',
    rate: 10,
    per: 60,
    quota_max: 100,
    quota_renewal_rate: 3600,
    throttle_interval: 1,
    throttle_retry_limit: 2,
    tags: ['gold'],
    meta_data: { plan: 'a', tier: '1' },
    access_rights: {
      api1: { api_id: 'api1', versions: ['Default'], allowed_urls: [{ url: '/x', methods: ['GET'] }] },
    },
  },
  b: {
    name: 'b',
    rate: 10,
    per: 10,
    quota_max: 50,
    quota_renewal_rate: 60,
    throttle_interval: 5,
    throttle_retry_limit: 1,
    access_rights: {
      api1: {
        api_id: 'api1',
        versions: ['v2'],
        allowed_urls: [
          { url: '/x', methods: ['POST'] },
          { url: '/y', methods: ['GET'] },
        ],
      },
      api2: { api_id: 'api2', versions: [''] },
    },
  },
  unlimited: { name: 'u', rate: -1, per: -1, quota_max: -1 },
  quotaOnly: {
    name: 'q',
    partitions: { quota: true },
    quota_max: 7,
    rate: 1,
    per: 1,
    access_rights: { api9: { api_id: 'api9' } },
  },
  aclOnly: {
    name: 'acl',
    partitions: { acl: true },
    quota_max: 1000,
    access_rights: { api9: { api_id: 'api9' } },
  },
  draft: { name: 'd', state: 'draft' },
  deny: { name: 'x', state: 'deny' },
  off: { name: 'off', active: false },
  signs: { name: 's', hmac_enabled: true },
};

const lookup = (id: string): GatewayPolicy | undefined => policies[id];

const cases: { name: string; key: GatewaySession; want: (a: Applied) => void }[] = [
  {
    name: 'no policies: the key as it is',
    key: { rate: 3, per: 1, access_rights: { k: { api_id: 'k' } } },
    want: (a) => {
      assert.deepEqual(a, { ok: true, session: { rate: 3, per: 1, access_rights: { k: { api_id: 'k' } } } });
    },
  },
  {
    name: 'one policy replaces the parts it carries',
    key: { rate: 3, per: 1, access_rights: { k: { api_id: 'k' } }, apply_policies: ['a'] },
    want: (a) => {
      assert.ok(a.ok);
      assert.equal(a.session.rate, 10);
      assert.equal(a.session.per, 60);
      assert.equal(a.session.quota_max, 100);
      assert.deepEqual(Object.keys(a.session.access_rights ?? {}), ['api1']);
      assert.deepEqual(a.session.tags, ['gold']);
    },
  },
  {
    name: 'two policies: rights united, shortest interval, highest quota and throttle',
    key: { apply_policies: ['a', 'b'] },
    want: (a) => {
      assert.ok(a.ok);
      const s = a.session;
      assert.deepEqual([s.rate, s.per], [10, 10], '10 per 10 s beats 10 per 60 s');
      assert.deepEqual([s.quota_max, s.quota_renewal_rate], [100, 3600]);
      assert.deepEqual([s.throttle_interval, s.throttle_retry_limit], [5, 2]);
      const rights = s.access_rights ?? {};
      assert.deepEqual(rights.api1?.versions, ['Default', 'v2']);
      assert.deepEqual(rights.api1.allowed_urls, [
        { url: '/x', methods: ['GET', 'POST'] },
        { url: '/y', methods: ['GET'] },
      ]);
      assert.deepEqual(rights.api2, { api_id: 'api2', versions: [''] });
    },
  },
  {
    name: '-1 beats every limit',
    key: { apply_policies: ['a', 'unlimited'] },
    want: (a) => {
      assert.ok(a.ok);
      assert.deepEqual([a.session.rate, a.session.quota_max], [-1, -1]);
    },
  },
  {
    name: "partitions: each policy gives only its parts; the rest stays the key's",
    key: { rate: 4, per: 2, access_rights: { mine: { api_id: 'mine' } }, apply_policies: ['quotaOnly'] },
    want: (a) => {
      assert.ok(a.ok);
      assert.equal(a.session.quota_max, 7);
      assert.deepEqual([a.session.rate, a.session.per], [4, 2], "rate stays the key's");
      assert.deepEqual(Object.keys(a.session.access_rights ?? {}), ['mine'], "rights stay the key's");
    },
  },
  {
    name: 'partitions: acl from one, quota from another',
    key: { apply_policies: ['aclOnly', 'quotaOnly'] },
    want: (a) => {
      assert.ok(a.ok);
      assert.equal(a.session.quota_max, 7, 'the acl-only policy carries no quota');
      assert.deepEqual(Object.keys(a.session.access_rights ?? {}), ['api9']);
    },
  },
  {
    name: 'meta data: the key wins over its policies',
    key: { meta_data: { plan: 'custom' }, apply_policies: ['a'] },
    want: (a) => {
      assert.ok(a.ok);
      assert.deepEqual(a.session.meta_data, { plan: 'custom', tier: '1' });
    },
  },
  {
    name: 'a policy with hmac_enabled lets the key sign requests',
    key: { hmac_string: 'enc:v1:x', apply_policies: ['a', 'signs'] },
    want: (a) => {
      assert.ok(a.ok);
      assert.equal(a.session.hmac_enabled, true);
    },
  },
  {
    name: 'draft policy: the key is inactive',
    key: { apply_policies: ['a', 'draft'] },
    want: (a) => {
      assert.deepEqual(a, { ok: false, reason: 'inactive', policy: 'draft' });
    },
  },
  {
    name: 'inactive policy: the key is inactive',
    key: { apply_policies: ['off'] },
    want: (a) => {
      assert.deepEqual(a, { ok: false, reason: 'inactive', policy: 'off' });
    },
  },
  {
    name: 'deny policy: never applied, the key has no access',
    key: { apply_policies: ['deny'] },
    want: (a) => {
      assert.deepEqual(a, { ok: false, reason: 'missing', policy: 'deny' });
    },
  },
  {
    name: 'missing policy: the key has no access',
    key: { apply_policies: ['gone'] },
    want: (a) => {
      assert.deepEqual(a, { ok: false, reason: 'missing', policy: 'gone' });
    },
  },
];

for (const c of cases) {
  test(`applyPolicies: ${c.name}`, () => {
    const before = structuredClone(c.key);
    c.want(applyPolicies(c.key, lookup));
    assert.deepEqual(c.key, before, 'the stored key is not changed');
  });
}

const graphqlPolicies: Record<string, GatewayPolicy> = {
  d2: {
    name: 'd2',
    max_query_depth: 2,
    partitions: { complexity: true, acl: true },
    access_rights: { g: { api_id: 'g', restricted_types: [{ name: 'User', fields: ['email'] }] } },
  },
  d5: {
    name: 'd5',
    max_query_depth: 5,
    access_rights: { g: { api_id: 'g', restricted_types: [{ name: 'User', fields: ['phone'] }] } },
  },
  unlimited: { name: 'unlimited', max_query_depth: -1, partitions: { complexity: true } },
  quotaOnly: { name: 'quotaOnly', max_query_depth: 1, partitions: { quota: true } },
};

const graphqlCases: { name: string; ids: string[]; depth: number | undefined; restricted?: string[] }[] = [
  { name: 'one policy sets the depth', ids: ['d2'], depth: 2, restricted: ['email'] },
  {
    name: 'the deepest wins, restrictions are united',
    ids: ['d2', 'd5'],
    depth: 5,
    restricted: ['email', 'phone'],
  },
  { name: 'unlimited beats all', ids: ['d5', 'unlimited'], depth: -1 },
  { name: 'without the complexity partition the depth is not applied', ids: ['quotaOnly'], depth: undefined },
];

for (const c of graphqlCases) {
  test(`applyPolicies: GraphQL, ${c.name}`, () => {
    const a = applyPolicies({ apply_policies: c.ids }, (id) => graphqlPolicies[id]);
    assert.ok(a.ok);
    assert.equal(a.session.max_query_depth, c.depth);
    if (c.restricted !== undefined) {
      assert.deepEqual(a.session.access_rights?.g?.restricted_types, [
        { name: 'User', fields: c.restricted },
      ]);
    }
  });
}
