/**
 * What the operator benchmarks share: the stack they run (a control plane with the CRDs, an echo
 * upstream, a gateway, the namespaces), the operator's memory as /proc and its /metrics tell it,
 * and the writing of one section of docs/benchmarks.md.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import {
  httpRequest,
  startEchoUpstream,
  startGateway,
  startOperator,
  type GatewayProc,
  type OperatorProc,
} from '../harness/processes.ts';

export const root = join(import.meta.dirname, '..', '..');

/** A control plane, an upstream and a gateway, with `namespace` and the operator's namespace. */
export interface BenchStack {
  dir: string;
  cp: ControlPlane;
  upstream: { url: string; close: () => Promise<void> };
  gw: GatewayProc;
  secret: string;
  stop: () => Promise<void>;
}

export async function startBenchStack(name: string, namespace: string): Promise<BenchStack> {
  const dir = await mkdtemp(join(tmpdir(), `svc-bench-${name}-`));
  const cp = await startControlPlane({ crdDir: join(root, 'charts', 'svc-operator', 'crds') });
  const upstream = await startEchoUpstream();
  const secret = `${name}-secret`;
  const gw = await startGateway({ name: 'gateway', secret, dataDir: join(dir, 'gw'), logDir: dir });
  await cp.kubectl(['create', 'namespace', namespace]);
  await cp.kubectl(['create', 'namespace', 'svc-operator-system']);
  return {
    dir,
    cp,
    upstream,
    gw,
    secret,
    stop: async () => {
      await gw.stop();
      await upstream.close();
      await cp.stop();
    },
  };
}

/**
 * The operator of one phase of a benchmark: organisation `org` against `gw`, watching `namespace`
 * alone, logging at SVC_BENCH_LOG_LEVEL (default warn), with `env` besides.
 */
export function startPhaseOperator(
  stack: Pick<BenchStack, 'dir' | 'cp'>,
  gw: GatewayProc,
  namespace: string,
  org: string,
  env: Record<string, string> = {},
): Promise<OperatorProc> {
  return startOperator({
    name: `operator-${namespace}`,
    gateway: gw,
    kubeconfig: stack.cp.kubeconfig,
    logDir: stack.dir,
    org,
    env: { LOG_LEVEL: process.env.SVC_BENCH_LOG_LEVEL ?? 'warn', WATCH_NAMESPACE: namespace, ...env },
  });
}

/**
 * Runs one phase of a benchmark on a fresh gateway (so neither phase reloads the other's APIs)
 * and a fresh operator of organisation `bench` watching `namespace` (its `env` given the
 * gateway); stops both after.
 */
export async function onFreshGateway<T>(
  stack: Pick<BenchStack, 'dir' | 'cp'>,
  namespace: string,
  secret: string,
  env: (gw: GatewayProc) => Record<string, string>,
  run: (gw: GatewayProc, operator: OperatorProc) => Promise<T>,
): Promise<T> {
  let operator: OperatorProc | undefined;
  const gw = await startGateway({
    name: `gateway-${namespace}`,
    secret,
    dataDir: join(stack.dir, `gw-${namespace}`),
    logDir: stack.dir,
  });
  try {
    operator = await startPhaseOperator(stack, gw, namespace, 'bench', env(gw));
    return await run(gw, operator);
  } finally {
    await operator?.stop();
    await gw.stop();
  }
}

/** The operator's memory now: peak resident (VmHWM), resident (VmRSS), V8 heap in use (MiB). */
export async function operatorMemory(
  op: OperatorProc,
): Promise<{ peakRssMiB: number; rssMiB: number; heapUsedMiB: number }> {
  const status = readFileSync(`/proc/${op.pid}/status`, 'utf8');
  const metrics = (await httpRequest(`${op.opsUrl}/metrics`)).body;
  const kib = (field: string): number =>
    Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  const heap = Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(metrics)?.[1] ?? NaN);
  return { peakRssMiB: kib('VmHWM'), rssMiB: kib('VmRSS'), heapUsedMiB: heap / 1024 / 1024 };
}

/** The "Operator" section of docs/benchmarks.md (at `docPath`), and how to write it back changed. */
async function operatorSection(
  docPath: string,
): Promise<{ section: string; replace: (text: string) => Promise<void> }> {
  const doc = await readFile(docPath, 'utf8');
  const re = /## Operator\n[\s\S]*?(?=\n## |$)/;
  const section = re.exec(doc)?.[0];
  if (section === undefined)
    throw new Error('docs/benchmarks.md has no Operator section: run make bench-operator');
  return {
    section,
    replace: (text) =>
      writeFile(
        docPath,
        doc.replace(re, () => text),
      ),
  };
}

/**
 * Puts the ApiKey row (and its note) into the existing "Operator" section of docs/benchmarks.md,
 * in place of the ones there, or after the SecurityPolicy row and its note; the other figures
 * of the section stay as their run wrote them.
 */
export async function writeKeysRow(
  row: string,
  note: string,
  docPath = join(root, 'docs', 'benchmarks.md'),
): Promise<void> {
  const { section, replace } = await operatorSection(docPath);
  const lines = section.split('\n');
  const withoutOld = lines.filter(
    (l) => !/^\| \d+ ApiKeys /.test(l) && l !== '| ApiKeys | - | - | - | - | - | - |',
  );
  const policyRow = withoutOld.findIndex((l) => l.includes(' SecurityPolicies ') && l.startsWith('| '));
  const lastRow = policyRow >= 0 ? policyRow : withoutOld.findLastIndex((l) => l.startsWith('| '));
  withoutOld.splice(lastRow + 1, 0, row);
  let text = withoutOld.join('\n');
  const oldNote = /\nThe ApiKey row: [\s\S]*?\n(?=\n)/;
  if (oldNote.test(text)) text = text.replace(oldNote, () => `\n${note}\n`);
  else {
    const polNote = /\nThe SecurityPolicy row: [\s\S]*?\n(?=\n)/;
    text = polNote.test(text)
      ? text.replace(polNote, (m) => `${m}${note}\n`)
      : text.replace(row, () => `${row}\n\n${note}`);
  }
  await replace(text);
}

/**
 * Puts the changing-API probe's block (`### An API being changed` and what follows it, the last
 * part of the "Operator" section of docs/benchmarks.md) in place of the one there, or at the end
 * of that section; the other figures of the section stay as their run wrote them.
 */
export async function writeProbeBlock(
  block: string,
  docPath = join(root, 'docs', 'benchmarks.md'),
): Promise<void> {
  const { section, replace } = await operatorSection(docPath);
  const at = section.indexOf('### An API being changed');
  const text = `${(at < 0 ? section : section.slice(0, at)).trimEnd()}\n\n${block.trimEnd()}\n`;
  await replace(text);
}

/**
 * Writes the Operator section's "One change at a time" block (`SVC_BENCH_ONLY=changes`), before
 * the changing-API probe's block, the rest of the section as it was.
 */
export async function writeChangesBlock(
  block: string,
  docPath = join(root, 'docs', 'benchmarks.md'),
): Promise<void> {
  const { section, replace } = await operatorSection(docPath);
  const heading = '### One change at a time';
  const at = section.indexOf(heading);
  const probe = section.indexOf('### An API being changed');
  const start = at >= 0 ? at : probe >= 0 ? probe : section.length;
  const next = at >= 0 ? section.indexOf('\n### ', at + heading.length) : start;
  const end = next < 0 ? section.length : at >= 0 ? next + 1 : next;
  const before = section.slice(0, start).trimEnd();
  const after = section.slice(end).trimStart();
  await replace(`${before}\n\n${block.trimEnd()}\n${after === '' ? '' : `\n${after}`}`);
}

/** Replaces (or appends) the section `## <heading>` of docs/benchmarks.md with `section`. */
export async function writeSection(heading: string, section: string): Promise<void> {
  const docPath = join(root, 'docs', 'benchmarks.md');
  const doc = await readFile(docPath, 'utf8').catch(
    () => '# Benchmarks\n\nFigures written by `make bench`.\n',
  );
  const re = new RegExp(`## ${heading}\\n[\\s\\S]*?(?=\\n## |$)`);
  // The match stops before the next heading's "\n## ": the section ends with a newline of its own so
  // that a blank line stays between them.
  const replaced = re.test(doc)
    ? doc.replace(re, () => `${section.trimEnd()}\n`)
    : `${doc.trimEnd()}\n\n${section}`;
  await writeFile(docPath, replaced.endsWith('\n') ? replaced : `${replaced}\n`);
}
