import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type {
  ApiResourceRef,
  NamespacedRef,
  SecurityPolicySpec,
  SecurityPolicyStatus,
} from '../../schemas/generated/kinds.ts';
import { InputError, TransientError } from '../../lib/errors.ts';
import { derivedId, hashOf } from '../ids.ts';
import type { AppliedBy, AppliedOf } from '../clients/management.ts';
import {
  POLICY_FINALIZER,
  reconcileSecurityPolicy,
  type ApiView,
  type PolicyObject,
} from './security-policy.ts';
import { assertReady, baseDeps, FakeGateway, settle } from './testing.ts';
import { GATEWAY_ROUTES_ANNOTATION } from '../translate/gateway-api.ts';
import { servedRoutes } from './route-rights.ts';

const A = 'http://gw-a';
const B = 'http://gw-b';
const POL = derivedId('team', 'plan');

/** An API resource; `apiId` is what its controller wrote in status (none: not pushed yet). */
function api(
  name: string,
  opts: {
    kind?: ApiResourceRef['kind'];
    namespace?: string;
    apiId?: string | null;
    jwt?: NamespacedRef[];
    deleting?: boolean;
    /** The HTTPRoutes a generated API serves (its annotation, written by the Gateway controller). */
    routes?: string[];
  } = {},
): ApiView {
  const apiId = opts.apiId === undefined ? `id-${name}` : opts.apiId;
  return {
    kind: opts.kind ?? 'ApiDefinition',
    metadata: {
      name,
      namespace: opts.namespace ?? 'team',
      ...(opts.routes ? { annotations: { [GATEWAY_ROUTES_ANNOTATION]: opts.routes.join(',') } } : {}),
      ...(opts.deleting ? { deletionTimestamp: new Date(0) } : {}),
    },
    spec: opts.jwt ? { jwt_default_policies: opts.jwt } : {},
    ...(apiId === null ? {} : { status: { api_id: apiId } }),
  };
}

interface Case {
  name: string;
  spec?: Omit<SecurityPolicySpec, 'name'>;
  /** The status the policy has to begin with. */
  initial?: SecurityPolicyStatus;
  /** Reconcile once first and keep the status written (the policy was pushed before). */
  pushedBefore?: boolean;
  /** Applied after `pushedBefore`: a spec change, an edit in the gateway, a gateway down. */
  then?: { spec?: Omit<SecurityPolicySpec, 'name'>; gateways?: (gw: Record<string, FakeGateway>) => void };
  deleting?: boolean;
  apis?: ApiView[];
  /** Gateway writes expected, by URL. */
  writes?: Record<string, string[]>;
  ready?: { status: 'True' | 'False'; reason: string; message?: RegExp };
  /** Further checks of the status written (undefined: none was written). */
  status?: (s: SecurityPolicyStatus | undefined, gw: Record<string, FakeGateway>) => void;
  events?: string[];
  finalizers?: string[];
  throws?: boolean;
  requeue?: boolean;
  /**
   * What the gateways say they apply of the policy (`GET /svc/nodes/policies/{id}`), given the
   * revision the default gateway holds; absent: they do not say.
   */
  applied?: (held: string) => AppliedBy[];
}

const ordersRight = {
  access_rights_array: [
    { name: 'orders', allowed_urls: [{ url: '/orders/(.*)', methods: ['GET' as const] }] },
  ],
};

/** An access right naming the HTTPRoute `name` with a quota and a rate limit. */
const routeRight = (name: string, namespace?: string) => ({
  kind: 'HTTPRoute' as const,
  name,
  ...(namespace === undefined ? {} : { namespace }),
  limit: { rate: 5, per: 60, quota_max: 2, quota_renewal_rate: 3600 },
});

const cases: Case[] = [
  {
    name: 'an HTTPRoute: its rights on each API generated to serve it (public and internal), none other',
    spec: { access_rights_array: [routeRight('shop', 'apps')] },
    apis: [
      api('gw-public', { namespace: 'infra', routes: ['apps/shop', 'apps/other'] }),
      api('gw-get', { namespace: 'infra', routes: ['apps/shop'] }),
      api('gw-elsewhere', { namespace: 'infra', routes: ['apps/other'] }),
      api('gw-going', { namespace: 'infra', routes: ['apps/shop'], deleting: true }),
    ],
    writes: { [A]: [`createPolicy ${POL}`] },
    ready: { status: 'True', reason: 'Synced' },
    status: (s, gw) => {
      assert.deepEqual(s?.linked_apis, [
        { kind: 'ApiDefinition', name: 'gw-get', namespace: 'infra' },
        { kind: 'ApiDefinition', name: 'gw-public', namespace: 'infra' },
      ]);
      const rights = gw.default?.policies.get(POL)?.access_rights ?? {};
      assert.deepEqual(Object.keys(rights).sort(), ['id-gw-get', 'id-gw-public']);
      for (const r of Object.values(rights)) {
        assert.deepEqual(r.versions, ['Default']);
        assert.ok(r.limit);
        assert.equal(r.limit.quota_max, 2);
        assert.equal(r.limit.rate, 5);
      }
    },
  },
  {
    name: 'an HTTPRoute of the policy namespace, beside an API: both covered',
    spec: { access_rights_array: [routeRight('shop'), { name: 'orders' }] },
    apis: [api('orders'), api('gw-shop', { namespace: 'infra', routes: ['team/shop'] })],
    writes: { [A]: [`createPolicy ${POL}`] },
    status: (s, gw) => {
      const rights = gw.default?.policies.get(POL)?.access_rights ?? {};
      assert.deepEqual(Object.keys(rights).sort(), ['id-gw-shop', 'id-orders']);
      assert.equal(rights['id-orders']?.limit, undefined);
    },
  },
  {
    name: 'an HTTPRoute no generated API serves yet: waits (ApiNotFound naming the route), nothing pushed',
    spec: { access_rights_array: [routeRight('shop', 'apps')] },
    apis: [api('gw-other', { namespace: 'infra', routes: ['apps/other'] })],
    writes: { [A]: [] },
    ready: {
      status: 'False',
      reason: 'ApiNotFound',
      message: /access_rights_array names HTTPRoute apps\/shop, which no generated ApiDefinition serves yet/,
    },
  },
  {
    name: 'an HTTPRoute whose generated API has no ID yet: ApiNotReady',
    spec: { access_rights_array: [routeRight('shop', 'apps')] },
    apis: [api('gw-shop', { namespace: 'infra', routes: ['apps/shop'], apiId: null })],
    writes: { [A]: [] },
    ready: {
      status: 'False',
      reason: 'ApiNotReady',
      message: /ApiDefinition infra\/gw-shop has no API ID yet/,
    },
  },
  {
    name: 'an HTTPRoute named twice: SpecInvalid',
    spec: { access_rights_array: [routeRight('shop'), routeRight('shop', 'team')] },
    apis: [api('gw-shop', { namespace: 'infra', routes: ['team/shop'] })],
    writes: { [A]: [] },
    ready: { status: 'False', reason: 'SpecInvalid', message: /lists HTTPRoute team\/shop twice/ },
  },
  {
    name: 'new: pushed with the API ID from the API status; finalizer, status and event',
    spec: { ...ordersRight, rate: 10, per: 60 },
    apis: [api('orders')],
    writes: { [A]: [`createPolicy ${POL}`] },
    ready: { status: 'True', reason: 'Synced', message: new RegExp(`policy ${POL} is held by ${A}`) },
    status: (s, gw) => {
      assert.ok(s);
      assert.equal(s.pol_id, POL);
      assert.deepEqual(s.linked_apis, [{ kind: 'ApiDefinition', name: 'orders', namespace: 'team' }]);
      assert.deepEqual(s.pushedTo, { url: A });
      assert.equal(s.latestTransaction?.status, 'Successful');
      const held = gw.default?.policies.get(POL);
      const right = held?.access_rights?.['id-orders'];
      assert.ok(held && right);
      assert.equal(held.org_id, 'org-1');
      assert.equal(held.rate, 10);
      assert.deepEqual(right.allowed_urls, [{ url: '/orders/(.*)', methods: ['GET'] }]);
      assert.deepEqual(right.versions, ['Default']);
    },
    events: [`Normal Created: policy ${POL} created in ${A}`],
    finalizers: [`+${POLICY_FINALIZER}`],
  },
  {
    name: 'unchanged after a push: nothing written, not even status',
    spec: ordersRight,
    apis: [api('orders')],
    pushedBefore: true,
    writes: { [A]: [] },
    status: (s) => {
      assert.equal(s, undefined);
    },
    events: [],
  },
  {
    name: 'a spec change is pushed as an update',
    spec: ordersRight,
    apis: [api('orders')],
    pushedBefore: true,
    then: { spec: { ...ordersRight, rate: 5, per: 1 } },
    writes: { [A]: [`updatePolicy ${POL}`] },
    status: (_s, gw) => {
      assert.equal(gw.default?.policies.get(POL)?.rate, 5);
    },
    events: [`Normal Updated: policy ${POL} updated in ${A}`],
  },
  {
    name: 'drift: an edit in the gateway is reverted',
    spec: ordersRight,
    apis: [api('orders')],
    pushedBefore: true,
    then: {
      gateways: (gw) => {
        const p = gw.default?.policies.get(POL);
        if (p) p.access_rights = {};
      },
    },
    writes: { [A]: [`updatePolicy ${POL}`] },
    status: (_s, gw) => {
      assert.deepEqual(Object.keys(gw.default?.policies.get(POL)?.access_rights ?? {}), ['id-orders']);
    },
  },
  {
    name: 'drift: a policy deleted in the gateway is created again, with the same ID',
    spec: ordersRight,
    apis: [api('orders')],
    pushedBefore: true,
    then: { gateways: (gw) => gw.default?.policies.clear() },
    writes: { [A]: [`createPolicy ${POL}`] },
  },
  {
    name: 'spec.id adopts an existing policy and overwrites it',
    spec: { id: 'legacy-gold', ...ordersRight },
    apis: [api('orders')],
    then: { gateways: (gw) => gw.default?.policies.set('legacy-gold', { id: 'legacy-gold', name: 'old' }) },
    writes: { [A]: ['updatePolicy legacy-gold'] },
    status: (s, gw) => {
      assert.equal(s?.pol_id, 'legacy-gold');
      assert.equal(gw.default?.policies.get('legacy-gold')?.name, 'plan');
    },
  },
  {
    name: 'OAS and streams APIs: versions default to "", other namespaces resolve',
    spec: {
      access_rights_array: [
        { name: 'petstore', kind: 'SvcOasApiDefinition' },
        { name: 'events', kind: 'SvcStreamsApiDefinition', namespace: 'streaming' },
      ],
    },
    apis: [
      api('petstore', { kind: 'SvcOasApiDefinition' }),
      api('events', { kind: 'SvcStreamsApiDefinition', namespace: 'streaming' }),
    ],
    writes: { [A]: [`createPolicy ${POL}`] },
    status: (s, gw) => {
      const rights = gw.default?.policies.get(POL)?.access_rights ?? {};
      assert.deepEqual(rights['id-petstore']?.versions, ['']);
      assert.deepEqual(rights['id-events']?.versions, ['']);
      assert.deepEqual(s?.linked_apis, [
        { kind: 'SvcStreamsApiDefinition', name: 'events', namespace: 'streaming' },
        { kind: 'SvcOasApiDefinition', name: 'petstore', namespace: 'team' },
      ]);
    },
  },
  {
    name: 'an API that does not exist: ApiNotFound, nothing pushed, no retry (the API watch brings it back)',
    spec: ordersRight,
    writes: { [A]: [] },
    ready: {
      status: 'False',
      reason: 'ApiNotFound',
      message: /names ApiDefinition team\/orders, which does not exist yet/,
    },
    status: (s) => {
      assert.equal(s?.latestTransaction, undefined, 'no call to the gateway was made');
    },
    events: [
      'Warning ApiNotFound: access_rights_array names ApiDefinition team/orders, which does not exist yet: the policy is pushed once it does',
    ],
  },
  {
    name: 'an API without an ID yet: ApiNotReady',
    spec: ordersRight,
    apis: [api('orders', { apiId: null })],
    writes: { [A]: [] },
    ready: {
      status: 'False',
      reason: 'ApiNotReady',
      message: /ApiDefinition team\/orders has no API ID yet/,
    },
  },
  {
    name: 'an API of another kind with the same name does not count',
    spec: { access_rights_array: [{ name: 'orders', kind: 'SvcOasApiDefinition' }] },
    apis: [api('orders')],
    ready: { status: 'False', reason: 'ApiNotFound' },
  },
  {
    name: 'the same API twice: SpecInvalid',
    spec: { access_rights_array: [{ name: 'orders' }, { name: 'orders', namespace: 'team' }] },
    apis: [api('orders')],
    writes: { [A]: [] },
    ready: { status: 'False', reason: 'SpecInvalid', message: /lists ApiDefinition team\/orders twice/ },
  },
  {
    name: 'draft is pushed as draft',
    spec: { ...ordersRight, state: 'draft' },
    apis: [api('orders')],
    writes: { [A]: [`createPolicy ${POL}`] },
    ready: { status: 'True', reason: 'Synced', message: /state draft: its keys are disabled/ },
    status: (_s, gw) => {
      assert.equal(gw.default?.policies.get(POL)?.state, 'draft');
    },
  },
  {
    name: 'deny removes a pushed policy from the gateway, and the status says so',
    spec: ordersRight,
    apis: [api('orders')],
    pushedBefore: true,
    then: { spec: { ...ordersRight, state: 'deny' } },
    writes: { [A]: [`deletePolicy ${POL}`] },
    ready: {
      status: 'True',
      reason: 'Denied',
      message: new RegExp(`not published \\(state deny\\): deleted from ${A}`),
    },
    status: (s) => {
      assert.equal(s?.pushedTo, undefined);
      assert.equal(s?.latestCRDSpecHash, undefined);
    },
    events: [`Normal Deleted: policy ${POL} deleted from ${A}`],
  },
  {
    name: 'deny without anything in the gateway: nothing to do, and an API that is missing does not matter',
    spec: { ...ordersRight, state: 'deny' },
    writes: { [A]: [] },
    ready: { status: 'True', reason: 'Denied', message: /absent from/ },
    events: [],
  },
  {
    name: 'contextRef moved: pushed to the new gateway, deleted from the old one',
    spec: ordersRight,
    apis: [api('orders')],
    pushedBefore: true,
    then: { spec: { ...ordersRight, contextRef: { name: 'edge' } } },
    writes: { [A]: [`deletePolicy ${POL}`], [B]: [`createPolicy ${POL}`] },
    status: (s) => {
      assert.deepEqual(s?.pushedTo, { url: B, contextRef: { name: 'edge', namespace: 'team' } });
    },
  },
  {
    name: 'contextRef moved, the old gateway down: pushed to the new one, Ready=False, retried, still recorded at the old one',
    spec: ordersRight,
    apis: [api('orders')],
    pushedBefore: true,
    then: {
      spec: { ...ordersRight, contextRef: { name: 'edge' } },
      gateways: (gw) => {
        if (gw.default)
          gw.default.failWith = new TransientError('OP_ERR_GATEWAY_UNREACHABLE', `gateway ${A} unreachable`);
      },
    },
    writes: { [A]: [], [B]: [`createPolicy ${POL}`] },
    ready: {
      status: 'False',
      reason: 'GatewayUnavailable',
      message: new RegExp(`moved to ${B}, but deleting it from ${A} failed: gateway ${A} unreachable`),
    },
    status: (s) => {
      assert.deepEqual(s?.pushedTo, { url: A });
      assert.equal(s.latestTransaction?.status, 'Failed');
    },
    throws: true,
  },
  {
    name: 'contextRef moved away from a context that is gone: a warning, and the new place is recorded',
    spec: { ...ordersRight, contextRef: { name: 'edge' } },
    initial: { pushedTo: { url: 'http://gw-old', contextRef: { name: 'retired', namespace: 'team' } } },
    apis: [api('orders')],
    writes: { [B]: [`createPolicy ${POL}`] },
    events: [
      `Warning LeftBehind: policy ${POL} could not be deleted from http://gw-old, where it was pushed before: OperatorContext team/retired does not exist; delete it there by hand`,
      `Normal Created: policy ${POL} created in ${B}`,
    ],
  },
  {
    name: 'the gateway refuses the policy: GatewayRejected, not retried until the spec changes',
    spec: ordersRight,
    apis: [api('orders')],
    then: {
      gateways: (gw) => {
        if (gw.default)
          gw.default.failWith = new InputError(
            'OP_ERR_GATEWAY_REJECTED',
            'gateway POST /svc/policies: 400 bad',
          );
      },
    },
    ready: { status: 'False', reason: 'GatewayRejected', message: /400 bad/ },
    status: (s) => {
      assert.equal(s?.latestTransaction?.status, 'Failed');
    },
  },
  {
    name: 'the gateway down: GatewayUnavailable and a retry with backoff',
    spec: ordersRight,
    apis: [api('orders')],
    then: {
      gateways: (gw) => {
        if (gw.default) gw.default.failWith = new TransientError('OP_ERR_GATEWAY_UNREACHABLE', 'unreachable');
      },
    },
    ready: { status: 'False', reason: 'GatewayUnavailable' },
    throws: true,
  },
  {
    name: 'a context that does not exist: ContextNotFound, waits for it',
    spec: { ...ordersRight, contextRef: { name: 'nowhere' } },
    apis: [api('orders')],
    ready: { status: 'False', reason: 'ContextNotFound' },
  },
  {
    name: 'ApiDefinitions naming the policy in jwt_default_policies are linked',
    spec: ordersRight,
    apis: [
      api('orders'),
      api('reports', { namespace: 'analytics', jwt: [{ name: 'plan', namespace: 'team' }] }),
      api('other', { jwt: [{ name: 'x' }] }),
    ],
    status: (s) => {
      assert.deepEqual(s?.linked_apis, [
        { kind: 'ApiDefinition', name: 'reports', namespace: 'analytics' },
        { kind: 'ApiDefinition', name: 'orders', namespace: 'team' },
      ]);
    },
  },
  {
    name: 'deleted: removed from the gateway, then the finalizer goes',
    spec: ordersRight,
    apis: [api('orders')],
    pushedBefore: true,
    deleting: true,
    writes: { [A]: [`deletePolicy ${POL}`] },
    events: [`Normal Deleted: policy ${POL} deleted from ${A}`],
    finalizers: [`-${POLICY_FINALIZER}`],
  },
  {
    name: 'deleted after a move not yet reconciled: removed from where it was pushed',
    spec: ordersRight,
    apis: [api('orders')],
    pushedBefore: true,
    then: { spec: { ...ordersRight, contextRef: { name: 'edge' } } },
    deleting: true,
    writes: { [A]: [`deletePolicy ${POL}`], [B]: [] },
    finalizers: [`-${POLICY_FINALIZER}`],
  },
  {
    name: 'deleted while an ApiDefinition names it in jwt_default_policies: held, InUse',
    spec: ordersRight,
    apis: [api('orders'), api('reports', { jwt: [{ name: 'plan' }] })],
    pushedBefore: true,
    deleting: true,
    writes: { [A]: [] },
    ready: {
      status: 'False',
      reason: 'InUse',
      message: /still used by ApiDefinition team\/reports \(jwt_default_policies\)/,
    },
    finalizers: [],
  },
  {
    name: 'deleted with the API that names it: the API being deleted does not hold it',
    spec: ordersRight,
    apis: [api('orders'), api('reports', { jwt: [{ name: 'plan' }], deleting: true })],
    pushedBefore: true,
    deleting: true,
    writes: { [A]: [`deletePolicy ${POL}`] },
    finalizers: [`-${POLICY_FINALIZER}`],
  },
  {
    name: 'every gateway applies the revision pushed: Ready and Programmed, both listed in status.gateways',
    spec: ordersRight,
    apis: [api('orders')],
    applied: (held) => [
      { id: '2', name: 'gw-b:8080', revision: held, appliedAt: '2025-06-01T12:00:00.040Z' },
      { id: '1', name: 'gw-a:8080', revision: held, appliedAt: '2025-06-01T12:00:00.020Z' },
    ],
    ready: {
      status: 'True',
      reason: 'Synced',
      message: new RegExp(
        `^policy ${POL} is held by ${A}; revision [0-9a-f]{12} served by all 2 gateways: gw-a:8080, gw-b:8080$`,
      ),
    },
    status: (s) => {
      assert.ok(s);
      assert.deepEqual(
        s.gateways?.map((g) => `${g.name} ${g.revision === s.latestSvcSpecHash ? 'current' : 'other'}`),
        ['gw-a:8080 current', 'gw-b:8080 current'],
      );
      const programmed = s.conditions?.find((c) => c.type === 'Programmed');
      assert.equal(programmed?.status, 'True');
    },
    events: [`Normal Created: policy ${POL} created in ${A}`],
  },
  {
    name: 'a gateway that has not applied the change: Pending naming it, looked at again soon',
    spec: ordersRight,
    apis: [api('orders')],
    pushedBefore: true,
    then: { spec: { ...ordersRight, rate: 5, per: 1 } },
    applied: (held) => [
      { id: '1', name: 'gw-a:8080', revision: held, appliedAt: '2025-06-01T12:00:00.020Z' },
      { id: '2', name: 'gw-b:8080', revision: 'b'.repeat(64), appliedAt: '2025-06-01T11:00:00.000Z' },
    ],
    writes: { [A]: [`updatePolicy ${POL}`] },
    ready: {
      status: 'False',
      reason: 'Pending',
      message: new RegExp(
        `^policy ${POL} is written to ${A}; waiting for 1 of 2 gateways to serve revision [0-9a-f]{12}: gw-b:8080$`,
      ),
    },
    status: (s) => {
      assert.ok(s);
      assert.equal(s.conditions?.find((c) => c.type === 'Programmed')?.status, 'False');
      assert.deepEqual(
        s.gateways?.map((g) => g.name),
        ['gw-a:8080', 'gw-b:8080'],
      );
    },
    events: [`Normal Updated: policy ${POL} updated in ${A}`],
    requeue: true,
  },
  {
    name: 'state deny: not published, no gateways to wait for',
    spec: { ...ordersRight, state: 'deny' },
    apis: [api('orders')],
    applied: () => [{ id: '1', name: 'gw-a:8080' }],
    ready: { status: 'True', reason: 'Denied', message: /is not published \(state deny\)/ },
    status: (s) => {
      assert.equal(s?.gateways, undefined);
      assert.equal(
        s?.conditions?.find((c) => c.type === 'Programmed'),
        undefined,
      );
    },
  },
  {
    name: 'deleted without a connection: the finalizer stays, checked again later',
    spec: { contextRef: { name: 'nowhere' } },
    deleting: true,
    ready: { status: 'False', reason: 'ContextNotFound', message: /cannot delete policy/ },
    finalizers: [],
    requeue: true,
  },
];

describe('reconcileSecurityPolicy', () => {
  for (const c of cases) {
    test(c.name, async () => {
      const gateways = { default: new FakeGateway(A), 'team/edge': new FakeGateway(B) };
      const applied = c.applied;
      if (applied !== undefined) {
        const gw = gateways.default;
        Object.assign(gw, {
          appliedBy: (of: AppliedOf): Promise<AppliedBy[]> => {
            assert.equal(of.kind, 'policies');
            return Promise.resolve(applied(hashOf(gw.policies.get(of.id))));
          },
        });
      }
      let policy: PolicyObject = {
        apiVersion: 'svc.svc.io/v1alpha1',
        kind: 'SecurityPolicy',
        metadata: { name: 'plan', namespace: 'team', generation: 1, finalizers: [] },
        spec: { name: 'plan', ...c.spec },
        ...(c.initial ? { status: c.initial } : {}),
      };
      const deps = {
        ...baseDeps<PolicyObject>(gateways),
        read: () => Promise.resolve(policy),
        api: (ref: ApiResourceRef) =>
          (c.apis ?? []).find(
            (a) =>
              a.kind === ref.kind && a.metadata?.namespace === ref.namespace && a.metadata.name === ref.name,
          ),
        apiDefinitions: () => (c.apis ?? []).filter((a) => a.kind === 'ApiDefinition'),
        routeApis: (route: string) => (c.apis ?? []).filter((a) => servedRoutes(a).includes(route)),
      };
      if (c.pushedBefore) {
        await reconcileSecurityPolicy('team/plan', deps);
        policy = {
          ...policy,
          metadata: { ...policy.metadata, finalizers: [POLICY_FINALIZER] },
          status: deps.objects.statuses.at(-1) as SecurityPolicyStatus,
        };
      } else if (c.deleting) {
        policy.metadata.finalizers = [POLICY_FINALIZER];
      }
      if (c.then?.spec) policy = { ...policy, spec: { name: 'plan', ...c.then.spec } };
      c.then?.gateways?.(gateways);
      if (c.deleting) policy.metadata.deletionTimestamp = new Date(0);
      for (const gw of Object.values(gateways)) gw.writes.length = 0;
      deps.objects.statuses.length = 0;
      deps.objects.finalizers.length = 0;
      deps.events.lines.length = 0;

      const { result, thrown } = await settle(reconcileSecurityPolicy('team/plan', deps));
      assert.equal(thrown !== undefined, c.throws === true, `thrown: ${String(thrown)}`);
      if (c.requeue !== undefined) assert.equal(result?.requeueAfterMs !== undefined, c.requeue);
      for (const [url, writes] of Object.entries(c.writes ?? {})) {
        const gw = Object.values(gateways).find((g) => g.url === url);
        assert.deepEqual(gw?.writes, writes, `writes to ${url}`);
      }
      const status = deps.objects.statuses.at(-1) as SecurityPolicyStatus | undefined;
      if (c.ready) assertReady(status, c.ready);
      c.status?.(status, gateways);
      if (c.events) assert.deepEqual(deps.events.lines, c.events);
      if (c.finalizers) assert.deepEqual(deps.objects.finalizers, c.finalizers);
    });
  }
});
