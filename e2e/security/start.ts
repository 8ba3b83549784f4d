/**
 * The gateway process of the security suites: e2e/harness's gateway, waited for longer (a loaded
 * machine starts it slowly) and stopped after the suite, or at once when it never answers.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { freePort, httpRequest, startNode, waitFor, type GatewayProc } from '../harness/processes.ts';

const started: GatewayProc[] = [];
after(async () => {
  for (const g of started) await g.stop();
});

/** Starts `gateway/main.ts` (one worker unless `workers`), `env` added; resolves once /hello answers. */
export async function startGw(opts: {
  name: string;
  secret: string;
  dataDir: string;
  logDir: string;
  workers?: number;
  env?: Record<string, string>;
  /** Run as this user and group (the chart's 65532), through setpriv: the suite runs as root. */
  user?: number;
}): Promise<GatewayProc> {
  const port = await freePort();
  const args = ['--port', String(port), '--host', '127.0.0.1', '--workers', String(opts.workers ?? 1)];
  const env = { SVC_GW_SECRET: opts.secret, SVC_GW_DATA_DIR: opts.dataDir, ...opts.env };
  const proc =
    opts.user === undefined
      ? startNode({ name: opts.name, script: 'gateway/main.ts', args, env, logDir: opts.logDir })
      : startNode({
          name: opts.name,
          script: 'e2e/security/testdata/as-user.ts',
          args: [String(opts.user), join(import.meta.dirname, '..', '..', 'gateway', 'main.ts'), ...args],
          env,
          logDir: opts.logDir,
        });
  const gw: GatewayProc = { ...proc, url: `http://127.0.0.1:${String(port)}`, port, secret: opts.secret };
  started.push(gw);
  try {
    await waitFor(
      `${opts.name} /hello (log ${join(opts.logDir, `${opts.name}.log`)})`,
      async () => (await httpRequest(`${gw.url}/hello`)).status === 200,
      120_000,
      200,
    );
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return gw;
}

/** What the cases of a security suite share ({@link useSecuritySuite}). */
export interface SecuritySuite {
  /** The suite's folder: its gateways' logs and data. */
  dir: string;
  /** Run after the suite, last first. */
  closers: (() => Promise<void>)[];
  /** The management API's headers: the suite's secret and a JSON body. */
  admin: Record<string, string>;
  /**
   * {@link startGw} of the gateway `name` with the suite's secret, its log in the suite's folder
   * and its data in `<folder>/<name>` unless `dataDir` says.
   */
  gateway: (
    name: string,
    opts?: { dataDir?: string; workers?: number; env?: Record<string, string>; user?: number },
  ) => Promise<GatewayProc>;
}

/**
 * A security suite named `name` whose gateways take `secret`: its folder (`svc-<name>-...`), and
 * its `closers` run after it (the gateways it started are stopped after it anyway).
 */
export function useSecuritySuite(name: string, secret: string): SecuritySuite {
  const dir = mkdtempSync(join(tmpdir(), `svc-${name}-`));
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of closers.reverse()) await c();
  });
  return {
    dir,
    closers,
    admin: { 'x-svc-authorization': secret, 'content-type': 'application/json' },
    gateway: (gwName, opts = {}) =>
      startGw({ name: gwName, secret, dataDir: join(dir, gwName), logDir: dir, ...opts }),
  };
}

/** Base64 of a string. */
export const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** A virtual endpoint answering POST `path` with the function `v` of `source`. */
export const virtualEndpoint = (path: string, source: string): Record<string, unknown> => ({
  path,
  method: 'POST',
  response_function_name: 'v',
  function_source_type: 'blob',
  function_source_uri: b64(source),
});

/** An API's `version_data`: not versioned, its `Default` version with these virtual endpoints. */
export const virtualVersions = (...virtual: Record<string, unknown>[]): Record<string, unknown> => ({
  not_versioned: true,
  versions: { Default: { name: 'Default', extended_paths: { virtual } } },
});

/** The OAuth API `stock` (client credentials) proxying to `target`. */
export const stockApi = (target: string): Record<string, unknown> => ({
  api_id: 'stock',
  name: 'stock',
  use_keyless: false,
  use_oauth2: true,
  oauth_meta: { allowed_access_types: ['client_credentials'] },
  proxy: { listen_path: '/stock/', target_url: target, strip_listen_path: true },
});

/** The policy `stock-clients` granting the API `stock`. */
export const STOCK_POLICY = {
  id: 'stock-clients',
  name: 'stock clients',
  state: 'active',
  rate: 1000,
  per: 1,
  quota_max: -1,
  access_rights: { stock: { api_id: 'stock', api_name: 'stock', versions: ['Default'] } },
} as const;

/** e2e/harness's httpRequest, with a longer deadline (a reload compiling plugins is slow on a loaded machine). */
export async function request(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
  timeoutMs = 60_000,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return httpRequest(url, opts, timeoutMs);
}

/** Resolves with 'closed' when `p` settles within `ms`, else 'hung'. */
export const within = (p: Promise<unknown>, ms: number): Promise<'closed' | 'hung'> =>
  Promise.race([
    p.then(() => 'closed' as const),
    new Promise<'hung'>((resolve) =>
      setTimeout(() => {
        resolve('hung');
      }, ms).unref(),
    ),
  ]);

/** The worker processes of a gateway started with --workers > 1. */
export function workersOf(pid: number): number[] {
  let text = '';
  try {
    text = readFileSync(`/proc/${String(pid)}/task/${String(pid)}/children`, 'utf8');
  } catch {
    // gone
  }
  return text
    .trim()
    .split(/\s+/)
    .filter((s) => s !== '')
    .map(Number);
}

export /** The process `pid` is running. */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A gauge of the gateway's /metrics. */
export async function gauge(gw: GatewayProc, name: string): Promise<number> {
  const r = await httpRequest(`${gw.url}/metrics`);
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(r.body);
  assert.ok(m !== null, `${name} in /metrics`);
  return Number(m[1]);
}

/** The gateway's open handles and file descriptors (its /metrics): a baseline for `backToBaseline`. */
export async function openResources(gw: GatewayProc): Promise<{ handles: number; fds: number }> {
  return {
    handles: await gauge(gw, 'nodejs_active_handles_total'),
    fds: await gauge(gw, 'process_open_fds'),
  };
}

/**
 * Waits (30 s at most) until the gateway's open handles and file descriptors are back within a
 * few of `baseline`; fails naming both, before and after.
 */
export async function backToBaseline(
  gw: GatewayProc,
  baseline: { handles: number; fds: number },
): Promise<void> {
  const slack = 4;
  await waitFor(
    'handles and file descriptors back to the baseline',
    async () => {
      const now = await openResources(gw);
      return now.handles <= baseline.handles + slack && now.fds <= baseline.fds + slack;
    },
    30_000,
  ).catch(async (err: unknown) => {
    const now = await openResources(gw);
    throw new Error(
      `handles ${String(baseline.handles)} -> ${String(now.handles)}, fds ${String(baseline.fds)} -> ${String(now.fds)}`,
      { cause: err },
    );
  });
}
