/**
 * The changing-API probe (issue 33 item 2: zero non-2xx answers on an API that is being changed):
 * two gateway processes on one Redis store, the operator in mode ce writing to one of them (the
 * other follows through the store's group reload), one probed ApiDefinition whose upstream moves
 * between two live upstreams (both answer 200) every few changes, while the other changes create,
 * modify and delete other ApiDefinitions. A probe client sends requests to the probed API on both
 * gateways all along, over keep-alive connections and over a new connection each, and counts every
 * answer by status, and every connection error. Used by `make bench-operator` (1,000 changes) and
 * by e2e/operator/changing-api.test.ts (fewer).
 */
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import type { ControlPlane } from './control-plane.ts';
import {
  httpRequest,
  startEchoUpstream,
  startGateway,
  startOperator,
  waitFor,
  type GatewayProc,
  type OperatorProc,
} from './processes.ts';
import { startRedis, type TestRedis } from '../../gateway/testing/redis-server.ts';

/** What the probe saw over one kind of connection on one gateway. */
export interface ProbeCounts {
  /** Answers by status code. */
  byStatus: Record<string, number>;
  /** Requests that got no answer, by error code (ECONNRESET, ECONNREFUSED, ...). */
  connectionErrors: Record<string, number>;
  /** 200 answers by the upstream that made them (its `x-upstream` header; `none` if absent). */
  byUpstream: Record<string, number>;
  /** The first few non-2xx answers and errors, for the report. */
  samples: string[];
}

/** One run of the probe. */
export interface ChangeProbeResult {
  /** Changes accepted by the API server (others and upstream moves together). */
  changes: number;
  /** Of which moves of the probed API's upstream. */
  upstreamChanges: number;
  /** From the first change to the last one accepted (ms). */
  changesMs: number;
  /** From the last change until both gateways answered from the final upstream (ms). */
  settleMs: number;
  /** The API server's transient refusals of a change (5xx, 429), each tried again. */
  retries: string[];
  /** Counts by gateway (`a`, `b`) and connection kind (`keep-alive`, `new`). */
  counts: Record<string, ProbeCounts>;
}

/** Options of {@link runChangeProbe}. */
export interface ChangeProbeOptions {
  cp: ControlPlane;
  /** Where the processes' logs go. */
  dir: string;
  /** A namespace that exists; the operator watches it alone. */
  namespace: string;
  /** Changes in all (1,000 in the benchmark). */
  changes: number;
  /** Every how many changes the probed API's upstream moves. */
  upstreamEvery: number;
  /** Other ApiDefinitions that the other changes create, modify and delete. */
  others: number;
  /**
   * Changes applied at once (1: one after the other); more is how GitOps tools apply a folder.
   * The probed API's moves stay in turn.
   */
  appliers?: number;
  /** Workers per gateway (as the chart runs one per core). */
  workers?: number;
  /** Requests in flight at once per gateway and connection kind. */
  concurrency?: number;
  /** Progress lines. */
  log?: (line: string) => void;
}

const GROUP = 'svc.svc.io';
const VERSION = 'v1alpha1';

/** The totals of a result: requests, 2xx, non-2xx and connection errors. */
export function totals(r: ChangeProbeResult): {
  requests: number;
  ok: number;
  non2xx: number;
  connectionErrors: number;
} {
  let ok = 0;
  let non2xx = 0;
  let connectionErrors = 0;
  for (const c of Object.values(r.counts)) {
    for (const [status, n] of Object.entries(c.byStatus)) {
      if (status.startsWith('2')) ok += n;
      else non2xx += n;
    }
    for (const n of Object.values(c.connectionErrors)) connectionErrors += n;
  }
  return { requests: ok + non2xx + connectionErrors, ok, non2xx, connectionErrors };
}

/** The manifest of an ApiDefinition as the changes apply it (server-side apply, JSON). */
function apiDefinition(ns: string, name: string, listenPath: string, targetUrl: string): string {
  return JSON.stringify({
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'ApiDefinition',
    metadata: { name, namespace: ns },
    spec: {
      name,
      use_keyless: true,
      proxy: { listen_path: listenPath, target_url: targetUrl, strip_listen_path: true },
    },
  });
}

/**
 * Sends GET `path` to `gw` over and over, `concurrency` at a time, until `stop` resolves; each
 * answer and error counted in `counts`. `fresh`: a new connection for each request (and
 * `connection: close`), else a keep-alive agent's few connections.
 */
async function probeLoop(
  gw: GatewayProc,
  path: string,
  fresh: boolean,
  concurrency: number,
  counts: ProbeCounts,
  stopped: () => boolean,
): Promise<void> {
  const agent = fresh ? undefined : new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const req = http.request(
        `${gw.url}${path}`,
        {
          agent: agent ?? false,
          headers: fresh ? { connection: 'close' } : {},
        },
        (res) => {
          const status = String(res.statusCode ?? 0);
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            if (body.length < 200) body += c;
          });
          res.on('end', () => {
            counts.byStatus[status] = (counts.byStatus[status] ?? 0) + 1;
            if (status.startsWith('2')) {
              const up = typeof res.headers['x-upstream'] === 'string' ? res.headers['x-upstream'] : 'none';
              counts.byUpstream[up] = (counts.byUpstream[up] ?? 0) + 1;
            } else if (counts.samples.length < 10) {
              counts.samples.push(`${new Date().toISOString()} ${status} ${body.slice(0, 200)}`);
            }
            resolve();
          });
          res.on('error', (err: NodeJS.ErrnoException) => {
            const code = err.code ?? err.message;
            counts.connectionErrors[code] = (counts.connectionErrors[code] ?? 0) + 1;
            resolve();
          });
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        const code = err.code ?? err.message;
        counts.connectionErrors[code] = (counts.connectionErrors[code] ?? 0) + 1;
        if (counts.samples.length < 10)
          counts.samples.push(`${new Date().toISOString()} ${code} ${err.message}`);
        resolve();
      });
      req.setTimeout(10_000, () => req.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' })));
      req.end();
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!stopped()) await one();
    }),
  );
  agent?.destroy();
}

/** Waits until `gw` answers `path` with 200 from the upstream named `upstream`. */
async function servedBy(gw: GatewayProc, path: string, upstream: string, timeoutMs = 120_000): Promise<void> {
  await waitFor(
    `${gw.name} ${path} answered by ${upstream}`,
    async () => {
      const r = await httpRequest(`${gw.url}${path}`);
      return r.status === 200 && r.headers['x-upstream'] === upstream;
    },
    timeoutMs,
  );
}

/**
 * Starts Redis, two upstreams, two gateways on the Redis store and the operator; applies the
 * probed API and the others; runs the probe through `changes` changes; stops everything it started
 * and returns the counts.
 */
export async function runChangeProbe(opts: ChangeProbeOptions): Promise<ChangeProbeResult> {
  const { cp, dir, namespace: ns } = opts;
  const log = opts.log ?? ((): void => undefined);
  const concurrency = opts.concurrency ?? 2;
  const stops: (() => Promise<void>)[] = [];
  try {
    const redis: TestRedis = await startRedis();
    stops.push(() => redis.stop());
    const upA = await startEchoUpstream('up-a');
    stops.push(upA.close);
    const upB = await startEchoUpstream('up-b');
    stops.push(upB.close);
    const secret = `${ns}-secret`;
    const env = { SVC_GW_STORE: redis.url, SVC_GW_REDIS_KEY_PREFIX: `${ns}:` };
    // A busy machine starts a gateway of two workers slowly.
    const common = { secret, logDir: dir, env, workers: opts.workers ?? 2, startTimeoutMs: 120_000 };
    const gwA = await startGateway({ name: `${ns}-gateway-a`, dataDir: join(dir, `${ns}-a`), ...common });
    stops.push(() => gwA.stop());
    const gwB = await startGateway({ name: `${ns}-gateway-b`, dataDir: join(dir, `${ns}-b`), ...common });
    stops.push(() => gwB.stop());
    const op: OperatorProc = await startOperator({
      name: `${ns}-operator`,
      gateway: gwA,
      kubeconfig: cp.kubeconfig,
      logDir: dir,
      org: ns,
      env: { WATCH_NAMESPACE: ns, LOG_LEVEL: 'warn' },
    });
    stops.push(() => op.stop());

    // The API server, called directly (server-side apply), as fast as it answers.
    const api = new Pool(cp.server, {
      connections: 1,
      connect: { ca: readFileSync(cp.caFile, 'utf8') },
    });
    stops.push(() => api.close());
    const base = `/apis/${GROUP}/${VERSION}/namespaces/${ns}/apidefinitions`;
    const auth = { authorization: `Bearer ${cp.token}` };
    /**
     * One call to the API server; a transient refusal (5xx, 429) is tried again, up to 5 times,
     * as kubectl's users and GitOps tools do, and counted in `retries`.
     */
    const call = async (
      what: string,
      method: 'PATCH' | 'DELETE',
      path: string,
      ok: number[],
      body?: string,
    ): Promise<void> => {
      for (let attempt = 1; ; attempt++) {
        const r = await api.request({
          method,
          path,
          headers: body === undefined ? auth : { ...auth, 'content-type': 'application/apply-patch+yaml' },
          body,
        });
        const text = await r.body.text();
        if (ok.includes(r.statusCode)) return;
        if ((r.statusCode < 500 && r.statusCode !== 429) || attempt === 5)
          throw new Error(`${what}: ${String(r.statusCode)} ${text}`);
        let message = text;
        try {
          message = (JSON.parse(text) as { message?: string }).message ?? text;
        } catch {
          // Not a Status: the text as it is.
        }
        retries.push(`${what}: ${String(r.statusCode)} ${message.slice(0, 300)}`);
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
      }
    };
    const retries: string[] = [];
    const applyApi = (name: string, listenPath: string, targetUrl: string): Promise<void> =>
      call(
        `apply ${name}`,
        'PATCH',
        `${base}/${name}?fieldManager=probe&force=true`,
        [200, 201],
        apiDefinition(ns, name, listenPath, targetUrl),
      );
    const deleteApi = (name: string): Promise<void> =>
      call(`delete ${name}`, 'DELETE', `${base}/${name}`, [200, 202]);

    // Listen paths under the namespace's name: the admission webhooks refuse a path another
    // namespace's ApiDefinition claims (an earlier run's, on the same API server).
    const probed = `/${ns}/probed/`;
    await applyApi('probed', probed, upA.url);
    const otherPath = (i: number, version: number): string =>
      `/${ns}/other-${String(i)}-v${String(version)}/`;
    /** Each other API's listen path version and how many changes it had. */
    const others = Array.from({ length: opts.others }, () => ({ version: 0, changes: 0 }));
    for (let i = 0; i < opts.others; i++) await applyApi(`other-${String(i)}`, otherPath(i, 0), upA.url);
    for (const gw of [gwA, gwB]) {
      await servedBy(gw, `${probed}x`, 'up-a');
      await servedBy(gw, `${otherPath(opts.others - 1, 0)}x`, 'up-a');
    }
    log(`probe: ${String(opts.others + 1)} APIs served by both gateways`);

    const emptyCounts = (): ProbeCounts => ({
      byStatus: {},
      connectionErrors: {},
      byUpstream: {},
      samples: [],
    });
    const counts: Record<string, ProbeCounts> = {};
    let stopped = false;
    const loops: Promise<void>[] = [];
    for (const [name, gw] of [
      ['a', gwA],
      ['b', gwB],
    ] as const) {
      for (const fresh of [false, true]) {
        const c = emptyCounts();
        counts[`${name} ${fresh ? 'new' : 'keep-alive'}`] = c;
        loops.push(probeLoop(gw, `${probed}x`, fresh, concurrency, c, () => stopped));
      }
    }

    let upstreamChanges = 0;
    const t0 = Date.now();
    try {
      /** Change `i`: the probed API's upstream every `upstreamEvery`, else the next other API's. */
      let otherChanges = 0;
      let flips = Promise.resolve();
      const change = async (i: number): Promise<void> => {
        if (i % opts.upstreamEvery === opts.upstreamEvery - 1) {
          // The moves are applied in turn, so the last one applied is the last one made.
          const next = (upstreamChanges++ % 2 === 0 ? upB : upA).url;
          flips = flips.then(() => applyApi('probed', probed, next));
          await flips;
          return;
        }
        // The others in turn: a new target, a new listen path, deleted, created again.
        const x = otherChanges++ % opts.others;
        const o = others[x];
        if (o === undefined) return;
        const step = o.changes++ % 4;
        const name = `other-${String(x)}`;
        if (step === 2) await deleteApi(name);
        else {
          if (step === 1) o.version++;
          await applyApi(
            name,
            otherPath(x, o.version),
            `${(step === 0 ? upB : upA).url}/s${String(o.changes)}`,
          );
        }
      };
      let next = 0;
      await Promise.all(
        Array.from({ length: opts.appliers ?? 1 }, async () => {
          for (let i = next++; i < opts.changes; i = next++) {
            await change(i);
            if (i % 100 === 99) log(`probe: ${String(i + 1)} changes`);
          }
        }),
      );
      const changesMs = Date.now() - t0;
      const final = upstreamChanges % 2 === 0 ? 'up-a' : 'up-b';
      const t1 = Date.now();
      await Promise.all([servedBy(gwA, `${probed}x`, final), servedBy(gwB, `${probed}x`, final)]);
      const settleMs = Date.now() - t1;
      // A little longer, so the last reloads' old tables are retired under the probe too.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      stopped = true;
      await Promise.all(loops);
      return { changes: opts.changes, upstreamChanges, changesMs, settleMs, counts, retries };
    } finally {
      stopped = true;
      await Promise.all(loops);
    }
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}
