import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  durationMs,
  intersectHostnames,
  translateGateway,
  type EndpointSliceInput,
  type GatewayInput,
  type GatewayTranslation,
  type HttpRouteInput,
  type ReferenceGrantInput,
  type ServiceInput,
} from './gateway-api.ts';
import { weightedTargets } from './gateway-api/backends.ts';
import { regexListenPath } from './gateway-api/routes.ts';
import { goldenTests } from './golden.ts';
import { assertAdmittedAndServed } from './testing.ts';

/** A golden input: a Gateway, its routes and the cluster state they are translated against. */
interface GoldenInput {
  gateway: GatewayInput;
  routes: HttpRouteInput[];
  services?: Record<string, ServiceInput>;
  endpointSlices?: Record<string, EndpointSliceInput[]>;
  secrets?: string[];
  /** Secrets (`namespace/name`) whose certificate or key does not parse, with the problem. */
  badSecrets?: Record<string, string>;
  namespaces?: Record<string, Record<string, string>>;
  grants?: ReferenceGrantInput[];
  gatewayPort?: number;
  /** Per-Gateway addresses: listener port -> the gateway port allocated to the Gateway. */
  ownPorts?: Record<number, number>;
}

const run = (input: GoldenInput): GatewayTranslation =>
  translateGateway(input.gateway, input.routes, {
    service: (ns, name) => input.services?.[`${ns}/${name}`],
    endpointSlices: (ns, name) => input.endpointSlices?.[`${ns}/${name}`] ?? [],
    secretExists: (ns, name) => (input.secrets ?? []).includes(`${ns}/${name}`),
    certificateProblem: (ns, name) => input.badSecrets?.[`${ns}/${name}`],
    namespaceLabels: (ns) => input.namespaces?.[ns],
    grants: input.grants ?? [],
    ...(input.gatewayPort === undefined ? {} : { gatewayPort: input.gatewayPort }),
    ...(input.ownPorts === undefined ? {} : { ownPorts: input.ownPorts }),
  });

await goldenTests('gateway-api', run, (got) => {
  const ids = new Set(got.apis.map((a) => a.spec.api_id ?? ''));
  assert.equal(ids.size, got.apis.length, 'IDs are unique');
  for (const api of got.apis) {
    // Each generated API is an ApiDefinition the API server admits, and its translation is a
    // definition the gateway serves.
    assertAdmittedAndServed(api);
    assert.ok(api.name.length <= 253 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(api.name), api.name);
    // Every internal target names a generated API: nothing dangles.
    for (const m of JSON.stringify(api.spec).matchAll(/svc:\/\/([a-z0-9-]+)/g)) {
      assert.ok(ids.has(m[1] ?? ''), `${api.name}: ${m[0]} is generated`);
    }
  }
});

test('hostnames intersect as the spec says', () => {
  const cases: [string | undefined, string[], string[] | undefined][] = [
    [undefined, [], ['']],
    [undefined, ['a.example.com'], ['a.example.com']],
    ['*.example.com', [], ['*.example.com']],
    [
      '*.example.com',
      ['a.example.com', 'a.b.example.com', 'example.com'],
      ['a.b.example.com', 'a.example.com'],
    ],
    ['a.example.com', ['*.example.com'], ['a.example.com']],
    ['a.example.com', ['b.example.com'], undefined],
    ['*.example.com', ['*.a.example.com'], ['*.a.example.com']],
  ];
  for (const [listener, routes, want] of cases) {
    assert.deepEqual(intersectHostnames(listener, routes), want, `${listener ?? '-'} x ${routes.join(',')}`);
  }
});

test('durations: the spec form, in milliseconds', () => {
  assert.equal(durationMs('1h2m3s'), 3_723_000);
  assert.equal(durationMs('500ms'), 500);
  assert.equal(durationMs('10'), undefined);
  assert.equal(durationMs('1.5s'), undefined);
});

test('weights: each backend gets its share of the round-robin list, interleaved', () => {
  const list = weightedTargets(
    [
      { weight: 90, targets: ['http://a:1'] },
      { weight: 10, targets: ['http://b:1', 'http://c:1'] },
      { weight: 0, targets: ['http://z:1'] },
    ],
    'svc://none/',
  );
  const count = (t: string) => list.filter((x) => x === t).length;
  assert.equal(count('http://a:1') / list.length, 0.9);
  assert.equal(count('http://b:1'), count('http://c:1'));
  assert.equal(count('http://z:1'), 0);
  assert.deepEqual(list.slice(0, 2), ['http://a:1', 'http://b:1']);
  assert.deepEqual(weightedTargets([{ weight: 1, targets: [] }], 'svc://none/'), ['svc://none/']);
});

test('a RegularExpression path is served under the listen path of its literal start, on whole segments', () => {
  const cases: [string, string][] = [
    ['/items/[0-9]+', '/items'],
    ['^/items/[0-9]+', '/items'],
    ['/api/v1/.*', '/api/v1'],
    ['/api/v1?/x', '/api'],
    ['/foo.*', '/'],
    ['/foo', '/'],
    ['/(docs|help)/.*', '/'],
    ['/a/b|/c/d', '/'],
    ['.*', '/'],
  ];
  for (const [regex, path] of cases) assert.equal(regexListenPath(regex), path, regex);
});

test('an HTTP and an HTTPS listener on one port: both ProtocolConflict, neither served; either alone is', () => {
  const listener = (name: string, protocol: string) => ({
    name,
    port: 8090,
    protocol,
    ...(protocol === 'HTTPS' ? { tls: { certificateRefs: [{ name: 'cert' }] } } : {}),
  });
  const route: HttpRouteInput = {
    metadata: { name: 'r', namespace: 'infra' },
    spec: { parentRefs: [{ name: 'gw' }], rules: [{ backendRefs: [{ name: 'b', port: 80 }] }] },
  };
  const translate = (protocols: string[]): GatewayTranslation =>
    run({
      gateway: {
        metadata: { name: 'gw', namespace: 'infra' },
        spec: { gatewayClassName: 'svc', listeners: protocols.map((p) => listener(p.toLowerCase(), p)) },
      },
      routes: [route],
      services: { 'infra/b': { spec: { ports: [{ port: 80 }] } } },
      secrets: ['infra/cert'],
    });
  const both = translate(['HTTP', 'HTTPS']);
  assert.deepEqual(both.apis, []);
  for (const l of both.listeners) {
    const c = (type: string) => l.conditions.find((x) => x.type === type);
    assert.deepEqual(
      [c('Conflicted')?.status, c('Conflicted')?.reason],
      ['True', 'ProtocolConflict'],
      l.name,
    );
    assert.deepEqual([c('Accepted')?.status, c('Accepted')?.reason], ['False', 'ProtocolConflict'], l.name);
    assert.equal(l.attachedRoutes, 0, l.name);
  }
  assert.deepEqual([both.conditions[0]?.status, both.conditions[0]?.reason], ['False', 'ListenersNotValid']);
  assert.match(
    both.conditions[0]?.message ?? '',
    /conflicted: http \(ProtocolConflict\), https \(ProtocolConflict\)/,
  );
  assert.equal(both.routes['infra/r']?.[0]?.conditions[0]?.reason, 'NotAllowedByListeners');
  for (const alone of ['HTTP', 'HTTPS']) {
    const t = translate([alone]);
    assert.deepEqual(
      t.apis.map((a) => [a.spec.protocol, a.spec.listen_port]),
      [[alone.toLowerCase(), 8090]],
      alone,
    );
  }
});
