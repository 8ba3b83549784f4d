/**
 * What the faults suites share (faults-outages.test.ts, faults-operator.test.ts): one control
 * plane and an echo upstream per file, and per case its own namespace, gateway, operator(s) and
 * lease namespace, stopped after the case (also when it fails); bursts of ApiDefinitions and
 * SecurityPolicies, and the assertions on the final state of every object of a burst: `Ready=True`
 * for the current generation, exactly one API (and policy) per object in the gateway, created
 * once, and served.
 */
import { after, afterEach, before } from 'node:test';
import assert from 'node:assert/strict';
import { derivedId } from '../../operator/ids.ts';
import type { ControlPlane } from '../harness/control-plane.ts';
import {
  httpRequest,
  startEchoUpstream,
  waitFor,
  type GatewayProc,
  type OperatorProc,
} from '../harness/processes.ts';
import {
  admin,
  applyManifest,
  readyOf,
  type Status,
  startCluster,
  startSuiteGateway,
  startWorldOperator,
} from './helpers.ts';

/** Objects per burst. */
export const BURST = 200;
/** A case's deadline: a stuck case fails instead of hanging `make e2e`. */
export const CASE_TIMEOUT_MS = 150_000;
const CONVERGE_MS = 90_000;
const ORG = 'e2e-org';

let cp: ControlPlane;
let dir: string;
let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
/** Everything a case started, stopped after it (also when it fails). */
let cleanups: (() => Promise<unknown>)[] = [];

/**
 * Starts the file's control plane and upstream before its cases and stops them after; stops what
 * each case started after it.
 */
export function useFaultsCluster(): void {
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
}

/** The file's control plane (once `useFaultsCluster`'s `before` has run). */
export function controlPlane(): ControlPlane {
  return cp;
}

/** Stops `stop` after the current case. */
export function afterCase(stop: () => Promise<unknown>): void {
  cleanups.push(stop);
}

async function cleanUp(): Promise<void> {
  const pending = cleanups.reverse();
  cleanups = [];
  for (const c of pending) await c().catch(() => undefined);
}

/** A namespace for the objects of a case and one for its operators' lease. */
export async function namespaces(name: string): Promise<{ ns: string; leaseNs: string }> {
  const ns = `faults-${name}`;
  const leaseNs = `faults-${name}-lease`;
  await cp.kubectl(['create', 'namespace', ns]);
  await cp.kubectl(['create', 'namespace', leaseNs]);
  return { ns, leaseNs };
}

export async function gateway(
  name: string,
  env?: Record<string, string>,
  port?: number,
): Promise<GatewayProc> {
  const gw = await startSuiteGateway(dir, `faults-${name}`, {
    ...(port === undefined ? {} : { port }),
    ...(env === undefined ? {} : { env }),
  });
  cleanups.push(() => gw.stop());
  return gw;
}

/**
 * What every case starts with: its namespaces (`namespaces`), its gateway (`gateway`, with `env`)
 * and the version of each of its `n` APIs (all 1: the burst applies `apiYaml(ns, i)`).
 */
export async function startCase(
  name: string,
  n: number,
  env?: Record<string, string>,
): Promise<{
  where: { ns: string; leaseNs: string };
  ns: string;
  gw: GatewayProc;
  versions: Map<number, number>;
}> {
  const where = await namespaces(name);
  const gw = await gateway(name, env);
  return { where, ns: where.ns, gw, versions: new Map(range(0, n).map((i) => [i, 1])) };
}

/** An operator watching `ns`, its lease in `leaseNs`; `env` overrides the defaults. */
export async function operator(
  name: string,
  target: GatewayProc,
  where: { ns: string; leaseNs: string },
  env: Record<string, string> = {},
): Promise<OperatorProc> {
  const op = await startWorldOperator(
    { name: 'faults', cp, dir, gw: target },
    {
      name: `faults-${name}`,
      org: ORG,
      env: { WATCH_NAMESPACE: where.ns, POD_NAMESPACE: where.leaseNs, LOG_LEVEL: 'info', ...env },
    },
  );
  cleanups.push(() => op.stop());
  return op;
}

/** SIGKILL, by the process's own ID, and wait until it is gone. */
export async function kill(op: OperatorProc): Promise<void> {
  process.kill(op.pid, 'SIGKILL');
  await op.exited;
}

/** A function telling whether the process is still running (it never exited on its own). */
export function tracked(op: OperatorProc): () => boolean {
  let alive = true;
  void op.exited.then(() => {
    alive = false;
  });
  return () => alive;
}

export const apiName = (i: number): string => `api-${String(i).padStart(3, '0')}`;
export const policyName = (i: number): string => `pol-${String(i).padStart(3, '0')}`;

/** An ApiDefinition proxying `/<name>/` to the upstream's `/v<version>`. */
export function apiYaml(ns: string, i: number, version = 1): string {
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
export function policyYaml(ns: string, i: number): string {
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
export async function applyAll(docs: readonly string[], chunk = 100): Promise<void> {
  for (let i = 0; i < docs.length; i += chunk) {
    await applyManifest(cp, docs.slice(i, i + chunk).join('---\n'));
  }
}

export const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from }, (_, k) => from + k);

/** An svc object as `kubectl get -o json` lists it. */
export interface Item {
  metadata: { name: string; generation?: number; finalizers?: string[] };
  status?: Status;
}

export async function list(kind: string, ns: string): Promise<Item[]> {
  const out = await cp.kubectl(['get', kind, '-n', ns, '-o', 'json']);
  return (JSON.parse(out.stdout) as { items: Item[] }).items;
}

/** Ready=True for the object's current generation. */
export function converged(item: Item): boolean {
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
export async function waitConverged(kind: string, ns: string, names: readonly string[]): Promise<Item[]> {
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
export async function heldIds(gw: GatewayProc, collection: 'apis' | 'policies'): Promise<string[]> {
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
export async function assertApis(
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
export async function assertPolicies(
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
export async function waitHeld(gw: GatewayProc, n: number): Promise<void> {
  await waitFor(`${n} APIs in the gateway`, async () => (await heldIds(gw, 'apis')).length >= n, 60_000, 100);
}

/**
 * The final state of a burst: waits until every API of `versions` and every policy of `policies`
 * (if any) is Ready for its current generation, then asserts the gateway holds each as
 * {@link assertApis} and {@link assertPolicies} say (`opts` to both).
 */
export async function assertBurstConverged(
  gw: GatewayProc,
  ns: string,
  versions: ReadonlyMap<number, number>,
  policies: readonly number[] = [],
  opts: { recreated?: boolean } = {},
): Promise<void> {
  await waitConverged('apidefinition', ns, [...versions.keys()].map(apiName));
  if (policies.length > 0) await waitConverged('securitypolicy', ns, policies.map(policyName));
  await assertApis(gw, ns, versions, opts);
  if (policies.length > 0) await assertPolicies(gw, ns, policies, opts);
}
