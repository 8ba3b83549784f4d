/**
 * The developer portal's kinds in mode ce, end to end: a real control plane with the real
 * webhooks, a gateway and the operator as processes. The reference's 08-portal sample is
 * admitted and its API and policy served; its portal objects get Ready=False,
 * NotSupportedInModeCe, said once however often they are reconciled. DCR and JWT products are
 * refused by name; a product a catalogue lists is not deleted.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { httpRequest, waitFor, type OperatorProc } from '../harness/processes.ts';
import { startLocalWebhooks } from '../webhooks/helpers.ts';
import {
  applyManifest,
  eventsOf,
  readyOf,
  startWorld,
  startWorldOperator,
  stopWorld,
  waitForStatus,
  waitReady,
  type OperatorWorld,
} from './helpers.ts';
import { dcrSample, portalSample } from './portal-samples.ts';

const NS = 'portal';
let w: OperatorWorld;
let operator: OperatorProc;
/** What was started, for `after` (before() may fail half-way). */
const started: { stop: () => Promise<void> }[] = [];

before(async () => {
  w = await startWorld({ name: 'portal', namespaces: [NS], secrets: ['e2e-portal-gw', 'e2e-portal-gw-2'] });
  started.push({ stop: () => stopWorld(w) });
  const webhooks = await startLocalWebhooks(w.cp, w.dir, 'portal-webhooks', { operatorNamespaces: NS });
  started.push(webhooks);
  operator = await startWorldOperator(w, {
    name: 'portal-operator',
    env: { WATCH_NAMESPACE: NS, SVC_RESYNC_PERIOD: '1s' },
  });
  started.push(operator);
});

after(async () => {
  for (const p of started.reverse()) await p.stop();
});

/** Reconciles so far per controller (`svc_reconcile_total`, success and error). */
async function reconciles(): Promise<Map<string, number>> {
  const text = (await httpRequest(`${operator.opsUrl}/metrics`)).body;
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^svc_reconcile_total\{controller="([^"]+)",result="[^"]+"\} (\d+)$/gm)) {
    out.set(m[1] ?? '', (out.get(m[1] ?? '') ?? 0) + Number(m[2]));
  }
  return out;
}

const PORTAL_OBJECTS = [
  { kind: 'apidescription', name: 'sample-portal-api', Kind: 'APIDescription' },
  { kind: 'portalconfig', name: 'sample-portal-config', Kind: 'PortalConfig' },
  { kind: 'portalapicatalogue', name: 'sample-portal-api', Kind: 'PortalAPICatalogue' },
] as const;

test("ce: the reference's 08-portal sample is admitted; the portal kinds say NotSupportedInModeCe once", async () => {
  await applyManifest(w.cp, portalSample(NS, w.upstream.url));
  await waitReady(w.cp, { kind: 'apidefinition', ns: NS, name: 'httpbin' });
  await waitReady(w.cp, { kind: 'securitypolicy', ns: NS, name: 'protect-api' });
  for (const o of PORTAL_OBJECTS) {
    const st = await waitForStatus(
      w.cp,
      { kind: o.kind, ns: NS, name: o.name },
      'NotSupportedInModeCe',
      (s) => readyOf(s)?.reason === 'NotSupportedInModeCe',
    );
    assert.equal(readyOf(st)?.status, 'False');
    assert.match(readyOf(st)?.message ?? '', /the developer portal is the dashboard's \(mode pro\)/);
  }
  // Resyncs every second: three more reconciles of each later, still one event each and no log
  // line about it.
  const before = operator.log().length;
  const start = await reconciles();
  await waitFor('three more reconciles of each portal controller', async () => {
    const now = await reconciles();
    return ['apidescription', 'portalconfig', 'portalapicatalogue'].every(
      (c) => (now.get(c) ?? 0) >= (start.get(c) ?? 0) + 3,
    );
  });
  for (const o of PORTAL_OBJECTS) {
    const reasons = await eventsOf(
      w.cp,
      NS,
      `involvedObject.kind=${o.Kind},involvedObject.name=${o.name},reason=NotSupportedInModeCe`,
      '{.items[*].count}',
    );
    assert.equal(reasons.trim(), '1', `${o.Kind} ${o.name}: one event, counted once`);
  }
  assert.doesNotMatch(operator.log().slice(before), /NotSupportedInModeCe|developer portal/);
  // kubectl's category and printer columns.
  const all = await w.cp.kubectl(['get', 'svc-all', '-n', NS, '-o', 'name']);
  for (const o of PORTAL_OBJECTS) assert.match(all.stdout, new RegExp(`${o.kind}.svc.svc.io/${o.name}`));
  const cols = await w.cp.kubectl(['get', 'apidescription', 'sample-portal-api', '-n', NS]);
  assert.match(cols.stdout, /NAME\s+NAME\s+AUTH\s+POLICY\s+READY\s+AGE/);
  assert.match(cols.stdout, /sample-portal-api\s+sample portal config\s+keyless\s+protect-api\s+False/);
});

test("ce: the reference's dcr.yaml portal objects are refused by name", async () => {
  const r = await w.cp.kubectl(['apply', '-f', '-'], { input: dcrSample(NS), allowFailure: true });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /spec\.auth_type: Unsupported value: "jwt": the portal issues keys from the policy/);
  assert.match(
    r.stderr,
    /spec\.enable_dcr: not supported by svc yet: dynamic client registration registers an OAuth client at an OpenID provider/,
  );
  const got = await w.cp.kubectl(['get', 'portalconfig', 'sample-dcr-config', '-n', NS], {
    allowFailure: true,
  });
  assert.match(got.stderr, /NotFound/);
});

test('ce: an APIDescription a catalogue lists is not deleted; once unlisted it goes', async () => {
  const r = await w.cp.kubectl(['delete', 'apidescription', 'sample-portal-api', '-n', NS, '--wait=false'], {
    allowFailure: true,
  });
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /still used by PortalAPICatalogue portal\/sample-portal-api/);
  await w.cp.kubectl(['delete', 'portalapicatalogue', 'sample-portal-api', '-n', NS, '--timeout=30s']);
  await w.cp.kubectl(['delete', 'apidescription', 'sample-portal-api', '-n', NS, '--timeout=30s']);
  await w.cp.kubectl(['delete', 'portalconfig', 'sample-portal-config', '-n', NS, '--timeout=30s']);
});
