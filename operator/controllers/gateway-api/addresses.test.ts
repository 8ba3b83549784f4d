import { test } from 'node:test';
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import {
  addressService,
  addressServiceName,
  addressSlices,
  allocatePorts,
  owningGateway,
  recordedPorts,
  serviceAddresses,
} from './addresses.ts';
import type { GatewayObject } from './types.ts';

const range = { first: 20000, last: 20003 };
const self = { gateway: 'b/web', created: '2026-01-02T00:00:00Z' };
const older = (ports: number[]) => ({
  gateway: 'a/web',
  created: '2026-01-01T00:00:00Z',
  ports: new Set(ports),
});
const younger = (ports: number[]) => ({
  gateway: 'c/web',
  created: '2026-01-03T00:00:00Z',
  ports: new Set(ports),
});

test('allocation: each listener port gets the lowest port no other Gateway holds', () => {
  const got = allocatePorts([443, 80, 80], new Map(), self, [older([20000]), younger([20002])], range);
  assert.deepEqual(
    [...got.ports],
    [
      [80, 20001],
      [443, 20003],
    ],
  );
  assert.deepEqual(got.full, []);
});

test('allocation: the ports a Service records are kept (stable across restarts)', () => {
  const got = allocatePorts(
    [80, 443],
    new Map([
      [80, 20003],
      [443, 20001],
    ]),
    self,
    [older([20000])],
    range,
  );
  assert.deepEqual(
    [...got.ports],
    [
      [80, 20003],
      [443, 20001],
    ],
  );
});

test('allocation: a port an older Gateway records too moves; a younger one keeps moving its own', () => {
  const got = allocatePorts([80], new Map([[80, 20000]]), self, [older([20000])], range);
  assert.deepEqual([...got.ports], [[80, 20001]]);
  const kept = allocatePorts([80], new Map([[80, 20002]]), self, [younger([20002])], range);
  assert.deepEqual([...kept.ports], [[80, 20002]], 'the older keeps a contested port');
});

test('allocation: a recorded port outside the range moves into it; a full range leaves ports without', () => {
  const moved = allocatePorts([80], new Map([[80, 9000]]), self, [], range);
  assert.deepEqual([...moved.ports], [[80, 20000]]);
  const got = allocatePorts([80, 81, 82], new Map(), self, [older([20000, 20001])], range);
  assert.deepEqual(
    [...got.ports],
    [
      [80, 20002],
      [81, 20003],
    ],
  );
  assert.deepEqual(got.full, [82]);
});

const gw: GatewayObject = {
  metadata: { name: 'web', namespace: 'shop', uid: 'uid-1' },
  spec: { gatewayClassName: 'svc', listeners: [] },
};

test("a Gateway's Service: named after it, owned by it, no selector, its ports recorded as targetPorts", () => {
  const svc = addressService(
    gw,
    new Map([
      [443, 20001],
      [80, 20000],
    ]),
  );
  const meta = svc.metadata;
  assert.ok(meta);
  assert.equal(meta.name, 'svc-gw-web');
  assert.equal(meta.namespace, 'shop');
  assert.equal(owningGateway(svc), 'shop/web');
  assert.equal(meta.ownerReferences?.[0]?.uid, 'uid-1');
  assert.equal(svc.spec?.selector, undefined);
  assert.deepEqual(svc.spec?.ports, [
    { name: 'port-80', protocol: 'TCP', port: 80, targetPort: 20000 },
    { name: 'port-443', protocol: 'TCP', port: 443, targetPort: 20001 },
  ]);
  assert.deepEqual(
    [...recordedPorts(svc)],
    [
      [80, 20000],
      [443, 20001],
    ],
  );
  assert.match(
    addressServiceName('a.b'),
    /^svc-gw-[0-9a-f]{16}$/,
    'a name with dots is no DNS label: hashed',
  );
  assert.match(addressServiceName('x'.repeat(60)), /^svc-gw-[0-9a-f]{16}$/, 'too long: hashed');
});

test("a Gateway's EndpointSlices: the gateway's endpoints, each once, with the Gateway's ports", () => {
  const source = (addresses: string[], ready: boolean): k8s.V1EndpointSlice => ({
    addressType: 'IPv4',
    endpoints: [{ addresses, conditions: { ready }, nodeName: 'n1' }],
    ports: [{ name: 'http', port: 8080 }],
  });
  const got = addressSlices(gw, new Map([[80, 20000]]), [
    source(['10.0.0.2'], true),
    source(['10.0.0.1'], false),
    source(['10.0.0.2'], true),
  ]);
  assert.equal(got.length, 1);
  const [slice] = got;
  assert.ok(slice?.metadata);
  assert.equal(slice.metadata.name, 'svc-gw-web-ipv4');
  assert.equal(slice.metadata.labels?.['kubernetes.io/service-name'], 'svc-gw-web');
  assert.deepEqual(slice.ports, [{ name: 'port-80', protocol: 'TCP', port: 20000 }]);
  assert.deepEqual(
    (slice.endpoints ?? []).map((e) => [e.addresses, e.conditions?.ready, e.nodeName]),
    [
      [['10.0.0.1'], false, 'n1'],
      [['10.0.0.2'], true, 'n1'],
    ],
  );
  assert.deepEqual(addressSlices(gw, new Map([[80, 20000]]), []), [], 'no gateway endpoints known: none');
});

test("status.addresses: the Service's ClusterIPs, none before they are assigned", () => {
  assert.deepEqual(serviceAddresses(undefined), []);
  assert.deepEqual(serviceAddresses({ spec: { clusterIP: '' } }), []);
  assert.deepEqual(
    serviceAddresses({ spec: { clusterIP: '10.96.0.5', clusterIPs: ['10.96.0.5', 'fd00::5'] } }),
    [
      { type: 'IPAddress', value: '10.96.0.5' },
      { type: 'IPAddress', value: 'fd00::5' },
    ],
  );
});
