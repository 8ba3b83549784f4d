/**
 * `make bench-operator` (HTTPRoute part, issue 36 item 4): one Gateway of the class of
 * `svc.io/gateway-controller` and 1,000 HTTPRoutes attached to it (each its own path prefix, its
 * backend a Service whose EndpointSlice points at a local upstream), from `kubectl apply` until
 * each route's path answers through the gateway with its backend's answer (p50, p99, total) and
 * the operator's peak memory, against 1,000 ApiDefinitions applied and timed the same way in the
 * same run, each phase on a fresh gateway and a fresh operator watching its own namespace (as the
 * Ingress benchmark). Figures go to the "Gateway API" section of docs/benchmarks.md.
 *
 * `SVC_BENCH_ONLY=httproutes make bench-operator` runs this part alone; `node
 * e2e/bench/httproute-bench.ts` too.
 */
import { cpus, loadavg } from 'node:os';
import {
  SVC_GATEWAY_CLASS,
  endpointService,
  hostAddress,
  installGatewayApiCrds,
} from '../harness/gateway-api.ts';
import { startEchoUpstream, waitFor, type GatewayProc } from '../harness/processes.ts';
import { APPLIERS, applyAll, summarize, timeToServe, type Run } from './serving.ts';
import { onFreshGateway, operatorMemory, startBenchStack, writeSection } from './stack.ts';

/** `SVC_BENCH_HTTPROUTES=200` runs another size (0 leaves the part out of `make bench-operator`). */
export const HTTP_ROUTES = Number(process.env.SVC_BENCH_HTTPROUTES ?? '1000');
/** `SVC_BENCH_WRITE=0`: print the section without writing docs/benchmarks.md (a trial run). */
const WRITE = process.env.SVC_BENCH_WRITE !== '0';
const API_NS = 'bench-api';
const ROUTE_NS = 'bench-gwapi';

/**
 * One phase's figures: the times, when the last apply returned, the operator's peak memory, and
 * how many times the gateway rebuilt its route table (its start's aside).
 */
interface Phase extends Run {
  applied: number;
  peakRssMiB: number;
  reloads: number;
}

/**
 * The HTTPRoute row against the ApiDefinition row, measured in a control plane of its own;
 * writes the "Gateway API" section of docs/benchmarks.md (unless SVC_BENCH_WRITE=0).
 */
export async function httpRoutesBench(n = HTTP_ROUTES): Promise<void> {
  const loadBefore = loadavg()[0] ?? NaN;
  const stack = await startBenchStack('httproute', API_NS);
  const { cp } = stack;
  // An upstream answering 200 with `x-upstream: echo` (what the probes look for), on an address
  // EndpointSlices may name.
  const host = hostAddress();
  const upstream = await startEchoUpstream('echo', { host });

  /**
   * One phase on a fresh gateway (neither phase reloads the other's APIs) and a fresh operator
   * watching `namespace`; `ready` runs once the operator is up, before the clock starts.
   */
  async function phase(
    namespace: string,
    manifests: string[],
    paths: string[],
    ready: (gw: GatewayProc) => Promise<void>,
  ): Promise<Phase> {
    return onFreshGateway(
      stack,
      namespace,
      'bench-httproute-secret',
      () => ({ SVC_INGRESS_ADDRESS: '127.0.0.1' }),
      async (gw, operator) => {
        await ready(gw);
        const t0 = Date.now();
        const serving = timeToServe(gw, paths, t0);
        const applied = (await applyAll(cp, manifests)) - t0;
        const run = summarize(n, await serving);
        const reloads =
          gw
            .log()
            .split('\n')
            .filter((l) => l.includes('"message":"routes loaded"')).length - 1;
        return { ...run, applied, reloads, peakRssMiB: (await operatorMemory(operator)).peakRssMiB };
      },
    );
  }

  let apis: Phase;
  let routes: Phase;
  let generated: number;
  try {
    await installGatewayApiCrds(cp);
    await cp.kubectl(['create', 'namespace', ROUTE_NS]);
    apis = await phase(
      API_NS,
      Array.from(
        { length: n },
        (_, i) => `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: api-${String(i)}, namespace: ${API_NS}}
spec:
  name: api-${String(i)}
  use_keyless: true
  proxy: {listen_path: /api-${String(i)}/, target_url: "${upstream.url}"}
`,
      ),
      Array.from({ length: n }, (_, i) => `/api-${String(i)}/`),
      () => Promise.resolve(),
    );
    console.log(`ApiDefinitions: ${JSON.stringify(apis)}`);
    routes = await phase(
      ROUTE_NS,
      Array.from(
        { length: n },
        (_, i) => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: route-${String(i)}, namespace: ${ROUTE_NS}}
spec:
  parentRefs: [{name: edge}]
  rules:
    - matches: [{path: {type: PathPrefix, value: /route-${String(i)}}}]
      backendRefs: [{name: echo, port: 80}]
`,
      ),
      Array.from({ length: n }, (_, i) => `/route-${String(i)}/`),
      async (gw) => {
        // The class, the Gateway (a listener on the gateway's own port, as the Ingress port by
        // default) and the backend, Accepted before the clock starts: the routes alone are timed.
        await cp.kubectl(['apply', '--server-side', '-f', '-'], {
          input: `${SVC_GATEWAY_CLASS}---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: edge, namespace: ${ROUTE_NS}}
spec:
  gatewayClassName: svc
  listeners:
    - {name: http, port: ${String(gw.port)}, protocol: HTTP, allowedRoutes: {namespaces: {from: Same}}}
---
${endpointService(ROUTE_NS, 'echo', host, upstream.port)}`,
        });
        await waitFor(
          'Gateway edge Accepted',
          async () => {
            const out = await cp.kubectl([
              'get',
              'gateways.gateway.networking.k8s.io',
              'edge',
              '-n',
              ROUTE_NS,
              '-o',
              'jsonpath={.status.conditions[?(@.type=="Accepted")].status}',
            ]);
            return out.stdout.trim() === 'True';
          },
          60_000,
          200,
        );
      },
    );
    console.log(`HTTPRoutes: ${JSON.stringify(routes)}`);
    // The ApiDefinitions the Gateway's routes became (labelled with their Gateway).
    generated = (
      await cp.kubectl(['get', 'apidefinitions', '-n', ROUTE_NS, '-l', 'svc.io/gateway=edge', '-o', 'name'])
    ).stdout
      .split('\n')
      .filter((l) => l !== '').length;
  } finally {
    await upstream.close();
    await stack.stop();
  }

  const loadAfter = loadavg()[0] ?? NaN;
  const fmt = (ms: number): string => (ms / 1000).toFixed(2);
  const row = (what: string, r: Phase): string =>
    `| ${what} | ${fmt(r.applied)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.total)} | ${r.peakRssMiB.toFixed(0)} | ${String(r.reloads)} |`;
  const section = `## Gateway API

Time from \`kubectl apply\` (server-side, ${String(APPLIERS)} kubectl processes at once) of ${String(n)} HTTPRoutes
attached to one Gateway (class of \`svc.io/gateway-controller\`, one HTTP listener on the
gateway's own port), each its own path prefix (\`/route-<i>\`) and its backend a Service whose
EndpointSlice points at a local upstream, until each route's path answers through the gateway
with its backend's answer, against ${String(n)} ApiDefinitions applied and timed the same way in the same
run (each phase on a fresh operator watching its own namespace and a fresh gateway; the class,
the Gateway, Accepted, and the Service with its EndpointSlice in place before the clock
starts). The operator turns the Gateway's routes into the ApiDefinitions it owns
(${String(generated)} for these ${String(n)} routes), the whole Gateway at a time, and writes each route's
status: more API-server writes per route than an ApiDefinition costs. Seconds; memory is the
operator's peak resident (VmHWM). No admission webhooks in either phase.
Machine: ${String(cpus().length)} cores (${cpus()[0]?.model ?? 'unknown CPU'}), shared with other work: load average
${loadBefore.toFixed(2)} before the run and ${loadAfter.toFixed(2)} after it (1 min); generated by \`make bench-operator\`
(\`SVC_BENCH_ONLY=httproutes\` runs this part alone) on ${new Date().toISOString().slice(0, 10)}.

| ${String(n)} of | applied | p50 | p99 | total | peak RSS (MiB) | gateway reloads |
|---|---|---|---|---|---|---|
${row('ApiDefinitions', apis)}
${row('HTTPRoutes (one Gateway)', routes)}

HTTPRoutes against ApiDefinitions, p99: ${(routes.p99 / apis.p99).toFixed(2)}; total: ${(routes.total / apis.total).toFixed(2)}.

What an HTTPRoute costs beyond an ApiDefinition (read from the code, not timed apart): one
Gateway is one key of the operator's work queue, and its reconcile
(\`operator/controllers/gateway-api/reconcile.ts\`) creates the ApiDefinitions it generates one
after the other, then patches each route's status one after the other; the routes of one Gateway
go through one worker, where the ApiDefinition controller reconciles many ApiDefinitions at once
(512 workers). The generated APIs reach the gateway as they are created, a few at a time, and
each batch rebuilds its route table ("gateway reloads": \`routes loaded\` in its log, its start
aside).
`;
  console.log(section);
  if (WRITE) await writeSection('Gateway API', section);
}

if (import.meta.main && HTTP_ROUTES > 0) await httpRoutesBench();
