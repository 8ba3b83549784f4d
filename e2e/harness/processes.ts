/**
 * Real processes for end-to-end suites: the gateway and the operator run as `node <main.ts>`
 * children, talking over real HTTP; an echo upstream answers with what it received.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { freePort, waitFor } from '../../lib/testing/wait.ts';
import { tether } from '../../lib/tether.ts';

const root = join(import.meta.dirname, '..', '..');
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

export { freePort, waitFor };

/** A child process of the suite, its output in a log file. */
export interface Proc {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Output so far. */
  log(): string;
  /** SIGTERM, then SIGKILL after a grace period; resolves when the process is gone. */
  stop(): Promise<void>;
  readonly exited: Promise<number | null>;
}

/** Starts `node <script> args` with the project's Node, env added to the suite's own. */
export function startNode(opts: {
  name: string;
  script: string;
  args?: string[];
  env?: Record<string, string>;
  logDir: string;
}): Proc {
  const logFile = join(opts.logDir, `${opts.name}.log`);
  const out = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(process.execPath, [join(root, opts.script), ...(opts.args ?? [])], {
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  // However the suite (or `make demo`) ends, SIGKILL included, the child ends with it.
  tether(child);
  child.stdout.pipe(out, { end: false });
  child.stderr.pipe(out, { end: false });
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      children.delete(child);
      resolve(code);
    });
  });
  return {
    name: opts.name,
    pid: child.pid ?? 0,
    logFile,
    log: () => readFileSync(logFile, 'utf8'),
    exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * httpRequest's status and body, or status 0 and no body when the server cannot be reached: what
 * a client sees through an outage or a restart.
 */
export async function tryRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  try {
    return await httpRequest(url, opts);
  } catch {
    return { status: 0, body: '' };
  }
}

/**
 * Plain HTTP GET/POST/PUT/DELETE returning status, headers and text body; fails when no answer
 * has come in `timeoutMs`.
 */
export async function httpRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
  timeoutMs = 10_000,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: opts.method ?? 'GET', headers: opts.headers, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      },
    );
    req.on('error', reject);
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`request to ${url} timed out`)));
    req.end(opts.body);
  });
}

/** An echo upstream: its URL and port, the requests it got, and how to stop it. */
export interface EchoUpstream {
  url: string;
  port: number;
  /** The path and query of each request it got, in order. */
  seen: string[];
  close: () => Promise<void>;
}

/** Where an echo upstream listens, and which requests it answers late. */
export interface EchoOptions {
  /** The address it listens on (default 127.0.0.1; EndpointSlices need a non-loopback one). */
  host?: string;
  /** Requests whose path starts with this are answered a second late, `late` (timeouts). */
  latePrefix?: string;
}

/** An upstream that answers every request with what it received, as JSON. */
export async function startEchoUpstream(name = 'echo', opts: EchoOptions = {}): Promise<EchoUpstream> {
  const host = opts.host ?? '127.0.0.1';
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '/');
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (opts.latePrefix !== undefined && url.pathname.startsWith(opts.latePrefix)) {
        setTimeout(() => {
          if (!res.destroyed) res.writeHead(200, { 'x-upstream': name }).end('late');
        }, 1000);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': name });
      res.end(
        JSON.stringify({
          upstream: name,
          method: req.method,
          path: url.pathname,
          query: url.search,
          headers: req.headers,
          body,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${String(port)}`,
    port,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** What an echo upstream's answer says it got (all undefined when the answer is not an echo's). */
export interface EchoSeen {
  upstream?: string;
  method?: string;
  path?: string;
  query?: string;
  headers?: Record<string, string>;
}

/** Reads an echo upstream's answer body; `{}` for any other body (a gateway's own answer). */
export function readEcho(body: string): EchoSeen {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null ? parsed : {};
  } catch {
    return {};
  }
}

/** A gateway process with the embedded files store. */
export interface GatewayProc extends Proc {
  url: string;
  port: number;
  secret: string;
}

/**
 * Starts `gateway/main.ts` on a free port (one worker unless `workers` says more, as the chart's
 * gateway has one per core) and waits until `/hello` answers. `env` adds to the settings (e.g.
 * `SVC_GW_STORE` for a Redis store).
 */
export async function startGateway(opts: {
  name: string;
  secret: string;
  dataDir: string;
  logDir: string;
  port?: number;
  workers?: number;
  env?: Record<string, string>;
  /** How long to wait for `/hello` (30 s unless given). */
  startTimeoutMs?: number;
}): Promise<GatewayProc> {
  const port = opts.port ?? (await freePort());
  const proc = startNode({
    name: opts.name,
    script: 'gateway/main.ts',
    args: [
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--workers',
      String(opts.workers ?? 1),
      '--data-dir',
      opts.dataDir,
    ],
    env: { SVC_GW_SECRET: opts.secret, ...opts.env },
    logDir: opts.logDir,
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(
      `${opts.name} /hello`,
      async () => {
        const r = await httpRequest(`${url}/hello`);
        return r.status === 200;
      },
      opts.startTimeoutMs,
    );
  } catch (err) {
    // Not left running when the test gives up on it (it would outlive the test run).
    await proc.stop();
    throw err;
  }
  return { ...proc, url, port, secret: opts.secret };
}

/**
 * The operator's `NODE_OPTIONS` as the chart sets them, from the chart's own values
 * (`operator.heapMiB`, `operator.semiSpaceMiB`).
 */
export const OPERATOR_NODE_OPTIONS: string = (() => {
  const values = parseYaml(readFileSync(join(root, 'charts', 'svc-operator', 'values.yaml'), 'utf8')) as {
    operator: { heapMiB: number; semiSpaceMiB: number };
  };
  return `--max-old-space-size=${String(values.operator.heapMiB)} --max-semi-space-size=${String(values.operator.semiSpaceMiB)}`;
})();

/** An operator process and the address of its /healthz, /readyz and /metrics. */
export interface OperatorProc extends Proc {
  /** `http://127.0.0.1:<port>`. */
  opsUrl: string;
}

/**
 * Starts `operator/main.ts` in mode ce against `gateway`, with leader election in the
 * namespace `svc-operator-system` (which must exist), and waits until it is ready. `env`
 * adds to or overrides the settings.
 */
export async function startOperator(opts: {
  name: string;
  gateway: GatewayProc;
  kubeconfig: string;
  logDir: string;
  org?: string;
  env?: Record<string, string>;
}): Promise<OperatorProc> {
  const healthPort = await freePort();
  const proc = startNode({
    name: opts.name,
    script: 'operator/main.ts',
    env: {
      SVC_MODE: 'ce',
      SVC_URL: opts.gateway.url,
      SVC_AUTH: opts.gateway.secret,
      SVC_ORG: opts.org ?? 'e2e-org',
      KUBECONFIG: opts.kubeconfig,
      HEALTH_PROBE_PORT: String(healthPort),
      POD_NAMESPACE: 'svc-operator-system',
      // As the chart starts it (operator.heapMiB, operator.semiSpaceMiB).
      NODE_OPTIONS: OPERATOR_NODE_OPTIONS,
      ...opts.env,
    },
    logDir: opts.logDir,
  });
  const opsUrl = `http://127.0.0.1:${healthPort}`;
  await waitFor(`${opts.name} /readyz (log ${proc.logFile})`, async () => {
    return (await httpRequest(`${opsUrl}/readyz`)).status === 200;
  });
  return { ...proc, opsUrl };
}
