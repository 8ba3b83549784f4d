/**
 * `make bench` (ingress part): 1,000 Ingresses (one host, one path each) from `kubectl apply` until
 * each serves traffic through the gateway's HTTP ingress port (p50, p99, total) and the
 * operator's peak memory, beside 1,000 ApiDefinitions in the same run, each phase on a fresh
 * operator watching its own namespace. Target: the Ingress figure within 1.2 of the ApiDefinition
 * one. Figures go to the "Ingress" section of docs/benchmarks.md.
 */
import { cpus } from 'node:os';
import { Pool } from 'undici';
import { APPLIERS, applyAll } from './serving.ts';
import { onFreshGateway, operatorMemory, startBenchStack, writeSection } from './stack.ts';

/** `SVC_BENCH_INGRESSES=200` runs another size. */
const N = Number(process.env.SVC_BENCH_INGRESSES ?? '1000');
const timeoutMs = Math.max(180_000, N * 40);

interface Run {
  p50: number;
  p99: number;
  total: number;
  applied: number;
  peakRssMiB: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** One probe: a host (undefined: any) and a path, on a port. */
interface Probe {
  host?: string;
  path: string;
}

/** Polls each probe until the upstream answers it; returns each one's time since `t0`. */
async function timeToServe(port: number, probes: Probe[], t0: number): Promise<number[]> {
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 8, pipelining: 1 });
  const done = new Map<number, number>();
  const deadline = t0 + timeoutMs;
  while (done.size < probes.length) {
    if (Date.now() > deadline)
      throw new Error(`${probes.length - done.size} not serving after ${timeoutMs} ms`);
    // The first pending ones of each applier's share (they are applied in order within it).
    const share = Math.ceil(probes.length / APPLIERS);
    const pending: number[] = [];
    for (let a = 0; a < APPLIERS; a++) {
      let taken = 0;
      for (let i = a * share; i < Math.min(probes.length, (a + 1) * share) && taken < 64; i++) {
        if (!done.has(i)) {
          pending.push(i);
          taken++;
        }
      }
    }
    for (let i = 0; i < pending.length; i += 64) {
      await Promise.all(
        pending.slice(i, i + 64).map(async (k) => {
          const probe = probes[k];
          if (!probe) return;
          try {
            const r = await pool.request({
              method: 'GET',
              path: `${probe.path}probe`,
              headers: probe.host === undefined ? {} : { host: probe.host },
            });
            await r.body.dump();
            if (r.statusCode === 200 && r.headers['x-upstream'] !== undefined) done.set(k, Date.now() - t0);
          } catch {
            // The ingress port opens with the first API on it.
          }
        }),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await pool.close();
  return probes.map((_, k) => done.get(k) ?? NaN);
}

const stack = await startBenchStack('ingress', 'bench-api');
const { cp, upstream } = stack;
const upstreamPort = Number(new URL(upstream.url).port);
await cp.kubectl(['create', 'namespace', 'bench-ing']);

/**
 * Runs one phase on a fresh gateway (so neither phase reloads the other's APIs) and a fresh
 * operator watching `namespace`. The HTTP ingress port is the gateway's own port, as by default
 * (both 8080).
 */
async function phase(namespace: string, manifests: string[], probes: Probe[]): Promise<Run> {
  return onFreshGateway(
    stack,
    namespace,
    'bench-ingress-secret',
    (gw) => ({ SVC_HTTP_INGRESS_PORT: String(gw.port) }),
    async (gw, operator) => {
      const t0 = Date.now();
      const serving = timeToServe(gw.port, probes, t0);
      const applied = (await applyAll(cp, manifests)) - t0;
      const sorted = (await serving).sort((a, b) => a - b);
      const mem = await operatorMemory(operator);
      return {
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
        total: sorted.at(-1) ?? NaN,
        applied,
        peakRssMiB: mem.peakRssMiB,
      };
    },
  );
}

let apis: Run;
let ingresses: Run;
try {
  apis = await phase(
    'bench-api',
    Array.from(
      { length: N },
      (_, i) => `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: api-${i}, namespace: bench-api}
spec:
  name: api-${i}
  use_keyless: true
  proxy: {listen_path: /api-${i}/, target_url: "${upstream.url}"}
`,
    ),
    Array.from({ length: N }, (_, i) => ({ path: `/api-${i}/` })),
  );
  console.log(`ApiDefinitions: ${JSON.stringify(apis)}`);
  await cp.kubectl(['apply', '--server-side', '-f', '-'], {
    input: `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: svc}
spec: {controller: svc.io/ingress-controller}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: bench-ing}
spec: {type: ExternalName, externalName: 127.0.0.1, ports: [{name: http, port: ${upstreamPort}}]}
`,
  });
  ingresses = await phase(
    'bench-ing',
    Array.from(
      { length: N },
      (_, i) => `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing-${i}, namespace: bench-ing}
spec:
  ingressClassName: svc
  rules:
    - host: h-${i}.bench
      http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {name: http}}}}]}
`,
    ),
    Array.from({ length: N }, (_, i) => ({ host: `h-${i}.bench`, path: '/' })),
  );
  console.log(`Ingresses: ${JSON.stringify(ingresses)}`);
} finally {
  await stack.stop();
}

const fmt = (ms: number): string => (ms / 1000).toFixed(2);
const row = (what: string, r: Run): string =>
  `| ${what} | ${fmt(r.applied)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.total)} | ${r.peakRssMiB.toFixed(0)} |`;
const ratio = ingresses.p99 / apis.p99;
const section = `## Ingress

Time from \`kubectl apply\` (server-side, ${APPLIERS} kubectl processes at once) of ${N} Ingresses, one
host and one path each, until each serves traffic through the gateway's HTTP ingress port (its own
port, as by default), beside
${N} ApiDefinitions in the same run (each phase on a fresh operator watching its own namespace;
each on a fresh gateway too). An Ingress costs one more API-server write than an ApiDefinition: the operator
creates the ApiDefinition it owns. Seconds; memory is the operator's peak resident (VmHWM).
Machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}); generated by \`make bench\` on ${new Date().toISOString().slice(0, 10)}.

| ${N} of | applied | p50 | p99 | total | peak RSS (MiB) |
|---|---|---|---|---|---|
${row('ApiDefinitions', apis)}
${row('Ingresses', ingresses)}

Target (issue "Ingress controller"): Ingress p99 within 1.2 of the ApiDefinition p99 in the same
run: **${ratio <= 1.2 ? 'met' : 'missed'}** (${ratio.toFixed(2)}).

With \`SVC_HTTP_INGRESS_PORT\` on a port of its own, the generated APIs carry that \`listen_port\`;
the gateway checks each such write against its index of claimed ports and protocols
(\`gateway/admin/listeners.ts\`), no longer by reading its whole store.
`;
await writeSection('Ingress', section);
console.log(section);
