/**
 * `kubectl svc explain` end to end: a real control plane, the operator as a process pushing
 * ApiDefinitions and SecurityPolicies to a real gateway process, and the plugin's executable
 * run as a user runs it, reaching the gateway through the operator's configuration Secret (read
 * with the kubeconfig) or `--gateway URL --secret-env VAR`. A refused request is explained with
 * the refusing middleware named; a key's merged policy is shown with its parts; an explain
 * changes no counter.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { derivedId } from '../../operator/ids.ts';
import type { ExplanationView } from '../../operator/cli/explain-print.ts';
import { httpRequest } from '../harness/processes.ts';
import { admin, applyManifest, startWorld, stopWorld, waitReady, type OperatorWorld } from './helpers.ts';

const PLUGIN = new URL('../../operator/cli/kubectl-svc.ts', import.meta.url).pathname;
const ORG = 'plugin-org';
const KEY = 'plugin-key-1';
const RATE_KEY = 'plugin-key-2';

let w: OperatorWorld;

before(async () => {
  w = await startWorld({
    name: 'plugin',
    namespaces: ['shop'],
    operator: { org: ORG, env: { WATCH_NAMESPACE: 'shop' } },
  });
  // The operator's configuration as the chart keeps it: what the plugin reads by default.
  await w.cp.kubectl([
    'create',
    'secret',
    'generic',
    'svc-operator-conf',
    '-n',
    'svc-operator-system',
    '--from-literal=SVC_MODE=ce',
    `--from-literal=SVC_URL=${w.gw.url}`,
    `--from-literal=SVC_AUTH=${w.gw.secret}`,
    `--from-literal=SVC_ORG=${ORG}`,
  ]);
  await applyManifest(
    w.cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: open, namespace: shop}
spec:
  name: open
  use_keyless: true
  enable_ip_blacklisting: true
  blacklisted_ips: [10.9.9.9]
  proxy: {listen_path: /open/, target_url: "${w.upstream.url}", strip_listen_path: true}
---
apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: orders, namespace: shop}
spec:
  name: orders
  use_keyless: false
  use_standard_auth: true
  proxy: {listen_path: /orders/, target_url: "${w.upstream.url}", strip_listen_path: true}
---
apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: bronze, namespace: shop}
spec:
  name: bronze
  rate: 1000
  per: 60
  quota_max: 3
  quota_renewal_rate: 3600
  access_rights_array:
    - name: orders
---
apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: silver, namespace: shop}
spec:
  name: silver
  rate: 10
  per: 1
  quota_max: 2
  quota_renewal_rate: 3600
  access_rights_array:
    - name: orders
---
apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: two-a-minute, namespace: shop}
spec:
  name: two-a-minute
  rate: 2
  per: 60
  access_rights_array:
    - name: orders
`,
  );
  for (const [kind, name] of [
    ['apidefinition', 'open'],
    ['apidefinition', 'orders'],
    ['securitypolicy', 'bronze'],
    ['securitypolicy', 'silver'],
    ['securitypolicy', 'two-a-minute'],
  ] as const) {
    await waitReady(w.cp, { kind, ns: 'shop', name });
  }
  const key = await admin(w.gw, 'POST', `/svc/keys/${KEY}`, {
    org_id: ORG,
    apply_policies: [derivedId('shop', 'bronze'), derivedId('shop', 'silver')],
  });
  assert.equal(key.status, 200, JSON.stringify(key.body));
  const rateKey = await admin(w.gw, 'POST', `/svc/keys/${RATE_KEY}`, {
    org_id: ORG,
    apply_policies: [derivedId('shop', 'two-a-minute')],
  });
  assert.equal(rateKey.status, 200, JSON.stringify(rateKey.body));
});

after(() => stopWorld(w));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `kubectl-svc ARGS` with the world's kubeconfig, and the gateway secret in PLUGIN_SECRET. */
function plugin(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      PLUGIN,
      args,
      { env: { PATH: process.env.PATH ?? '', KUBECONFIG: w.cp.kubeconfig, PLUGIN_SECRET: w.gw.secret } },
      (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
      },
    );
  });
}

/** `explain ... -o json` through the operator's Secret; the explanation. */
async function explainJson(args: string[]): Promise<ExplanationView> {
  const r = await plugin(['explain', ...args, '-o', 'json']);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as ExplanationView;
}

test('a client on the block list: 403, the refusing middleware is ip-block-list (table and JSON)', async () => {
  const x = await explainJson(['GET', '/open/anything', '--client-ip', '10.9.9.9']);
  assert.equal(x.matched?.api_id, derivedId('shop', 'open'));
  assert.equal(x.answer.status, 403);
  assert.deepEqual(JSON.parse(x.answer.body), { error: 'access from this IP has been disallowed' });
  const refusing = x.steps.filter((s) => s.decision !== 'passed');
  assert.deepEqual(
    refusing.map((s) => [s.middleware, s.status]),
    [['ip-block-list', 403]],
  );
  // Another client passes, and the request would be proxied (it is not).
  const ok = await explainJson(['GET', '/open/anything', '--client-ip', '10.1.1.1']);
  assert.equal(ok.answer.status, 200);
  assert.match(ok.answer.proxied_to ?? '', /^GET http:\/\/127\.0\.0\.1:\d+\/anything$/);

  const table = await plugin([
    'explain',
    'GET',
    '/open/anything',
    '--client-ip',
    '10.9.9.9',
    '--gateway',
    w.gw.url,
    '--secret-env',
    'PLUGIN_SECRET',
  ]);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^API: +open \(/m);
  assert.match(
    table.stdout,
    /api-wide checks +ip-block-list +refused 403 access from this IP has been disallowed/,
  );
  assert.match(table.stdout, /^By: +ip-block-list \(api-wide checks\)$/m);
});

test('no key: 401 from auth-token; the steps after it do not run', async () => {
  const x = await explainJson(['GET', '/orders/1']);
  assert.equal(x.answer.status, 401);
  const last = x.steps.at(-1);
  assert.equal(last?.middleware, 'auth-token');
  assert.equal(last.decision, 'refused');
  assert.equal(last.message, 'Authorization field missing');
});

test('a key with two policies: the merged values with their parts, the quota read not counted; a real request agrees', async () => {
  const first = await explainJson(['GET', '/orders/1', '--key', KEY]);
  const again = await explainJson(['GET', '/orders/1', '--key', KEY]);
  assert.equal(first.answer.status, 200);
  const s = first.session;
  assert.ok(s);
  assert.deepEqual(s.apply_policies, [derivedId('shop', 'bronze'), derivedId('shop', 'silver')]);
  assert.deepEqual(
    s.policies.map((p) => [p.id, p.rate, p.per, p.quota_max]),
    [
      [derivedId('shop', 'bronze'), 1000, 60, 3],
      [derivedId('shop', 'silver'), 10, 1, 2],
    ],
  );
  // Highest quota wins; the rate with the shortest interval per request wins (1000 a minute, one
  // per 60 ms, over 10 a second, one per 100 ms).
  assert.equal(s.merged.quota_max, 3);
  assert.deepEqual([s.merged.rate, s.merged.per], [1000, 60]);
  const quotaStep = (x: ExplanationView) => x.steps.find((st) => st.middleware === 'quota');
  assert.equal(quotaStep(first)?.details.remaining, 2);
  assert.equal(quotaStep(again)?.details.remaining, 2, 'the first explain counted nothing');
  const auth = first.steps.find((st) => st.middleware === 'auth-token');
  assert.deepEqual(auth?.details.policies, s.apply_policies);

  const table = await plugin(['explain', 'GET', '/orders/1', '--key', KEY]);
  assert.match(table.stdout, /POLICY +RATE +PER +QUOTA_MAX/);
  assert.match(table.stdout, /merged +1000 +60 +3 /);

  // A real request gets the remaining count the explain announced.
  const real = await httpRequest(`${w.gw.url}/orders/1`, { headers: { authorization: KEY } });
  assert.equal(real.status, 200);
  assert.equal(real.headers['x-ratelimit-remaining'], '2');
});

test('a spent quota: 403 from quota with remaining 0, and explaining it again spends nothing', async () => {
  for (;;) {
    const r = await httpRequest(`${w.gw.url}/orders/1`, { headers: { authorization: KEY } });
    if (r.headers['x-ratelimit-remaining'] === '0') break;
    assert.equal(r.status, 200);
  }
  const x = await explainJson(['GET', '/orders/1', '--key', KEY]);
  assert.equal(x.answer.status, 403);
  assert.deepEqual(JSON.parse(x.answer.body), { error: 'Quota exceeded' });
  const q = x.steps.at(-1);
  assert.equal(q?.middleware, 'quota');
  assert.equal(q.details.remaining, 0);
  // The counter stands where the real requests left it: the quota used is still exactly 3.
  const again = await explainJson(['GET', '/orders/1', '--key', KEY]);
  const reads = again.steps.flatMap((st) => (st.details.counters ?? []) as { kind: string; used: number }[]);
  assert.deepEqual(
    reads.filter((r) => r.kind === 'quota').map((r) => r.used),
    [3],
  );
});

test('a rate limit: explains read its window without counting; once spent, 429 from rate-limit with remaining 0', async () => {
  const rateOf = (x: ExplanationView) =>
    x.steps
      .flatMap((st) => (st.details.counters ?? []) as { kind: string; limit: number; remaining: number }[])
      .filter((c) => c.kind === 'rate');
  for (let i = 0; i < 3; i++) {
    const x = await explainJson(['GET', '/orders/1', '--key', RATE_KEY]);
    assert.equal(x.answer.status, 200);
    assert.deepEqual(
      rateOf(x).map((c) => [c.limit, c.remaining]),
      [[2, 1]],
    );
  }
  // Had the explains counted, the window would be spent: both real requests pass.
  for (let i = 0; i < 2; i++) {
    const r = await httpRequest(`${w.gw.url}/orders/1`, { headers: { authorization: RATE_KEY } });
    assert.equal(r.status, 200);
  }
  const x = await explainJson(['GET', '/orders/1', '--key', RATE_KEY]);
  assert.equal(x.answer.status, 429);
  assert.deepEqual(JSON.parse(x.answer.body), { error: 'Rate Limit Exceeded' });
  const last = x.steps.at(-1);
  assert.equal(last?.middleware, 'rate-limit');
  assert.deepEqual(
    rateOf(x).map((c) => c.remaining),
    [0],
  );
  const table = await plugin(['explain', 'GET', '/orders/1', '--key', RATE_KEY]);
  assert.match(
    table.stdout,
    /limits +rate-limit +refused 429 Rate Limit Exceeded +rate rl:\S+: 2 per 60s, remaining 0/,
  );
});

test('a configuration Secret that does not exist is named', async () => {
  const r = await plugin(['explain', 'GET', '/orders/1', '--operator-secret', 'no-such-secret']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /Secret svc-operator-system\/no-such-secret not found/);
});

test('status: the resources with their IDs, Ready and gateway, as the kubeconfig lets the user list them', async () => {
  const r = await plugin(['status', '-n', 'shop']);
  assert.equal(r.code, 0, r.stderr);
  const gw = w.gw.url.replace(/[.]/g, '\\.');
  assert.match(
    r.stdout,
    new RegExp(`^ApiDefinition +shop +orders +${derivedId('shop', 'orders')} +True +\\S+ +${gw} +1/1$`, 'm'),
  );
  assert.match(
    r.stdout,
    new RegExp(`^SecurityPolicy +shop +bronze +${derivedId('shop', 'bronze')} +True +\\S+ +${gw} +1/1$`, 'm'),
  );
  const json = await plugin(['status', '-A', '-o', 'json']);
  const { items } = JSON.parse(json.stdout) as {
    items: { kind: string; name: string; gateways: { name: string; current: boolean }[] }[];
  };
  assert.equal(items.filter((i) => i.kind === 'SecurityPolicy').length, 3);
  // The one gateway serves the current revision of the API and applies the policy's.
  const bronze = items.find((i) => i.kind === 'SecurityPolicy' && i.name === 'bronze');
  assert.deepEqual(
    bronze?.gateways.map((g) => g.current),
    [true],
  );
});

test('/svc/explain is a management call: without the secret, 403', async () => {
  const r = await httpRequest(`${w.gw.url}/svc/explain`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ method: 'GET', url: '/open/' }),
  });
  assert.equal(r.status, 403);
});

test('diff: in sync after the push; a policy changed in the gateway shows as drifted, field by field', async () => {
  const clean = await plugin(['diff', '-n', 'shop', '--org', ORG]);
  assert.equal(clean.code, 0, clean.stdout + clean.stderr);
  assert.match(
    clean.stdout,
    new RegExp(`^SecurityPolicy/bronze \\(${derivedId('shop', 'bronze')}\\): in sync$`, 'm'),
  );
  assert.match(clean.stdout, /^ApiDefinition\/orders \(\S+\): in sync$/m);
  assert.doesNotMatch(clean.stdout, /->/, 'the translation matches the gateway copy field by field');
  const id = derivedId('shop', 'bronze');
  const held = await admin(w.gw, 'GET', `/svc/policies/${id}`);
  const changed = await admin(w.gw, 'PUT', `/svc/policies/${id}`, { ...(held.body as object), rate: 5 });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  const drift = await plugin(['diff', 'SecurityPolicy/bronze', '-n', 'shop', '--org', ORG]);
  assert.equal(drift.code, 1);
  assert.equal(drift.stdout, `SecurityPolicy/bronze (${id}): drifted\n  rate: 1000 -> 5\n`);
});
