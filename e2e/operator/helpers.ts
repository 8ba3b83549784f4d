/**
 * What the operator suites share: applying manifests as a user would, reading a resource's
 * status and its `Ready` condition, waiting on them, and calling a gateway's management API.
 */
import { join } from 'node:path';
import { selfSignedCert } from '../../gateway/testing/certs.ts';
import { startedOrStopped, stopAll, type Stoppable } from '../../lib/testing/teardown.ts';
import type { ControlPlane, KubectlResult } from '../harness/control-plane.ts';
import { installGatewayApiCrds } from '../harness/gateway-api.ts';
import { startCluster, startGatewayPair } from '../harness/local-world.ts';
import {
  httpRequest,
  startEchoUpstream,
  startGateway,
  startOperator,
  waitFor,
  type GatewayProc,
  type OperatorProc,
} from '../harness/processes.ts';

/** The repository root. */
export const root = join(import.meta.dirname, '..', '..');

/** A status as kubectl prints it. */
export type Status = Record<string, unknown>;

/** `kubectl apply --server-side` of a YAML manifest; rejects when kubectl fails. */
export async function applyManifest(cp: Pick<ControlPlane, 'kubectl'>, manifest: string): Promise<void> {
  await cp.kubectl(['apply', '--server-side', '--field-manager=e2e', '-f', '-'], { input: manifest });
}

/**
 * `kubectl apply` of examples/<name>.yaml for each name, as a user applies them: kubectl's result,
 * a failure included (the test asserts on it).
 */
export function applyExamples(cp: Pick<ControlPlane, 'kubectl'>, names: string[]): Promise<KubectlResult> {
  return cp.kubectl(['apply', ...names.flatMap((n) => ['-f', join(root, 'examples', `${n}.yaml`)])], {
    allowFailure: true,
  });
}

/** The status of a resource (empty when it has none). */
export async function statusOf(
  cp: Pick<ControlPlane, 'kubectl'>,
  kind: string,
  ns: string,
  name: string,
): Promise<Status> {
  const out = await cp.kubectl(['get', kind, name, '-n', ns, '-o', 'json']);
  return (JSON.parse(out.stdout) as { status?: Status }).status ?? {};
}

/** The `Ready` condition of a status. */
export function readyOf(st: Status): { status?: string; reason?: string; message?: string } | undefined {
  const conds = st.conditions as
    { type: string; status: string; reason: string; message: string }[] | undefined;
  return conds?.find((c) => c.type === 'Ready');
}

/** Waits until the resource's status satisfies `ok`; returns that status. */
export async function waitForStatus(
  cp: Pick<ControlPlane, 'kubectl'>,
  target: { kind: string; ns: string; name: string },
  what: string,
  ok: (st: Status) => boolean,
  timeoutMs?: number,
): Promise<Status> {
  return waitFor(
    `${target.kind} ${target.ns}/${target.name}: ${what}`,
    async () => {
      const st = await statusOf(cp, target.kind, target.ns, target.name);
      return ok(st) ? st : undefined;
    },
    timeoutMs,
  );
}

/**
 * The Events in `ns` that `fieldSelector` picks (`involvedObject.name=x,reason=Created`), as
 * kubectl prints `jsonpath` over them (default: their reasons, space-separated).
 */
export async function eventsOf(
  cp: Pick<ControlPlane, 'kubectl'>,
  ns: string,
  fieldSelector: string,
  jsonpath = '{.items[*].reason}',
): Promise<string> {
  const out = await cp.kubectl([
    'get',
    'events',
    '-n',
    ns,
    '--field-selector',
    fieldSelector,
    '-o',
    `jsonpath=${jsonpath}`,
  ]);
  return out.stdout;
}

/**
 * An ApiDefinition `name` of `ns` proxying `listenPath` (`/<name>/` unless given) to `target`,
 * stripping the listen path: keyless, or asking for a token when `protect`; `extra` (spec lines,
 * indented) added.
 */
export function apiDefinitionManifest(o: {
  ns: string;
  name: string;
  target: string;
  listenPath?: string;
  protect?: boolean;
  extra?: string;
}): string {
  return `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: ${o.name}, namespace: ${o.ns}}
spec:
  name: ${o.name}
  ${o.protect === true ? 'use_keyless: false\n  use_standard_auth: true' : 'use_keyless: true'}
  proxy: {listen_path: ${o.listenPath ?? `/${o.name}/`}, target_url: "${o.target}", strip_listen_path: true}
${o.extra ?? ''}`;
}

/** A `kubernetes.io/tls` Secret manifest holding a certificate and its key. */
export function tlsSecretManifest(ns: string, name: string, c: { cert: string; key: string }): string {
  const b64 = (t: string): string => Buffer.from(t).toString('base64');
  return `apiVersion: v1
kind: Secret
metadata: {name: ${name}, namespace: ${ns}}
type: kubernetes.io/tls
data:
  tls.crt: ${b64(c.cert)}
  tls.key: ${b64(c.key)}
`;
}

/** Whether a status's `Ready` condition is True. */
export const isReady = (st: Status): boolean => readyOf(st)?.status === 'True';

/** Waits until the resource is Ready (True); returns its status. */
export function waitReady(
  cp: Pick<ControlPlane, 'kubectl'>,
  target: { kind: string; ns: string; name: string },
  timeoutMs?: number,
): Promise<Status> {
  return waitForStatus(cp, target, 'Ready', isReady, timeoutMs);
}

/** A call to the gateway's management API with its secret; the body parsed when it is JSON. */
export async function admin(
  gw: Pick<GatewayProc, 'url' | 'secret'>,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const r = await httpRequest(`${gw.url}${path}`, {
    method,
    headers: {
      'x-svc-authorization': gw.secret,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let parsed: unknown = r.body;
  try {
    parsed = JSON.parse(r.body);
  } catch {
    // Not JSON: keep the text.
  }
  return { status: r.status, body: parsed };
}

/** A suite's control plane, its namespaces and directory (harness/local-world.ts). */
export { startCluster };

/** A gateway's settings for a default certificate (self-signed): HTTPS listen ports need one. */
export function defaultCertEnv(): Record<string, string> {
  const tls = selfSignedCert();
  return { SVC_GW_TLS_CERT_FILE: tls.certFile, SVC_GW_TLS_KEY_FILE: tls.keyFile };
}

/** What an operator suite runs against: a control plane with the CRDs, two gateways, an upstream. */
export interface OperatorWorld {
  /** The suite's name: its folder's, its gateways' and (by default) its operator's. */
  name: string;
  cp: ControlPlane;
  /** Logs and gateway data. */
  dir: string;
  gw: GatewayProc;
  gw2: GatewayProc;
  upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
  /** The world's operator, when it was started with it (`startWorld`'s `operator`). */
  operator?: OperatorProc;
}

/**
 * Starts a world: the control plane (with `namespaces` and `svc-operator-system`, where the
 * operator keeps its lease), the echo upstream and two gateways with the given secrets
 * (`e2e-<name>-secret` and `e2e-<name>-secret-2` unless given); with `operator`, last, its
 * operator ({@link startWorldOperator} with these settings), which {@link stopWorld} stops first.
 * A suite that starts something the operator needs first (the webhooks) starts it itself.
 */
export async function startWorld(opts: {
  name: string;
  namespaces: readonly string[];
  secrets?: readonly [string, string];
  /** Settings of both gateways (for example `SVC_GW_STREAMING_ENABLED`). */
  gatewayEnv?: Record<string, string>;
  operator?: { org?: string; env?: Record<string, string> };
}): Promise<OperatorWorld> {
  const { name } = opts;
  return onSuiteCluster(name, opts.namespaces, async ({ dir, cp }, started) => {
    const upstream = await startEchoUpstream();
    started.push(upstream);
    const [gw, gw2] = await startGatewayPair({
      name,
      dir,
      secrets: opts.secrets ?? [`e2e-${name}-secret`, `e2e-${name}-secret-2`],
      ...(opts.gatewayEnv ? { env: opts.gatewayEnv } : {}),
    });
    started.push(gw, gw2);
    const w: OperatorWorld = { name, cp, dir, gw, gw2, upstream };
    if (opts.operator !== undefined) w.operator = await startWorldOperator(w, opts.operator);
    return w;
  });
}

/**
 * The operator of a world or a suite (`startOperator`): against its (first) gateway and its
 * control plane, logging into its directory, named `<name>-operator` unless `opts.name` says.
 */
export function startWorldOperator(
  w: Pick<OperatorWorld, 'name' | 'cp' | 'dir' | 'gw'>,
  opts: { name?: string; org?: string; env?: Record<string, string> } = {},
): Promise<OperatorProc> {
  return startOperator({
    name: `${w.name}-operator`,
    ...opts,
    gateway: w.gw,
    kubeconfig: w.cp.kubeconfig,
    logDir: w.dir,
  });
}

/**
 * Stops `first` (in the order given: the operator, webhooks, upstreams a suite started beside
 * its world), then what {@link startWorld} started (its operator first), even when stopping `first` fails (nothing of
 * the world when it failed: it stopped what it had started).
 */
export function stopWorld(
  w: OperatorWorld | undefined,
  ...first: readonly (Stoppable | undefined)[]
): Promise<void> {
  return stopFirst(first, w === undefined ? [] : [w.operator, w.gw, w.gw2, w.upstream, w.cp]);
}

/** Stops `first`, then `then`, each in the order given, `then` even when stopping `first` fails. */
async function stopFirst(
  first: readonly (Stoppable | undefined)[],
  then: readonly (Stoppable | undefined)[],
): Promise<void> {
  try {
    await stopAll(...first);
  } finally {
    await stopAll(...then);
  }
}

/** A suite of one gateway: a control plane with the CRDs, a folder of its own, the gateway. */
export interface GatewaySuite {
  /** The suite's name: its folder's, its gateway's and (by default) its operator's. */
  name: string;
  cp: ControlPlane;
  /** Logs and gateway data. */
  dir: string;
  gw: GatewayProc;
}

/**
 * Starts a {@link GatewaySuite} named `name`: the control plane with `namespaces` and
 * `svc-operator-system` (the operator's lease), and the gateway `<name>-gateway`
 * ({@link startSuiteGateway}), `env` added to its settings.
 */
export async function startGatewaySuite(opts: {
  name: string;
  namespaces: readonly string[];
  env?: Record<string, string>;
}): Promise<GatewaySuite> {
  const { name } = opts;
  return onSuiteCluster(name, opts.namespaces, async ({ dir, cp }) => {
    const gw = await startSuiteGateway(dir, name, opts.env ? { env: opts.env } : {});
    return { name, cp, dir, gw };
  });
}

/**
 * The control plane of the suite `name` ({@link startCluster}, with `namespaces` and
 * `svc-operator-system`, where the operator keeps its lease), and what `start` starts on it: what
 * `start` adds to `started`, and the control plane, are stopped again when it fails.
 */
async function onSuiteCluster<T>(
  name: string,
  namespaces: readonly string[],
  start: (c: { dir: string; cp: ControlPlane }, started: Stoppable[]) => Promise<T>,
): Promise<T> {
  const c = await startCluster(name, [...namespaces, 'svc-operator-system']);
  return startedOrStopped(async (started) => {
    started.push(c.cp);
    return start(c, started);
  });
}

/**
 * A gateway of a suite whose folder is `dir`: `<name>-gateway`, with the secret
 * `e2e-<name>-secret`, its data in `<name>-gw` of the folder and its log there; `workers`, `port`
 * and `env` as `startGateway` takes them.
 */
export function startSuiteGateway(
  dir: string,
  name: string,
  opts: { workers?: number; port?: number; env?: Record<string, string> } = {},
): Promise<GatewayProc> {
  return startGateway({
    name: `${name}-gateway`,
    secret: `e2e-${name}-secret`,
    dataDir: join(dir, `${name}-gw`),
    logDir: dir,
    ...opts,
  });
}

/**
 * Stops `first` (in the order given), then what {@link startGatewaySuite} started, even when
 * stopping `first` fails.
 */
export function stopGatewaySuite(
  s: GatewaySuite | undefined,
  ...first: readonly (Stoppable | undefined)[]
): Promise<void> {
  return stopFirst(first, s === undefined ? [] : [s.gw, s.cp]);
}

/**
 * A {@link GatewaySuite} with the chart's Gateway API CRDs installed (gatewayAPI.installCRDs), as
 * they are before the operator starts.
 */
export async function startGatewayApiSuite(opts: {
  name: string;
  namespaces: readonly string[];
}): Promise<GatewaySuite> {
  const s = await startGatewaySuite(opts);
  return startedOrStopped(async (started) => {
    started.push(s.cp, s.gw);
    await installGatewayApiCrds(s.cp);
    return s;
  });
}

/** A certificate suite's world: a control plane, one gateway with a default certificate, the operator. */
export interface TlsSuite extends GatewaySuite {
  operator: OperatorProc;
}

/**
 * Starts a {@link TlsSuite} named `name`: the control plane with `ns` and `svc-operator-system`, a
 * gateway with a default certificate (HTTPS listen ports need one) and the operator of `org`
 * watching `ns`. Its resync is left at its default: Secrets must arrive through their watch.
 * `gatewayEnv` adds to the gateway's environment (an HTTPS port, a CA to trust upstream).
 */
export async function startTlsSuite(
  name: string,
  ns: string,
  org: string,
  gatewayEnv: Record<string, string> = {},
): Promise<TlsSuite> {
  const s = await startGatewaySuite({ name, namespaces: [ns], env: { ...defaultCertEnv(), ...gatewayEnv } });
  return startedOrStopped(async (started) => {
    started.push(s.cp, s.gw);
    const operator = await startWorldOperator(s, { org, env: { WATCH_NAMESPACE: ns } });
    return { ...s, operator };
  });
}

/**
 * Stops what {@link startTlsSuite} started, and `others` (what the suite started beside it) after
 * its operator, even when stopping one fails.
 */
export async function stopTlsSuite(
  s: TlsSuite | undefined,
  ...others: readonly (Stoppable | undefined)[]
): Promise<void> {
  await stopGatewaySuite(s, s?.operator, ...others);
}
