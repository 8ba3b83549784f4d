import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ManagementClient, ServingGateways } from '../clients/management.ts';
import { UNSERVED_RECHECK_MS, servedAddress, servedMessage } from './served.ts';

test('the address an API is served on', () => {
  const cases: { name: string; url: string; api: Parameters<typeof servedAddress>[1]; want: string }[] = [
    {
      name: 'on the gateway port',
      url: 'http://gw.svc:8080',
      api: { proxy: { listen_path: '/a/' } },
      want: 'http://gw.svc:8080/a/',
    },
    {
      name: 'its own listen_port, not the gateway port',
      url: 'http://gw.svc:8080',
      api: { listen_port: 80, protocol: 'http', proxy: { listen_path: '/a' } },
      want: 'http://gw.svc:80/a',
    },
    {
      name: 'https on its port, with its domain',
      url: 'http://gw.svc:8080',
      api: { listen_port: 8443, protocol: 'https', domain: 'shop.example.com', proxy: { listen_path: '/' } },
      want: 'https://shop.example.com:8443/',
    },
    {
      name: 'listen_port 0 is the gateway port',
      url: 'https://gw:9000/',
      api: { listen_port: 0, proxy: { listen_path: '/x' } },
      want: 'https://gw:9000/x',
    },
    {
      name: 'a URL without a port',
      url: 'http://gw',
      api: { proxy: { listen_path: '/x' } },
      want: 'http://gw/x',
    },
    {
      name: 'a tcp API: its port, no path',
      url: 'http://gw.svc:8080',
      api: { listen_port: 7000, protocol: 'tcp', proxy: { listen_path: '' } },
      want: 'tcp://gw.svc:7000',
    },
    {
      name: 'a tls API: its port, no path',
      url: 'http://gw.svc:8080',
      api: { listen_port: 7443, protocol: 'tls', proxy: { listen_path: '' } },
      want: 'tls://gw.svc:7443',
    },
  ];
  for (const c of cases) assert.equal(servedAddress(c.url, c.api), c.want, c.name);
});

test('the status message: the gateway that serves an API (ce); where it is held and which gateways serve it (pro)', async () => {
  const client = (serving?: () => Promise<ServingGateways | undefined>): ManagementClient =>
    ({ url: 'http://dash:3000', ...(serving === undefined ? {} : { servingGateways: serving }) }) as never;
  const gateways = (...hosts: string[]): ServingGateways => ({
    org: 'acme',
    gateways: hosts.map((hostname) => ({ hostname, version: '1.0.0' })),
  });
  const api = { proxy: { listen_path: '/httpbin/' } };
  const cases: {
    name: string;
    client: ManagementClient;
    api?: Parameters<typeof servedMessage>[3];
    want: string;
    requeue?: number;
  }[] = [
    {
      name: 'mode ce: the gateway and the address',
      client: { url: 'http://gw:8080' } as never,
      want: 'API a1 is served by http://gw:8080 at http://gw:8080/httpbin/',
    },
    {
      name: 'mode pro, two gateways connected',
      client: client(() => Promise.resolve(gateways('gw-b', 'gw-a'))),
      want: 'API a1 is held by the dashboard http://dash:3000 in organisation acme; served at /httpbin/ by 2 gateways connected to it: gw-a, gw-b',
    },
    {
      name: 'mode pro, one gateway, a domain and a port of its own',
      client: client(() => Promise.resolve(gateways('gw-a'))),
      api: { domain: 'shop.example.com', listen_port: 8443, proxy: { listen_path: '/httpbin/' } },
      want: 'API a1 is held by the dashboard http://dash:3000 in organisation acme; served at shop.example.com/httpbin/ on port 8443 by 1 gateway connected to it: gw-a',
    },
    {
      name: 'mode pro, many gateways: five named, the rest counted',
      client: client(() => Promise.resolve(gateways('g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7'))),
      want: 'API a1 is held by the dashboard http://dash:3000 in organisation acme; served at /httpbin/ by 7 gateways connected to it: g1, g2, g3, g4, g5 and 2 more',
    },
    {
      name: 'mode pro, no gateway connected: not served yet, looked at again',
      client: client(() => Promise.resolve(gateways())),
      want: 'API a1 is held by the dashboard http://dash:3000 in organisation acme; no gateway of this organisation is connected to the dashboard: it is not served yet (at /httpbin/ once one connects)',
      requeue: UNSERVED_RECHECK_MS,
    },
    {
      name: 'mode pro, the dashboard does not say',
      client: client(() => Promise.resolve(undefined)),
      want: 'API a1 is held by the dashboard http://dash:3000 in organisation conn-org; the gateways that load this organisation serve it at /httpbin/',
    },
    {
      name: 'mode pro, the question fails',
      client: client(() => Promise.reject(new Error('unreachable'))),
      want: 'API a1 is held by the dashboard http://dash:3000 in organisation conn-org; the gateways that load this organisation serve it at /httpbin/',
    },
  ];
  for (const c of cases) {
    const got = await servedMessage('a1', c.client, 'conn-org', c.api ?? api);
    assert.equal(got.message, c.want, c.name);
    assert.equal(got.requeueAfterMs, c.requeue, c.name);
  }
});
