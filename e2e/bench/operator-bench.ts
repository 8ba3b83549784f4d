/**
 * `make bench` (operator part): apply 10, 100 and 1000 ApiDefinitions and measure the time until
 * each serves traffic through the gateway (p50, p99, total) and the operator's peak memory. The
 * reference, in the same run, is the same number of APIs written straight to the gateway's
 * management API with one group reload: the floor the operator adds its work to.
 * Figures go to the "Operator" section of docs/benchmarks.md.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { startControlPlane } from '../harness/control-plane.ts';
import {
  httpRequest,
  startEchoUpstream,
  startGateway,
  startOperator,
  type GatewayProc,
  type OperatorProc,
} from '../harness/processes.ts';

const root = join(import.meta.dirname, '..', '..');
const SIZES = [10, 100, 1000];
const TIMEOUT_MS = 180_000;

interface Run {
  n: number;
  p50: number;
  p99: number;
  total: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/**
 * Polls every path until it reaches the upstream; returns each one's time since `t0`. Requests go
 * over a small keep-alive pool, so the poller takes little of the CPU the operator needs.
 */
async function timeToServe(gw: GatewayProc, paths: string[], t0: number): Promise<number[]> {
  const pool = new Pool(gw.url, { connections: 8, pipelining: 1 });
  const done = new Map<string, number>();
  const deadline = t0 + TIMEOUT_MS;
  while (done.size < paths.length) {
    if (Date.now() > deadline)
      throw new Error(`${paths.length - done.size} APIs not serving after ${TIMEOUT_MS} ms`);
    const pending = paths.filter((p) => !done.has(p));
    for (let i = 0; i < pending.length; i += 64) {
      await Promise.all(
        pending.slice(i, i + 64).map(async (p) => {
          const r = await pool.request({ method: 'GET', path: `${p}probe` });
          await r.body.dump();
          if (r.statusCode === 200 && r.headers['x-upstream'] !== undefined) done.set(p, Date.now() - t0);
        }),
      );
    }
  }
  await pool.close();
  return paths.map((p) => done.get(p) ?? NaN);
}

function summarize(n: number, times: number[]): Run {
  const sorted = [...times].sort((a, b) => a - b);
  return { n, p50: percentile(sorted, 50), p99: percentile(sorted, 99), total: sorted.at(-1) ?? NaN };
}

const dir = await mkdtemp(join(tmpdir(), 'svc-bench-operator-'));
const cp = await startControlPlane({ crdDir: join(root, 'charts', 'svc-operator', 'crds') });
const upstream = await startEchoUpstream();
const secret = 'bench-secret';
const gw = await startGateway({ name: 'gateway', secret, dataDir: join(dir, 'gw'), logDir: dir });
await cp.kubectl(['create', 'namespace', 'bench']);
await cp.kubectl(['create', 'namespace', 'svc-operator-system']);
let operator: OperatorProc | undefined;

const results: { operator: Run[]; direct: Run[]; peakRssMiB: number } = {
  operator: [],
  direct: [],
  peakRssMiB: 0,
};
try {
  operator = await startOperator({
    name: 'operator',
    gateway: gw,
    kubeconfig: cp.kubeconfig,
    logDir: dir,
    org: 'bench',
    env: { LOG_LEVEL: 'warn' },
  });
  for (const n of SIZES) {
    // Through the operator: one kubectl apply of n manifests.
    const paths = Array.from({ length: n }, (_, i) => `/op-${n}-${i}/`);
    const manifests = paths.map(
      (p, i) => `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: op-${n}-${i}, namespace: bench}
spec:
  name: op-${n}-${i}
  use_keyless: true
  proxy: {listen_path: ${p}, target_url: "${upstream.url}", strip_listen_path: true}
`,
    );
    const t0 = Date.now();
    await cp.kubectl(['apply', '--server-side', '-f', '-'], { input: manifests.join('---\n') });
    results.operator.push(summarize(n, await timeToServe(gw, paths, t0)));

    // Reference: the same APIs written straight to the gateway, then one group reload.
    const direct = Array.from({ length: n }, (_, i) => `/direct-${n}-${i}/`);
    const t1 = Date.now();
    for (let i = 0; i < direct.length; i += 16) {
      await Promise.all(
        direct.slice(i, i + 16).map(async (p, j) => {
          const r = await httpRequest(`${gw.url}/svc/apis`, {
            method: 'POST',
            headers: { 'x-svc-authorization': secret, 'content-type': 'application/json' },
            body: JSON.stringify({
              api_id: `direct-${n}-${i + j}`,
              name: `direct-${n}-${i + j}`,
              use_keyless: true,
              proxy: { listen_path: p, target_url: upstream.url, strip_listen_path: true },
            }),
          });
          if (r.status !== 200) throw new Error(`POST /svc/apis: ${r.status} ${r.body}`);
        }),
      );
    }
    await httpRequest(`${gw.url}/svc/reload/group`, { headers: { 'x-svc-authorization': secret } });
    results.direct.push(summarize(n, await timeToServe(gw, direct, t1)));
    console.log(
      `n=${n}: operator ${JSON.stringify(results.operator.at(-1))}, direct ${JSON.stringify(results.direct.at(-1))}`,
    );
  }
  const status = readFileSync(`/proc/${operator.pid}/status`, 'utf8');
  results.peakRssMiB = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
} finally {
  await operator?.stop();
  await gw.stop();
  await upstream.close();
  await cp.stop();
}

const fmt = (ms: number): string => (ms / 1000).toFixed(2);
const rows = SIZES.map((n, i) => {
  const o = results.operator[i];
  const d = results.direct[i];
  if (!o || !d) return `| ${n} | - | - | - | - | - |`;
  return `| ${n} | ${fmt(o.p50)} | ${fmt(o.p99)} | ${fmt(o.total)} | ${fmt(d.total)} | ${(o.total / d.total).toFixed(1)}x |`;
});
const last = results.operator.at(-1);
const section = `## Operator

Time from \`kubectl apply\` of N ApiDefinitions (one apply, server-side) until each one serves
traffic through the gateway, against the same N APIs written straight to the gateway's
management API with one group reload (the reference, same run, same gateway). Seconds.
Machine: ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}); generated by \`make bench\` on ${new Date().toISOString().slice(0, 10)}.

| N | p50 | p99 | total | reference total | ratio |
|---|---|---|---|---|---|
${rows.join('\n')}

Operator peak memory (VmHWM): ${results.peakRssMiB.toFixed(0)} MiB.
Target: 1000 APIs serving within 30 s — ${last && last.total <= 30_000 ? 'met' : 'missed'} (${last ? fmt(last.total) : '-'} s).
`;

const docPath = join(root, 'docs', 'benchmarks.md');
const doc = await readFile(docPath, 'utf8').catch(() => '# Benchmarks\n\nFigures written by `make bench`.\n');
const replaced = /## Operator\n[\s\S]*?(?=\n## |$)/.test(doc)
  ? doc.replace(/## Operator\n[\s\S]*?(?=\n## |$)/, section.trimEnd())
  : `${doc.trimEnd()}\n\n${section}`;
await writeFile(docPath, replaced.endsWith('\n') ? replaced : `${replaced}\n`);
console.log(section);
