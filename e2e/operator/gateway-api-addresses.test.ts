/**
 * Per-Gateway addresses end to end (docs/gateway-api.md, "Addresses"): a real control plane with
 * the Gateway API CRDs, a gateway, and the operator as a process with
 * SVC_GATEWAY_API_ADDRESSES=per-gateway. The gateway's own Service (svc-system/svc-gateway) has an
 * EndpointSlice written by hand pointing at this machine (a bare API server runs no endpoints
 * controller), as do the echo upstreams' Services. Two Gateways named alike in two namespaces,
 * each with a route for the same listener port, host and path: each gets a Service of its own
 * (its ClusterIP the Gateway's address) whose port leads to a gateway port of its own, and a
 * request there reaches its own route's backend, over HTTP and HTTPS. The allocation survives an
 * operator restart, and the Service goes with its Gateway (the bare API server has no garbage
 * collector: the operator deletes it, the ownerReference is checked).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { makeCert } from '../../gateway/testing/client-certs.ts';
import { tlsGet } from '../../gateway/testing/tls-client.ts';
import { SVC_GATEWAY_CLASS, endpointService, hostAddress, type Cond } from '../harness/gateway-api.ts';
import {
  freePort,
  httpRequest,
  readEcho,
  startEchoUpstream,
  waitFor,
  type EchoUpstream,
  type OperatorProc,
} from '../harness/processes.ts';
import { applyManifest, tlsSecretManifest } from './helpers.ts';
import { startGatewayApiSuite, startWorldOperator, stopGatewaySuite, type GatewaySuite } from './helpers.ts';

const ONE = 'gwaddr-one';
const TWO = 'gwaddr-two';
const GATEWAY_NS = 'svc-system';
const HOST_NAME = 'shop.example';

let w: GatewaySuite;
let operator: OperatorProc;
let range: { first: number; last: number };
const upstreams: EchoUpstream[] = [];

const HOST = hostAddress();

/** Whether a port can be bound on every address now. */
const bindable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => {
      resolve(false);
    });
    s.listen(port, () => {
      s.close(() => {
        resolve(true);
      });
    });
  });

/** Four free consecutive ports: the range the operator allocates gateway ports from. */
async function freeRange(): Promise<{ first: number; last: number }> {
  for (;;) {
    const first = await freePort();
    if (first > 65_000) continue;
    const all = await Promise.all([0, 1, 2, 3].map((i) => bindable(first + i)));
    if (all.every(Boolean)) return { first, last: first + 3 };
  }
}

/** An echo upstream on HOST answering with its name; its port. */
async function startEcho(name: string): Promise<number> {
  const echo = await startEchoUpstream(name, { host: HOST });
  upstreams.push(echo);
  return echo.port;
}

/** A Service with an EndpointSlice written by hand, pointing at HOST:port. */
const serviceAt = (ns: string, name: string, port: number, servicePort = 80): string =>
  endpointService(ns, name, HOST, port, { port: servicePort });

/** The operator with per-Gateway addresses, gateway ports from `range`. */
const startAddressesOperator = (name: string): Promise<OperatorProc> =>
  startWorldOperator(w, {
    name,
    env: {
      // The gateway's namespace is not watched: its endpoints are read all the same.
      WATCH_NAMESPACE: `${ONE},${TWO}`,
      SVC_GATEWAY_API_ADDRESSES: 'per-gateway',
      SVC_GATEWAY_API_PORT_RANGE: `${String(range.first)}-${String(range.last)}`,
      SVC_GATEWAY_API_GATEWAY_SERVICE: `${GATEWAY_NS}/svc-gateway`,
    },
  });

/** Gateway `web` of namespace two with HTTP listeners on `ports` (named http, alt, more). */
const webOfTwo = (ports: [string, number][]): string => `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: ${TWO}}
spec:
  gatewayClassName: svc
  listeners:
${ports.map(([name, port]) => `    - {name: ${name}, port: ${String(port)}, protocol: HTTP}\n`).join('')}`;

/** Gateway `web` of `ns` (an HTTP listener on 80, and an HTTPS one on 443 when `tls`), and its route to `backend`. */
const gatewayAndRoute = (
  ns: string,
  backend: string,
  tls: boolean,
): string => `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: ${ns}}
spec:
  gatewayClassName: svc
  listeners:
    - {name: http, port: 80, protocol: HTTP}
${tls ? `    - {name: https, port: 443, protocol: HTTPS, hostname: ${HOST_NAME}, tls: {certificateRefs: [{name: web-tls}]}}\n` : ''}---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: ${ns}}
spec:
  parentRefs: [{name: web}]
  hostnames: [${HOST_NAME}]
  rules: [{matches: [{path: {type: PathPrefix, value: /}}], backendRefs: [{name: ${backend}, port: 80}]}]
`;

interface ServiceView {
  metadata: { ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[] };
  spec: { clusterIP: string; selector?: unknown; ports: { port: number; targetPort: number }[] };
}
interface GatewayView {
  metadata: { uid: string };
  status?: { conditions?: Cond[]; addresses?: { type: string; value: string }[] };
}

async function getJson<T>(kind: string, name: string, ns: string): Promise<T | undefined> {
  const out = await w.cp.kubectl(['get', kind, name, '-n', ns, '-o', 'json'], { allowFailure: true });
  return out.code === 0 ? (JSON.parse(out.stdout) as T) : undefined;
}

/** The Gateway `web` of `ns` once Programmed, and its Service. */
async function programmed(ns: string): Promise<{ gateway: GatewayView; service: ServiceView }> {
  return waitFor(`Gateway ${ns}/web Programmed`, async () => {
    const gateway = await getJson<GatewayView>('gateways.gateway.networking.k8s.io', 'web', ns);
    const c = gateway?.status?.conditions?.find((x) => x.type === 'Programmed');
    if (gateway === undefined || c?.status !== 'True') return undefined;
    const service = await getJson<ServiceView>('service', 'svc-gw-web', ns);
    return service === undefined ? undefined : { gateway, service };
  });
}

/** The gateway port a Service leads listener port `port` to. */
const targetOf = (s: ServiceView, port: number): number => {
  const p = s.spec.ports.find((x) => x.port === port);
  assert.ok(p, `the Service has port ${String(port)}`);
  return p.targetPort;
};

/** Who answers GET / for HOST_NAME on a gateway port (undefined: nothing listens). */
async function answerAt(port: number): Promise<string | undefined> {
  try {
    const r = await httpRequest(`http://127.0.0.1:${String(port)}/`, { headers: { host: HOST_NAME } }, 2_000);
    return r.status === 200 ? readEcho(r.body).upstream : `status ${r.status}`;
  } catch {
    return undefined;
  }
}

before(async () => {
  w = await startGatewayApiSuite({ name: 'gwaddr', namespaces: [ONE, TWO, GATEWAY_NS] });
  const a = await startEcho('a');
  const b = await startEcho('b');
  range = await freeRange();
  const cert = await makeCert(HOST_NAME);
  await applyManifest(
    w.cp,
    [
      serviceAt(ONE, 'svc-a', a),
      serviceAt(TWO, 'svc-b', b),
      // The gateway's own Service: its endpoints (the gateway's pods) are this machine.
      serviceAt(GATEWAY_NS, 'svc-gateway', w.gw.port, 8080),
      tlsSecretManifest(ONE, 'web-tls', cert),
    ].join('---\n'),
  );
  operator = await startAddressesOperator('gwaddr-operator');
  await applyManifest(w.cp, SVC_GATEWAY_CLASS);
});

after(() => stopGatewaySuite(w, operator, ...upstreams));

test('two Gateways with the same listener port, host and path: each its own Service, address and gateway port, each answering with its own backend', async () => {
  await applyManifest(w.cp, gatewayAndRoute(ONE, 'svc-a', true));
  await applyManifest(w.cp, gatewayAndRoute(TWO, 'svc-b', false));
  const one = await programmed(ONE);
  const two = await programmed(TWO);

  for (const [ns, { gateway, service }] of [
    [ONE, one],
    [TWO, two],
  ] as const) {
    // Its address is its own Service's ClusterIP.
    assert.match(service.spec.clusterIP, /^\d+\.\d+\.\d+\.\d+$/);
    assert.deepEqual(gateway.status?.addresses, [{ type: 'IPAddress', value: service.spec.clusterIP }], ns);
    // Owned by the Gateway, no selector (its EndpointSlice is written), its ports in the range.
    const owner = service.metadata.ownerReferences?.find((o) => o.kind === 'Gateway');
    assert.deepEqual(
      owner && { name: owner.name, uid: owner.uid, controller: owner.controller },
      { name: 'web', uid: gateway.metadata.uid, controller: true },
      ns,
    );
    assert.equal(service.spec.selector, undefined);
    for (const p of service.spec.ports) {
      assert.ok(p.targetPort >= range.first && p.targetPort <= range.last, `${ns} port ${String(p.port)}`);
    }
  }
  assert.deepEqual(
    one.service.spec.ports.map((p) => p.port).sort(),
    [443, 80].sort(),
    'one port per listener port',
  );
  assert.deepEqual(
    two.service.spec.ports.map((p) => p.port),
    [80],
  );
  assert.notEqual(one.service.spec.clusterIP, two.service.spec.clusterIP);
  const ports = [targetOf(one.service, 80), targetOf(one.service, 443), targetOf(two.service, 80)];
  assert.equal(new Set(ports).size, 3, `no gateway port shared: ${ports.join(', ')}`);

  // The Service's EndpointSlice: the gateway's endpoints, with the gateway ports.
  const slice = await waitFor('the EndpointSlice of gwaddr-one/svc-gw-web', () =>
    getJson<{ endpoints: { addresses: string[] }[]; ports: { port: number }[] }>(
      'endpointslice',
      'svc-gw-web-ipv4',
      ONE,
    ),
  );
  assert.deepEqual(
    slice.endpoints.map((e) => e.addresses),
    [[HOST]],
  );
  assert.deepEqual(
    slice.ports.map((p) => p.port).sort(),
    [targetOf(one.service, 80), targetOf(one.service, 443)].sort(),
  );

  // Each answers through its own gateway port with its own route's backend.
  await waitFor(
    'gateway one answers with a',
    async () => (await answerAt(targetOf(one.service, 80))) === 'a',
  );
  await waitFor(
    'gateway two answers with b',
    async () => (await answerAt(targetOf(two.service, 80))) === 'b',
  );
  // HTTPS on the HTTPS listener's gateway port, with the listener's certificate.
  const https = await waitFor('gateway one answers over HTTPS', async () => {
    try {
      const r = await tlsGet(targetOf(one.service, 443), '/', { servername: HOST_NAME });
      return r.json?.upstream === 'a' ? r : undefined;
    } catch {
      return undefined;
    }
  });
  assert.equal(https.status, 200);
});

test('the allocation survives an operator restart: the same gateway ports, still served', async () => {
  const before1 = (await programmed(ONE)).service.spec.ports;
  const before2 = (await programmed(TWO)).service.spec.ports;
  await operator.stop();
  operator = await startAddressesOperator('gwaddr-operator-2');
  // A listener added to Gateway two: it gets the one port left, the others stay where they were.
  await applyManifest(
    w.cp,
    webOfTwo([
      ['http', 80],
      ['alt', 8000],
    ]),
  );
  const two = await waitFor('Gateway two with its second port', async () => {
    const s = await getJson<ServiceView>('service', 'svc-gw-web', TWO);
    return s?.spec.ports.length === 2 ? s : undefined;
  });
  assert.equal(targetOf(two, 80), before2.find((p) => p.port === 80)?.targetPort);
  const one = (await programmed(ONE)).service;
  assert.deepEqual(one.spec.ports, before1);
  const used = [...one.spec.ports, ...two.spec.ports].map((p) => p.targetPort);
  assert.equal(new Set(used).size, 4, `every port of the range, each once: ${used.join(', ')}`);
  await programmed(TWO);
  await waitFor(
    'gateway two answers on its new port',
    async () => (await answerAt(targetOf(two, 8000))) === 'b',
  );
  assert.equal(await answerAt(targetOf(one, 80)), 'a');
});

test('a listener port beyond the range: that listener is not Programmed, and says why', async () => {
  await applyManifest(
    w.cp,
    webOfTwo([
      ['http', 80],
      ['alt', 8000],
      ['more', 9000],
    ]),
  );
  const status = await waitFor('Gateway two says its range is full', async () => {
    const g = await getJson<{
      status?: { conditions?: Cond[]; listeners?: { name: string; conditions: Cond[] }[] };
    }>('gateways.gateway.networking.k8s.io', 'web', TWO);
    const p = g?.status?.conditions?.find((c) => c.type === 'Programmed');
    return p?.reason === 'AddressNotAssigned' ? g?.status : undefined;
  });
  const more = status.listeners
    ?.find((l) => l.name === 'more')
    ?.conditions.find((c) => c.type === 'Programmed');
  assert.ok(more);
  assert.equal(more.status, 'False');
  assert.match(more.message ?? '', /no gateway port is left for listener port 9000/);
  const http = status.listeners
    ?.find((l) => l.name === 'http')
    ?.conditions.find((c) => c.type === 'Programmed');
  assert.equal(http?.status, 'False', 'the Gateway is not all served: its listeners say so too');
});

test('deleting a Gateway deletes its Service and frees its gateway ports for the Gateway left without; the other serves on', async () => {
  const one = (await programmed(ONE)).service;
  const freed = one.spec.ports.map((p) => p.targetPort);
  await w.cp.kubectl(['delete', 'gateways.gateway.networking.k8s.io', 'web', '-n', ONE]);
  await waitFor('the Service of Gateway one deleted', async () =>
    (await getJson('service', 'svc-gw-web', ONE)) === undefined ? true : undefined,
  );
  await waitFor('the EndpointSlice of Gateway one deleted', async () =>
    (await getJson('endpointslice', 'svc-gw-web-ipv4', ONE)) === undefined ? true : undefined,
  );
  for (const port of freed) {
    await waitFor(`gateway port ${String(port)} no longer answers for Gateway one`, async () =>
      (await answerAt(port)) !== 'a' ? true : undefined,
    );
  }
  // Gateway two takes a freed port for its listener left without one: Programmed at last.
  await programmed(TWO);
  const two = await getJson<ServiceView>('service', 'svc-gw-web', TWO);
  assert.ok(two);
  assert.deepEqual(two.spec.ports.map((p) => p.port).sort(), [80, 8000, 9000].sort());
  assert.ok(freed.includes(targetOf(two, 9000)), 'a port of the deleted Gateway');
  await waitFor(
    'gateway two answers on the freed port',
    async () => (await answerAt(targetOf(two, 9000))) === 'b',
  );
  assert.equal(await answerAt(targetOf(two, 80)), 'b');
});
