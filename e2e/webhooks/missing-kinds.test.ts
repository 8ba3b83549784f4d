/**
 * The webhook server of an image newer than the cluster's CRDs (issue 28: the chart of an
 * earlier release, whose CRDs are the first five kinds only, run with today's image): it must be
 * ready and answer reviews, taking a kind the API server does not serve as holding no objects,
 * and see that kind's objects once its CRD is installed. A real API server calls the real webhook
 * server through the chart's webhook configurations.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startControlPlane } from '../harness/control-plane.ts';
import type { ControlPlane } from '../harness/control-plane.ts';
import { waitFor } from '../harness/processes.ts';
import { apiDefinition, securityPolicy } from '../../webhooks/testing.ts';
import { admitted, apply, httpsGet, refusedWith, root, startLocalWebhooks } from './helpers.ts';
import type { WebhookServer } from './helpers.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const CRDS = path.join(root, 'charts', 'svc-operator', 'crds');
/** The kinds of the chart as of 56a22f5 (before SubGraph, SuperGraph, ApiKey and the portal kinds). */
const OLD_KINDS = [
  'apidefinitions',
  'operatorcontexts',
  'securitypolicies',
  'svcoasapidefinitions',
  'svcstreamsapidefinitions',
];

let cp: ControlPlane;
let server: WebhookServer & { caPem: string };

before(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-webhooks-missing-kinds-'));
  const crdDir = path.join(dir, 'crds');
  await mkdir(crdDir);
  for (const k of OLD_KINDS)
    await copyFile(path.join(CRDS, `svc.svc.io_${k}.yaml`), path.join(crdDir, `${k}.yaml`));
  cp = await startControlPlane({ crdDir });
  // Resolves once /readyz answers 200 and the API server calls the server (60 s at most).
  server = await startLocalWebhooks(cp, dir);
});

after(async () => {
  await stopAll(server, cp);
});

test('ready with kinds whose CRDs are not installed, saying which', async () => {
  assert.equal((await httpsGet(`https://127.0.0.1:${server.port}/readyz`, server.caPem)).status, 200);
  for (const kind of ['SubGraph', 'SuperGraph', 'APIDescription', 'PortalAPICatalogue']) {
    assert.match(
      server.proc.log(),
      new RegExp(`${kind} not served by the API server \\(CRD not installed\\): waiting for it`),
    );
  }
});

test('reviews are answered: the checks that read a missing kind find none of it', async () => {
  admitted(
    await apply(cp, [
      apiDefinition('orders', {
        proxy: { listen_path: '/orders/', target_url: 'http://orders.default.svc:8080' },
      }),
      securityPolicy('standard', { access_rights_array: [{ name: 'orders' }] }),
    ]),
  );
  refusedWith(
    await cp.kubectl(['delete', 'apidefinition', 'orders'], { allowFailure: true }),
    'ApiDefinition default/orders is still used by SecurityPolicy default/standard',
  );
  // A policy's dependents include ApiKeys and APIDescriptions: not served, so there are none.
  admitted(await cp.kubectl(['delete', 'securitypolicy', 'standard'], { allowFailure: true }));
  admitted(await cp.kubectl(['delete', 'apidefinition', 'orders'], { allowFailure: true }));
});

test('a CRD installed later: its objects are checked as usual', async () => {
  for (const k of ['subgraphs', 'supergraphs']) {
    await cp.kubectl(['apply', '-f', path.join(CRDS, `svc.svc.io_${k}.yaml`)]);
    await cp.kubectl(['wait', '--for=condition=Established', `crd/${k}.svc.svc.io`, '--timeout=60s']);
  }
  const graph = (kind: string, name: string, spec: Record<string, unknown>): Record<string, unknown> => ({
    apiVersion: 'svc.svc.io/v1alpha1',
    kind,
    metadata: { name, namespace: 'default' },
    spec,
  });
  // The API server serves the new kinds a moment after Established; the webhook's checks apply.
  await waitFor(
    'a SubGraph with a broken SDL to be refused by the webhook',
    async () => {
      const r = await apply(
        cp,
        graph('SubGraph', 'broken', {
          sdl: 'type Query { u: User }\ntype User @key(fields: "uid") { id: ID! }',
        }),
      );
      return r.code !== 0 && r.stderr.includes('@key names uid, which is not a field of User');
    },
    60_000,
    1_000,
  );
  admitted(
    await apply(cp, [
      graph('SubGraph', 'users', {
        sdl: 'type Query { users: [User!]! }\ntype User @key(fields: "id") { id: ID! }',
      }),
      graph('SuperGraph', 'social', { subgraph_refs: ['users'] }),
    ]),
  );
  // The informer lists the kind once it is served (its retry backs off to 30 s at most).
  await waitFor(
    'the webhook to list SuperGraphs',
    () => server.proc.log().includes('SuperGraph listed now'),
    90_000,
    1_000,
  );
  refusedWith(
    await cp.kubectl(['delete', 'subgraph', 'users', '--wait=false'], { allowFailure: true }),
    'SubGraph default/users is still used by SuperGraph default/social',
  );
  admitted(await cp.kubectl(['delete', 'supergraph', 'social', '--wait=false'], { allowFailure: true }));
  admitted(await cp.kubectl(['delete', 'subgraph', 'users', '--wait=false'], { allowFailure: true }));
});
