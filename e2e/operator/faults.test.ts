/**
 * Faults under a burst of changes (issue 13): the gateway down, the API server and etcd
 * restarted, the operator killed, the leader killed under two replicas, the gateway's Redis
 * restarted empty. Real processes throughout: etcd and kube-apiserver from the harness, gateway
 * and operator processes, an echo upstream, redis-server. Each case has its own namespace, gateway,
 * operator(s) and lease namespace, so the cases share only the control plane; each asserts the
 * final state of every object of its burst: `Ready=True` for the current generation, exactly one
 * API (and policy) per object in the gateway, created once, and served.
 */
import { after, afterEach, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { derivedId } from '../../operator/ids.ts';
import { startRedis, startRedisOn, type TestRedis } from '../../gateway/testing/redis-server.ts';
import type { ControlPlane } from '../harness/control-plane.ts';
import {
  httpRequest,
  startEchoUpstream,
  startGateway,
  startOperator,
  waitFor,
  type GatewayProc,
  type OperatorProc,
} from '../harness/processes.ts';
import { admin, applyManifest, readyOf, type Status, startCluster } from './helpers.ts';

/** Objects per burst; the gateway-down case uses the 500. */
const BURST_GATEWAY_DOWN = 500;
const BURST = 200;
/** How long the gateway stays down (the issue's ~20 s; the operator's per-key backoff is 0.5 s doubling). */
const GATEWAY_DOWN_MS = 20_000;
/** The operator's lease duration and retry period (lib/k8s/leader.ts defaults). */
const LEASE_MS = 15_000;
const LEASE_RETRY_MS = 2_000;
/** A case's deadline: a stuck case fails instead of hanging `make e2e`. */
const CASE_TIMEOUT_MS = 150_000;
const CONVERGE_MS = 90_000;
const ORG = 'e2e-org';

let cp: ControlPlane;
let dir: string;
let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
/** Everything a case started, stopped after it (also when it fails). */
let cleanups: (() => Promise<unknown>)[] = [];

before(
  async () => {
    ({ dir, cp } = await startCluster('faults'));
    upstream = await startEchoUpstream();
  },
  { timeout: 120_000 },
);

// A failed case must not leave its processes running into the next one.
afterEach(cleanUp);

after(async () => {
  await cleanUp();
  await upstream.close();
  await cp.stop();
});

async function cleanUp(): Promise<void> {
  const pending = cleanups.reverse();
  cleanups = [];
  for (const c of pending) await c().catch(() => undefined);
}

/** A namespace for the objects of a case and one for its operators' lease. */
async function namespaces(name: string): Promise<{ ns: string; leaseNs: string }> {
  const ns = `faults-${name}`;
  const leaseNs = `faults-${name}-lease`;
  await cp.kubectl(['create', 'namespace', ns]);
  await cp.kubectl(['create', 'namespace', leaseNs]);
  return { ns, leaseNs };
}

async function gateway(name: string, env?: Record<string, string>, port?: number): Promise<GatewayProc> {
  const gw = await startGateway({
    name: `faults-${name}-gateway`,
    secret: `faults-${name}-secret`,
    dataDir: join(dir, `${name}-gw`),
    logDir: dir,
    ...(port === undefined ? {} : { port }),
    ...(env === undefined ? {} : { env }),
  });
  cleanups.push(() => gw.stop());
  return gw;
}

/** An operator watching `ns`, its lease in `leaseNs`; `env` overrides the defaults. */
async function operator(
  name: string,
  target: GatewayProc,
  where: { ns: string; leaseNs: string },
  env: Record<string, string> = {},
): Promise<OperatorProc> {
  const op = await startOperator({
    name: `faults-${name}`,
    gateway: target,
    kubeconfig: cp.kubeconfig,
    logDir: dir,
    org: ORG,
    env: { WATCH_NAMESPACE: where.ns, POD_NAMESPACE: where.leaseNs, LOG_LEVEL: 'info', ...env },
  });
  cleanups.push(() => op.stop());
  return op;
}

/** SIGKILL, by the process's own ID, and wait until it is gone. */
async function kill(op: OperatorProc): Promise<void> {
  process.kill(op.pid, 'SIGKILL');
  await op.exited;
}

/** A function telling whether the process is still running (it never exited on its own). */
function tracked(op: OperatorProc): () => boolean {
  let alive = true;
  void op.exited.then(() => {
    alive = false;
  });
  return () => alive;
}

const apiName = (i: number): string => `api-${String(i).padStart(3, '0')}`;
const policyName = (i: number): string => `pol-${String(i).padStart(3, '0')}`;

/** An ApiDefinition proxying `/<name>/` to the upstream's `/v<version>`. */
function apiYaml(ns: string, i: number, version = 1): string {
  const name = apiName(i);
  return `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: ${name}, namespace: ${ns}}
spec:
  name: ${name}-v${version}
  use_keyless: true
  proxy: {listen_path: /${name}/, target_url: "${upstream.url}/v${version}", strip_listen_path: true}
`;
}

/** A SecurityPolicy covering the ApiDefinition of the same index. */
function policyYaml(ns: string, i: number): string {
  return `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: ${policyName(i)}, namespace: ${ns}}
spec:
  name: ${policyName(i)}
  rate: 100
  per: 60
  access_rights_array: [{name: ${apiName(i)}}]
`;
}

/** Applies many documents in chunks (one kubectl each), as a CI pipeline would. */
async function applyAll(docs: readonly string[], chunk = 100): Promise<void> {
  for (let i = 0; i < docs.length; i += chunk) {
    await applyManifest(cp, docs.slice(i, i + chunk).join('---\n'));
  }
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, k) => from + k);

interface Item {
  metadata: { name: string; generation?: number; finalizers?: string[] };
  status?: Status;
}

async function list(kind: string, ns: string): Promise<Item[]> {
  const out = await cp.kubectl(['get', kind, '-n', ns, '-o', 'json']);
  return (JSON.parse(out.stdout) as { items: Item[] }).items;
}

/** Ready=True for the object's current generation. */
function converged(item: Item): boolean {
  interface Cond {
    type: string;
    status: string;
    observedGeneration?: number;
  }
  const conditions = (item.status?.conditions ?? []) as Cond[];
  const ready = conditions.find((c) => c.type === 'Ready');
  return ready?.status === 'True' && ready.observedGeneration === item.metadata.generation;
}

/**
 * Waits until exactly the objects `names` of `kind` exist and every one has converged; on a
 * timeout, names those that did not (and their Ready condition).
 */
async function waitConverged(kind: string, ns: string, names: readonly string[]): Promise<Item[]> {
  const want = [...names].sort();
  let lagging: string[] = [];
  try {
    return await waitFor(
      `every ${kind} in ${ns} Ready`,
      async () => {
        const items = await list(kind, ns);
        const have = items.map((it) => it.metadata.name).sort();
        lagging = items
          .filter((it) => !converged(it))
          .map((it) => `${it.metadata.name}: ${JSON.stringify(readyOf(it.status ?? {}))}`);
        return JSON.stringify(have) === JSON.stringify(want) && lagging.length === 0 ? items : undefined;
      },
      CONVERGE_MS,
      500,
    );
  } catch (err) {
    throw new Error(`${String(err)}\nnot converged (${lagging.length}): ${lagging.slice(0, 10).join('\n')}`, {
      cause: err,
    });
  }
}

/** The IDs of what the gateway holds in a collection, as it lists them. */
async function heldIds(gw: GatewayProc, collection: 'apis' | 'policies'): Promise<string[]> {
  const r = await admin(gw, 'GET', `/svc/${collection}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const key = collection === 'apis' ? 'api_id' : 'id';
  return (r.body as Record<string, unknown>[]).map((d) => String(d[key] ?? d._id));
}

/** APIs as the gateway holds them, by ID. */
async function heldApis(gw: GatewayProc): Promise<Map<string, { name?: string; target?: string }>> {
  const r = await admin(gw, 'GET', '/svc/apis');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const apis = r.body as { api_id: string; name?: string; proxy?: { target_url?: string } }[];
  return new Map(apis.map((a) => [a.api_id, { name: a.name, target: a.proxy?.target_url }]));
}

/** How many times the gateway's log says each document was first stored ("added"). */
function creations(gw: GatewayProc, what: 'api stored' | 'policy stored'): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of gw.log().split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { message?: string; action?: string; api_id?: string; policy_id?: string };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (entry.message !== what || entry.action !== 'added') continue;
    const id = entry.api_id ?? entry.policy_id ?? '';
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/**
 * The final state of every API of a burst: exactly one API per object in the gateway (no
 * other), with the version the object asks for, created once (unless `recreated`), and served
 * through the gateway to that version's path.
 */
async function assertApis(
  gw: GatewayProc,
  ns: string,
  versions: ReadonlyMap<number, number>,
  opts: { recreated?: boolean } = {},
): Promise<void> {
  const expected = new Map([...versions].map(([i, v]) => [derivedId(ns, apiName(i)), { i, v }]));
  const held = await heldApis(gw);
  const ids = await heldIds(gw, 'apis');
  assert.equal(ids.length, new Set(ids).size, 'the gateway lists an API twice');
  assert.deepEqual([...held.keys()].sort(), [...expected.keys()].sort(), 'one API per object, no other');
  for (const [id, { i, v }] of expected) {
    const api = held.get(id);
    assert.equal(api?.name, `${apiName(i)}-v${v}`, `${apiName(i)}: the gateway holds the latest spec`);
    assert.equal(api.target, `${upstream.url}/v${v}`, `${apiName(i)}: target`);
  }
  if (opts.recreated !== true) {
    const created = creations(gw, 'api stored');
    const twice = [...created].filter(([, n]) => n !== 1);
    assert.deepEqual(twice, [], 'an API was created more than once');
    // Deleted objects' APIs were created too: every API held now was created exactly once.
    const missing = [...expected.keys()].filter((id) => created.get(id) !== 1);
    assert.deepEqual(missing, [], 'APIs not created exactly once');
  }
  await assertServed(gw, versions);
}

/** Every API answers through the gateway, from the upstream path of its version. */
async function assertServed(gw: GatewayProc, versions: ReadonlyMap<number, number>): Promise<void> {
  const entries = [...versions];
  const wrong: string[] = [];
  const worker = async (): Promise<void> => {
    for (let e = entries.shift(); e !== undefined; e = entries.shift()) {
      const [i, v] = e;
      const r = await httpRequest(`${gw.url}/${apiName(i)}/x`);
      const path = r.status === 200 ? (JSON.parse(r.body) as { path?: string }).path : undefined;
      if (path !== `/v${v}/x`) wrong.push(`${apiName(i)}: ${r.status} ${path ?? r.body.slice(0, 100)}`);
    }
  };
  await Promise.all(range(0, 8).map(worker));
  assert.deepEqual(wrong, [], 'every API served by the gateway at its latest version');
}

/** Every policy of `indices` in the gateway once (no other), covering its API. */
async function assertPolicies(
  gw: GatewayProc,
  ns: string,
  indices: readonly number[],
  opts: { recreated?: boolean } = {},
): Promise<void> {
  const r = await admin(gw, 'GET', '/svc/policies');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const held = r.body as { id?: string; _id?: string; access_rights?: Record<string, unknown> }[];
  const ids = held.map((p) => p.id ?? p._id ?? '');
  assert.equal(ids.length, new Set(ids).size, 'the gateway lists a policy twice');
  const expected = new Map(indices.map((i) => [derivedId(ns, policyName(i)), i]));
  assert.deepEqual([...ids].sort(), [...expected.keys()].sort(), 'one policy per object, no other');
  for (const p of held) {
    const i = expected.get(p.id ?? p._id ?? '') ?? -1;
    assert.deepEqual(Object.keys(p.access_rights ?? {}), [derivedId(ns, apiName(i))], policyName(i));
  }
  if (opts.recreated !== true) {
    const created = creations(gw, 'policy stored');
    assert.deepEqual(
      [...created].filter(([, n]) => n !== 1),
      [],
      'a policy was created more than once',
    );
  }
}

/** Waits until the gateway holds at least `n` APIs: the burst is under way. */
async function waitHeld(gw: GatewayProc, n: number): Promise<void> {
  await waitFor(`${n} APIs in the gateway`, async () => (await heldIds(gw, 'apis')).length >= n, 60_000, 100);
}

test(
  'the gateway down during a burst: every object converges, nothing is pushed twice, statuses say GatewayUnavailable meanwhile',
  { timeout: CASE_TIMEOUT_MS },
  async () => {
    const where = await namespaces('gateway-down');
    const { ns } = where;
    const n = BURST_GATEWAY_DOWN;
    let gw = await gateway('gateway-down');
    await operator('gateway-down', gw, where);
    const versions = new Map(range(0, n).map((i) => [i, 1]));

    // The first half is created; once some of it is in the gateway, the gateway goes.
    await applyAll(range(0, n / 2).map((i) => apiYaml(ns, i)));
    await waitHeld(gw, n / 10);
    const { port } = gw;
    const down = Date.now();
    await gw.stop();

    // While it is down: the second half is created and a quarter of the first updated.
    await applyAll([
      ...range(n / 2, n).map((i) => apiYaml(ns, i)),
      ...range(0, n / 4).map((i) => apiYaml(ns, i, 2)),
    ]);
    for (const i of range(0, n / 4)) versions.set(i, 2);
    const unavailable = new Set<string>();
    while (Date.now() - down < GATEWAY_DOWN_MS) {
      for (const it of await list('apidefinition', ns)) {
        const ready = readyOf(it.status ?? {});
        if (ready?.status === 'False' && ready.reason === 'GatewayUnavailable')
          unavailable.add(it.metadata.name);
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
    assert.ok(
      unavailable.size > 0,
      'some statuses said Ready=False, GatewayUnavailable while the gateway was down',
    );

    // The gateway comes back on the same port, with the same data.
    gw = await gateway('gateway-down', undefined, port);
    const back = Date.now();
    await waitConverged('apidefinition', ns, [...versions.keys()].map(apiName));
    const convergedMs = Date.now() - back;
    await assertApis(gw, ns, versions);
    process.stderr.write(
      `faults: gateway down ${GATEWAY_DOWN_MS} ms, ${unavailable.size}/${n} reported GatewayUnavailable; ` +
        `converged ${convergedMs} ms after it came back\n`,
    );
  },
);

test(
  'the API server and etcd restarted during a burst: informers recover, nothing is missed',
  { timeout: CASE_TIMEOUT_MS },
  async () => {
    const where = await namespaces('apiserver');
    const { ns } = where;
    const n = BURST;
    const gw = await gateway('apiserver');
    const alive = tracked(await operator('apiserver', gw, where));
    const versions = new Map(range(0, n).map((i) => [i, 1]));

    await applyAll(range(0, n / 2).map((i) => apiYaml(ns, i)));
    await waitHeld(gw, n / 10);
    // Mid-burst: the operator's watches break and its status writes fail until it is back. The
    // outage (stop, 1 s, start until ready: ~6-11 s on 2 cores) stays under the lease duration:
    // a leader that cannot renew its lease for that long exits, by design.
    const restarted = Date.now();
    await cp.restart({ downMs: 1000 });
    const outageMs = Date.now() - restarted;
    // After the restart: the second half, and updates of a quarter, must reach the new watches.
    await applyAll([
      ...range(n / 2, n).map((i) => apiYaml(ns, i)),
      ...range(0, n / 4).map((i) => apiYaml(ns, i, 2)),
    ]);
    for (const i of range(0, n / 4)) versions.set(i, 2);

    await waitConverged('apidefinition', ns, [...versions.keys()].map(apiName));
    await assertApis(gw, ns, versions);
    assert.ok(alive(), 'the operator rode out the restart (it did not exit)');
    process.stderr.write(`faults: control plane down for ${outageMs} ms (stop, 1 s, start until ready)\n`);
  },
);

test(
  'the operator killed (SIGKILL) mid-burst and restarted: converges, no duplicates, no stuck finalizer',
  { timeout: CASE_TIMEOUT_MS },
  async () => {
    const where = await namespaces('kill');
    const { ns } = where;
    const n = BURST;
    const policies = range(0, n / 5);
    const gw = await gateway('kill');
    const op = await operator('kill-1', gw, where);
    const versions = new Map(range(0, n).map((i) => [i, 1]));

    // Killed while the burst is still being applied, as soon as the gateway holds a few APIs.
    const applying = applyAll(
      [...range(0, n).map((i) => apiYaml(ns, i)), ...policies.map((i) => policyYaml(ns, i))],
      50,
    );
    try {
      await waitFor(
        'the first APIs pushed',
        async () => (await heldIds(gw, 'apis')).length >= 10,
        60_000,
        20,
      );
      await kill(op);
    } finally {
      await applying;
    }
    const held = (await heldIds(gw, 'apis')).length;
    const done = (await list('apidefinition', ns)).filter(converged).length;
    assert.ok(held < n && done < n, `killed mid-burst (${held}/${n} APIs pushed, ${done} Ready)`);
    process.stderr.write(`faults: operator killed with ${held}/${n} APIs pushed, ${done} Ready\n`);
    await operator('kill-2', gw, where);

    await waitConverged('apidefinition', ns, [...versions.keys()].map(apiName));
    await waitConverged('securitypolicy', ns, policies.map(policyName));
    await assertApis(gw, ns, versions);
    await assertPolicies(gw, ns, policies);

    // Finalizers work after the restart: APIs no policy covers, and some policies, deleted.
    const goneApis = range(n / 5, n / 5 + 20);
    const gonePolicies = policies.slice(0, 10);
    await cp.kubectl([
      'delete',
      '-n',
      ns,
      '--wait=false',
      ...goneApis.map((i) => `apidefinition/${apiName(i)}`),
      ...gonePolicies.map((i) => `securitypolicy/${policyName(i)}`),
    ]);
    for (const i of goneApis) versions.delete(i);
    const keptPolicies = policies.slice(10);
    await waitConverged('apidefinition', ns, [...versions.keys()].map(apiName));
    await waitConverged('securitypolicy', ns, keptPolicies.map(policyName));
    await assertApis(gw, ns, versions);
    await assertPolicies(gw, ns, keptPolicies);
  },
);

/** A management write seen by a recording proxy. */
interface Write {
  who: string;
  method: string;
  path: string;
  /** When the proxy forwarded it to the gateway. */
  at: number;
}

/**
 * A proxy in front of the gateway's management API for one operator: it forwards everything and
 * records the writes (any method but GET, and reloads), so the test knows who wrote when.
 */
async function recordingProxy(who: string, gw: GatewayProc, writes: Write[]): Promise<GatewayProc> {
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    const method = req.method ?? 'GET';
    if (method !== 'GET' || path.startsWith('/svc/reload'))
      writes.push({ who, method, path, at: Date.now() });
    const upstreamReq = http.request(
      `${gw.url}${path}`,
      { method, headers: req.headers, agent: false },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    upstreamReq.on('error', () => {
      res.destroy();
    });
    req.pipe(upstreamReq);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  cleanups.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  );
  return { ...gw, url: `http://127.0.0.1:${port}`, port };
}

test(
  'two replicas: the leader killed, the other takes over within the lease and finishes; never both write',
  { timeout: CASE_TIMEOUT_MS },
  async () => {
    const where = await namespaces('leader');
    const { ns } = where;
    const n = BURST;
    const gw = await gateway('leader');
    const writes: Write[] = [];
    const a = await operator('leader-a', await recordingProxy('a', gw, writes), where);
    await waitFor('replica a leads', () => a.log().includes('became leader'));
    const b = await operator('leader-b', await recordingProxy('b', gw, writes), where);
    const versions = new Map(range(0, n).map((i) => [i, 1]));

    await applyAll(range(0, n).map((i) => apiYaml(ns, i)));
    await waitFor('replica a writing', () => writes.filter((w) => w.who === 'a').length >= n / 4, 60_000);
    assert.ok(!b.log().includes('became leader'), 'replica b waits while a leads');
    const killedAt = Date.now();
    await kill(a);
    await waitFor(
      'replica b leads',
      () => b.log().includes('became leader'),
      LEASE_MS + LEASE_RETRY_MS + 5_000,
    );
    const takeoverMs = Date.now() - killedAt;
    assert.ok(
      takeoverMs <= LEASE_MS + LEASE_RETRY_MS + 1_000,
      `b took over ${takeoverMs} ms after a died (lease ${LEASE_MS} ms, retry ${LEASE_RETRY_MS} ms)`,
    );

    await waitConverged('apidefinition', ns, [...versions.keys()].map(apiName));
    await assertApis(gw, ns, versions);

    const byA = writes.filter((w) => w.who === 'a');
    const byB = writes.filter((w) => w.who === 'b');
    assert.ok(byA.length > 0 && byB.length > 0, `both wrote in turn (a ${byA.length}, b ${byB.length})`);
    const lastA = Math.max(...byA.map((w) => w.at));
    const firstB = Math.min(...byB.map((w) => w.at));
    assert.ok(lastA <= killedAt, 'no write of a after it was killed');
    assert.ok(
      firstB > killedAt,
      `b wrote nothing before a was killed (first write ${firstB - killedAt} ms after)`,
    );
    process.stderr.write(
      `faults: takeover ${takeoverMs} ms; writes a ${byA.length}, b ${byB.length}; ` +
        `gap ${firstB - lastA} ms between a's last and b's first\n`,
    );
  },
);

test(
  "the gateway's Redis restarted empty: the next resync restores every API and policy",
  { timeout: CASE_TIMEOUT_MS },
  async () => {
    const where = await namespaces('redis');
    const { ns } = where;
    const n = BURST / 2;
    const policies = range(0, n / 5);
    let redis: TestRedis = await startRedis();
    cleanups.push(() => redis.stop());
    const gw = await gateway('redis', { SVC_GW_STORE: redis.url });
    await operator('redis', gw, where, { SVC_RESYNC_PERIOD: '5s' });
    const versions = new Map(range(0, n).map((i) => [i, 1]));

    await applyAll([...range(0, n).map((i) => apiYaml(ns, i)), ...policies.map((i) => policyYaml(ns, i))]);
    await waitConverged('apidefinition', ns, [...versions.keys()].map(apiName));
    await waitConverged('securitypolicy', ns, policies.map(policyName));
    await assertApis(gw, ns, versions);
    await assertPolicies(gw, ns, policies);

    // Redis restarts with nothing (no persistence): the gateway's store is empty.
    await redis.stop();
    redis = await startRedisOn(redis.port);
    const wiped = Date.now();
    await waitFor(
      'the gateway sees the empty store',
      async () => (await heldIds(gw, 'apis')).length < n,
      10_000,
    );

    await waitFor(
      'every API and policy back in the gateway',
      async () =>
        (await heldIds(gw, 'apis')).length === n &&
        (await heldIds(gw, 'policies')).length === policies.length,
      30_000,
      250,
    );
    const restoredMs = Date.now() - wiped;
    await waitConverged('apidefinition', ns, [...versions.keys()].map(apiName));
    await waitConverged('securitypolicy', ns, policies.map(policyName));
    await assertApis(gw, ns, versions, { recreated: true });
    await assertPolicies(gw, ns, policies, { recreated: true });
    process.stderr.write(`faults: store restored ${restoredMs} ms after Redis restarted empty\n`);
  },
);
