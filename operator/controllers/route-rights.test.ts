import { test } from 'node:test';
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import type { AccessRight } from '../../schemas/generated/kinds.ts';
import { GATEWAY_ROUTES_ANNOTATION } from '../translate/gateway-api.ts';
import { expandRouteRights, servedRoutes } from './route-rights.ts';

/** A generated API of namespace infra serving `routes`. */
const generated = (name: string, routes: string[], deleting = false): k8s.KubernetesObject => ({
  metadata: {
    name,
    namespace: 'infra',
    annotations: { [GATEWAY_ROUTES_ANNOTATION]: routes.join(',') },
    ...(deleting ? { deletionTimestamp: new Date(0) } : {}),
  },
});

const cluster = [
  generated('gw-public', ['apps/shop', 'apps/blog']),
  generated('gw-rule-get', ['apps/shop']),
  generated('gw-rule-post', ['apps/shop']),
  generated('gw-blog', ['apps/blog']),
  generated('gw-old', ['apps/shop'], true),
];
const serving = (route: string): k8s.KubernetesObject[] =>
  cluster.filter((a) => servedRoutes(a).includes(route));
const limit = { quota_max: 2, quota_renewal_rate: 3600 };

/** `namespace`: the policy's (default `apps`). */
const cases: {
  name: string;
  namespace?: string;
  rights: AccessRight[];
  want: ReturnType<typeof expandRouteRights>;
}[] = [
  {
    name: 'API entries are kept as written',
    rights: [{ name: 'orders' }, { name: 'docs', kind: 'SvcOasApiDefinition', namespace: 'x' }],
    want: { rights: [{ name: 'orders' }, { name: 'docs', kind: 'SvcOasApiDefinition', namespace: 'x' }] },
  },
  {
    name: 'a route: one entry per API serving it (public and per rule), by name, its settings copied; APIs being deleted left out',
    rights: [
      {
        kind: 'HTTPRoute',
        name: 'shop',
        versions: ['Default'],
        limit,
        allowed_urls: [{ url: '/a', methods: ['GET'] }],
      },
    ],
    want: {
      rights: ['gw-public', 'gw-rule-get', 'gw-rule-post'].map((name) => ({
        versions: ['Default'],
        limit,
        allowed_urls: [{ url: '/a', methods: ['GET' as const] }],
        kind: 'ApiDefinition' as const,
        name,
        namespace: 'infra',
      })),
    },
  },
  {
    name: 'a route of another namespace, in order among APIs',
    namespace: 'default',
    rights: [{ name: 'orders' }, { kind: 'HTTPRoute', name: 'blog', namespace: 'apps' }, { name: 'z' }],
    want: {
      rights: [
        { name: 'orders' },
        { kind: 'ApiDefinition', name: 'gw-blog', namespace: 'infra' },
        { kind: 'ApiDefinition', name: 'gw-public', namespace: 'infra' },
        { name: 'z' },
      ],
    },
  },
  {
    name: 'a route no API serves: missing, named with the policy namespace',
    namespace: 'default',
    rights: [
      { kind: 'HTTPRoute', name: 'shop' },
      { kind: 'HTTPRoute', name: 'shop', namespace: 'apps' },
    ],
    want: { missing: ['HTTPRoute default/shop'] },
  },
];

for (const c of cases) {
  test(`expandRouteRights: ${c.name}`, () => {
    assert.deepEqual(expandRouteRights(c.rights, c.namespace ?? 'apps', serving), c.want);
  });
}

test('servedRoutes: the annotation read, none without it', () => {
  assert.deepEqual(servedRoutes(generated('a', ['apps/shop', 'apps/blog'])), ['apps/shop', 'apps/blog']);
  assert.deepEqual(servedRoutes({ metadata: { name: 'plain' } }), []);
  assert.deepEqual(servedRoutes(generated('a', [])), []);
});

test('expandRouteRights: only an API being deleted serves the route: missing', () => {
  const only = [generated('gw-old', ['apps/shop'], true)];
  assert.deepEqual(
    expandRouteRights([{ kind: 'HTTPRoute', name: 'shop' }], 'apps', () => only),
    {
      missing: ['HTTPRoute apps/shop'],
    },
  );
});
