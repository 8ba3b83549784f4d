/**
 * What the ApiDefinition benchmarks share (the operator one, mode ce and mode pro): applying
 * manifests as GitOps tools do, polling the gateway until each API serves traffic, and the
 * summary of the times (p50, p99, total).
 */
import { Pool } from 'undici';
import type { ControlPlane } from '../harness/control-plane.ts';
import type { GatewayProc } from '../harness/processes.ts';

/** Longest wait for n objects to converge. */
export const timeoutMs = (n: number): number => Math.max(180_000, n * 40);

/** Times of one burst (ms). */
export interface Run {
  n: number;
  p50: number;
  p99: number;
  total: number;
  /** Through the operator: when the last apply returned (ms since the start). */
  applied?: number;
}

/** Parallel `kubectl apply` processes, as GitOps tools apply a folder concurrently. */
export const APPLIERS = 8;

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** Paths probed per applier's share in one polling round. */
const WINDOW = 64;

/**
 * Polls the paths until each reaches the upstream; returns each one's time since `t0`. Requests go
 * over a small keep-alive pool, and each round probes only the first WINDOW paths still pending of
 * each applier's share (objects are applied, so served, in order within a share): probing all of
 * 10,000 pending paths every round would load the gateway more than the operator does. A path
 * served while out of the window is seen when the window reaches it: times err late, never early.
 */
export async function timeToServe(
  gw: Pick<GatewayProc, 'url'>,
  paths: string[],
  t0: number,
): Promise<number[]> {
  const pool = new Pool(gw.url, { connections: 8, pipelining: 1 });
  const done = new Map<string, number>();
  const deadline = t0 + timeoutMs(paths.length);
  const share = Math.ceil(paths.length / APPLIERS);
  const shares = Array.from({ length: APPLIERS }, (_, i) => paths.slice(i * share, (i + 1) * share));
  while (done.size < paths.length) {
    if (Date.now() > deadline)
      throw new Error(`${paths.length - done.size} APIs not serving after ${timeoutMs(paths.length)} ms`);
    const pending = shares.flatMap((part) => part.filter((p) => !done.has(p)).slice(0, WINDOW));
    for (let i = 0; i < pending.length; i += 64) {
      await Promise.all(
        pending.slice(i, i + 64).map(async (p) => {
          const r = await pool.request({ method: 'GET', path: `${p}probe` });
          await r.body.dump();
          if (r.statusCode === 200 && r.headers['x-upstream'] !== undefined) done.set(p, Date.now() - t0);
        }),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await pool.close();
  return paths.map((p) => done.get(p) ?? NaN);
}

export function summarize(n: number, times: number[]): Run {
  const sorted = [...times].sort((a, b) => a - b);
  if (process.env.SVC_BENCH_DECILES)
    console.log(
      'deciles',
      [10, 20, 30, 40, 50, 60, 70, 80, 90].map((p) => percentile(sorted, p)),
    );
  return { n, p50: percentile(sorted, 50), p99: percentile(sorted, 99), total: sorted.at(-1) ?? NaN };
}

/**
 * Applies manifests with APPLIERS `kubectl apply --server-side` processes at once, each given an
 * equal share; returns when the last one is done (Date.now()).
 */
export async function applyAll(cp: ControlPlane, manifests: string[]): Promise<number> {
  const share = Math.ceil(manifests.length / APPLIERS);
  await Promise.all(
    Array.from({ length: APPLIERS }, (_, i) => manifests.slice(i * share, (i + 1) * share))
      .filter((part) => part.length > 0)
      .map((part) => cp.kubectl(['apply', '--server-side', '-f', '-'], { input: part.join('---\n') })),
  );
  return Date.now();
}
