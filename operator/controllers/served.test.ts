import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import type { SvcObject } from '../../lib/k8s/objects.ts';
import type { AppliedBy, ManagementClient, ServingGateways } from '../clients/management.ts';
import { Convergence } from './convergence.ts';
import {
  PENDING_RECHECK_MS,
  UNSERVED_RECHECK_MS,
  reportApiSynced,
  servedAddress,
  servedMessage,
} from './served.ts';
import { NOW, fakeEvents, fakeObjects, readyOf } from './testing.ts';

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

test('Ready and Programmed only when every gateway of the store serves the revision pushed (ce)', async () => {
  const REV = 'a'.repeat(64);
  const OLD = 'b'.repeat(64);
  const at = (ms: number): string => new Date(Date.parse('2025-06-01T12:00:00.000Z') + ms).toISOString();
  type Answer = AppliedBy[] | undefined;
  const cases: {
    name: string;
    /** What `GET /svc/nodes/apis/{id}` answers, call after call (the last one repeats). */
    answers: Answer[];
    before?: { name: string; revision?: string }[];
    action?: 'Updated';
    ready: 'True' | 'False';
    reason: string;
    message: RegExp;
    programmed?: 'True' | 'False';
    gateways?: string[];
    events?: RegExp[];
    requeue?: number;
    converged?: number;
  }[] = [
    {
      name: 'both serve it',
      answers: [
        [
          { id: '2', name: 'gw-b:8080', revision: REV, appliedAt: at(30) },
          { id: '1', name: 'gw-a:8080', revision: REV, appliedAt: at(10) },
        ],
      ],
      ready: 'True',
      reason: 'Synced',
      message:
        /^API a1 is served by http:\/\/gw-a:8080 .*; revision a{12} served by all 2 gateways: gw-a:8080, gw-b:8080$/,
      programmed: 'True',
      gateways: [`gw-a:8080 ${REV}`, `gw-b:8080 ${REV}`],
    },
    {
      name: 'one still serves the revision before, another none: Pending naming both',
      answers: [
        [
          { id: '1', name: 'gw-a:8080', revision: REV, appliedAt: at(10) },
          { id: '2', name: 'gw-b:8080', revision: OLD, appliedAt: at(-5000) },
          { id: '3', name: 'gw-c:8080' },
        ],
      ],
      ready: 'False',
      reason: 'Pending',
      message: /waiting for 2 of 3 gateways to serve revision a{12}: gw-b:8080, gw-c:8080$/,
      programmed: 'False',
      gateways: [`gw-a:8080 ${REV}`, `gw-b:8080 ${OLD}`, 'gw-c:8080 -'],
      requeue: PENDING_RECHECK_MS,
    },
    {
      name: 'a gateway listed before and gone from the registry: an event, Ready on the other',
      answers: [[{ id: '1', name: 'gw-a:8080', revision: REV, appliedAt: at(10) }]],
      before: [
        { name: 'gw-a:8080', revision: OLD },
        { name: 'gw-b:8080', revision: OLD },
      ],
      ready: 'True',
      reason: 'Synced',
      message: /revision a{12} served by its one gateway: gw-a:8080$/,
      programmed: 'True',
      gateways: [`gw-a:8080 ${REV}`],
      events: [
        /^Warning GatewayDropped: gateway gw-b:8080 left the registry .* API a1 no longer waits for it$/,
      ],
    },
    {
      name: 'just pushed: waits for the other gateway to reload, then Ready; the convergence is observed',
      action: 'Updated',
      answers: [
        [
          { id: '1', name: 'gw-a:8080', revision: REV, appliedAt: at(40) },
          { id: '2', name: 'gw-b:8080', revision: OLD, appliedAt: at(-5000) },
        ],
        [
          { id: '1', name: 'gw-a:8080', revision: REV, appliedAt: at(40) },
          { id: '2', name: 'gw-b:8080', revision: REV, appliedAt: at(75) },
        ],
      ],
      ready: 'True',
      reason: 'Synced',
      message: /served by all 2 gateways/,
      programmed: 'True',
      gateways: [`gw-a:8080 ${REV}`, `gw-b:8080 ${REV}`],
      events: [/^Normal Updated: API a1 updated in http:\/\/gw-a:8080$/],
      converged: 0.075,
    },
    {
      name: 'a gateway that does not report: Ready as before, no Programmed, no gateways',
      answers: [undefined],
      ready: 'True',
      reason: 'Synced',
      message: /^API a1 is served by http:\/\/gw-a:8080 at http:\/\/gw-a:8080\/a\/$/,
    },
  ];
  for (const c of cases) {
    let calls = 0;
    const client = {
      url: 'http://gw-a:8080',
      appliedBy: () => Promise.resolve(c.answers[Math.min(calls++, c.answers.length - 1)]),
    } as unknown as ManagementClient;
    const objects = fakeObjects<SvcObject<unknown, Record<string, unknown>>>();
    const events = fakeEvents();
    const registry = new Registry();
    const convergence = new Convergence(registry);
    const obj: SvcObject<unknown, Record<string, unknown>> = {
      metadata: { name: 'a', namespace: 'ns', uid: 'u1', generation: 2 },
      spec: {},
      status: c.before === undefined ? {} : { gateways: c.before },
    };
    const result = await reportApiSynced(
      obj,
      { latestSvcSpecHash: REV },
      {
        apiId: 'a1',
        client,
        org: 'o',
        api: { proxy: { listen_path: '/a/' } },
        action: c.action,
        since: NOW,
      },
      { objects, events, now: () => NOW, convergence },
    );
    const status = objects.statuses.at(-1) as
      { gateways?: { name: string; revision?: string }[] } | undefined;
    assert.ok(status, c.name);
    const ready = readyOf(status);
    assert.ok(ready, c.name);
    assert.equal(ready.status, c.ready, `${c.name}: ${ready.message}`);
    assert.equal(ready.reason, c.reason, c.name);
    assert.match(ready.message, c.message, c.name);
    const programmed = (status as { conditions?: { type: string; status: string }[] }).conditions?.find(
      (x) => x.type === 'Programmed',
    );
    assert.equal(programmed?.status, c.programmed, c.name);
    assert.deepEqual(
      status.gateways?.map((g) => `${g.name} ${g.revision ?? '-'}`),
      c.gateways,
      c.name,
    );
    assert.equal(events.lines.length, c.events?.length ?? 0, `${c.name}: ${events.lines.join('\n')}`);
    c.events?.forEach((e, i) => {
      assert.match(events.lines[i] ?? '', e, c.name);
    });
    assert.equal(result.requeueAfterMs, c.requeue, c.name);
    const text = await registry.metrics();
    const sum = /^svc_config_convergence_seconds_sum\{kind="ApiDefinition"\} (\S+)$/m.exec(text);
    assert.equal(sum === null ? undefined : Number(sum[1]), c.converged, c.name);
  }
});

test('the gateways cannot be asked which of them serve the API: not Ready, GatewayUnavailable, retried', async () => {
  const REV = 'a'.repeat(64);
  const client = {
    url: 'http://gw-a:8080',
    appliedBy: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.1:8080')),
  } as unknown as ManagementClient;
  const objects = fakeObjects<SvcObject<unknown, Record<string, unknown>>>();
  const events = fakeEvents();
  const obj: SvcObject<unknown, Record<string, unknown>> = {
    metadata: { name: 'a', namespace: 'ns', uid: 'u1', generation: 2 },
    spec: {},
    status: {},
  };
  await assert.rejects(
    reportApiSynced(
      obj,
      { latestSvcSpecHash: REV },
      {
        apiId: 'a1',
        client,
        org: 'o',
        api: { proxy: { listen_path: '/a/' } },
        action: 'Updated',
        since: NOW,
      },
      { objects, events, now: () => NOW },
    ),
    /ECONNREFUSED/,
  );
  const ready = readyOf(objects.statuses.at(-1) ?? {});
  assert.ok(ready);
  assert.equal(ready.status, 'False');
  assert.equal(ready.reason, 'GatewayUnavailable');
  assert.match(
    ready.message,
    /^API a1 was written to http:\/\/gw-a:8080, but which gateways serve it cannot be read: connect ECONNREFUSED/,
  );
  assert.match(events.lines.at(-1) ?? '', /^Warning GatewayUnavailable: /);
});
