/**
 * `make bench-soak` (part of `make bench`): the operator under steady churn. 1000 ApiDefinitions
 * are applied, then for SVC_SOAK_MINUTES (default 30) one change a second: an API's upstream path
 * is changed in turn (an update the operator pushes and the gateway reloads). Every 30 s the
 * operator's resident memory and V8 heap in use are sampled (after a GC the process chooses, so
 * the heap figure is the highest of the last samples' floor). After a warm-up of a fifth of the
 * run, the heap must not grow: the figures and the growth per hour go to the "Operator soak"
 * section of docs/benchmarks.md. Every change is checked to have been served at the end.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane } from '../harness/control-plane.ts';
import {
  httpRequest,
  startEchoUpstream,
  startGateway,
  startOperator,
  waitFor,
  type OperatorProc,
} from '../harness/processes.ts';

const root = join(import.meta.dirname, '..', '..');
const MINUTES = Number(process.env.SVC_SOAK_MINUTES ?? '30');
const OBJECTS = 1000;
const SAMPLE_MS = 30_000;

interface Sample {
  atS: number;
  rssMiB: number;
  heapMiB: number;
}

async function sample(op: OperatorProc, t0: number): Promise<Sample> {
  const status = readFileSync(`/proc/${op.pid}/status`, 'utf8');
  const metrics = (await httpRequest(`${op.opsUrl}/metrics`)).body;
  const heap = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(metrics)?.[1] ?? NaN);
  return {
    atS: Math.round((Date.now() - t0) / 1000),
    rssMiB: Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024,
    heapMiB: heap / 1024 / 1024,
  };
}

/** Least-squares slope of y over x. */
function slope(points: { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const num = points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  return num / den;
}

const dir = await mkdtemp(join(tmpdir(), 'svc-bench-soak-'));
const cp = await startControlPlane({ crdDir: join(root, 'charts', 'svc-operator', 'crds') });
const upstream = await startEchoUpstream();
const secret = 'soak-secret';
const gw = await startGateway({ name: 'gateway', secret, dataDir: join(dir, 'gw'), logDir: dir });
await cp.kubectl(['create', 'namespace', 'soak']);
await cp.kubectl(['create', 'namespace', 'svc-operator-system']);
let operator: OperatorProc | undefined;
const samples: Sample[] = [];
let changes = 0;
try {
  operator = await startOperator({
    name: 'operator',
    gateway: gw,
    kubeconfig: cp.kubeconfig,
    logDir: dir,
    org: 'soak',
    env: { LOG_LEVEL: 'warn' },
  });
  const manifest = (i: number, version: number): string => `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: soak-${i}, namespace: soak}
spec:
  name: soak-${i}
  use_keyless: true
  proxy: {listen_path: /soak-${i}/, target_url: "${upstream.url}/v${version}", strip_listen_path: true}
`;
  await cp.kubectl(['apply', '--server-side', '-f', '-'], {
    input: Array.from({ length: OBJECTS }, (_, i) => manifest(i, 0)).join('---\n'),
  });
  const served = async (i: number, version: number): Promise<boolean> => {
    const r = await httpRequest(`${gw.url}/soak-${i}/x`);
    return r.status === 200 && (JSON.parse(r.body) as { path?: string }).path === `/v${version}/x`;
  };
  await waitFor('the first API served', () => served(OBJECTS - 1, 0), 300_000);

  const t0 = Date.now();
  const end = t0 + MINUTES * 60_000;
  let nextSample = t0;
  const version = new Array<number>(OBJECTS).fill(0);
  while (Date.now() < end) {
    const started = Date.now();
    if (started >= nextSample) {
      samples.push(await sample(operator, t0));
      nextSample += SAMPLE_MS;
    }
    const i = changes % OBJECTS;
    version[i] = (version[i] ?? 0) + 1;
    await cp.kubectl(['apply', '--server-side', '-f', '-'], { input: manifest(i, version[i] ?? 0) });
    changes++;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 - (Date.now() - started))));
  }
  samples.push(await sample(operator, t0));
  // Every API serves its latest version.
  for (let i = 0; i < OBJECTS; i++) {
    const v = version[i] ?? 0;
    await waitFor(`soak-${i} serving version ${v}`, () => served(i, v), 60_000);
  }
} finally {
  await operator?.stop();
  await gw.stop();
  await upstream.close();
  await cp.stop();
}

const warm = samples.filter((s) => s.atS >= (MINUTES * 60) / 5);
const perHour = (key: 'heapMiB' | 'rssMiB'): number =>
  slope(warm.map((s) => ({ x: s.atS / 3600, y: s[key] })));
const max = (key: 'heapMiB' | 'rssMiB', from: Sample[]): number => Math.max(...from.map((s) => s[key]));
const min = (key: 'heapMiB' | 'rssMiB', from: Sample[]): number => Math.min(...from.map((s) => s[key]));
const heapGrowth = perHour('heapMiB');
const section = `## Operator soak

${MINUTES} minutes of steady churn on ${OBJECTS} ApiDefinitions: one change a second (an API's upstream
path, in turn; ${changes} changes, every one served at the end), the operator's memory sampled every
${SAMPLE_MS / 1000} s. Warm-up: the first fifth of the run. Machine: ${cpus().length} cores; generated by
\`make bench\` on ${new Date().toISOString().slice(0, 10)}.

| | after warm-up: min | max | trend (least squares) |
|---|---|---|---|
| V8 heap in use (MiB) | ${min('heapMiB', warm).toFixed(1)} | ${max('heapMiB', warm).toFixed(1)} | ${heapGrowth.toFixed(2)} MiB/hour |
| resident (MiB) | ${min('rssMiB', warm).toFixed(1)} | ${max('rssMiB', warm).toFixed(1)} | ${perHour('rssMiB').toFixed(2)} MiB/hour |

Samples (s: heap MiB / RSS MiB): ${samples.map((s) => `${s.atS}: ${s.heapMiB.toFixed(0)}/${s.rssMiB.toFixed(0)}`).join(', ')}.

Flat heap after warm-up (trend under 5 MiB/hour): **${heapGrowth < 5 ? 'met' : 'missed'}**.
`;
const docPath = join(root, 'docs', 'benchmarks.md');
const doc = await readFile(docPath, 'utf8');
const re = /## Operator soak\n[\s\S]*?(?=\n## |$)/;
const replaced = re.test(doc) ? doc.replace(re, section.trimEnd()) : `${doc.trimEnd()}\n\n${section}`;
await writeFile(docPath, replaced.endsWith('\n') ? replaced : `${replaced}\n`);
console.log(section);
