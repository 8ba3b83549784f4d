/**
 * The conformance harness: a gateway on 127.0.0.1:0 with real listeners (in this process, or as
 * a child process), the management calls tests make, and the dead port failure cases use.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { silentLogger, type Logger } from '../../lib/log.ts';
import type { TlsMaterial } from '../config/load.ts';
import { loadGatewayConfig } from '../config/load.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { GatewayMiddleware } from '../middleware/deps.ts';
import type { RequestObserver } from '../pipeline/context.ts';
import { Gateway } from '../server/gateway.ts';
import type { Counters } from '../limits/counters.ts';
import { openCounters } from '../limits/open.ts';
import { openStore } from '../store/open.ts';
import type { Store } from '../store/store.ts';
import { selfSignedCert, type TestCert } from './certs.ts';
import { send, type Req, type Res } from './client.ts';
import { freePort, waitFor } from '../../lib/testing/wait.ts';

/** The management secret of every test gateway. */
export const SECRET = 'test-secret';

/** Management and proxy calls against one gateway. */
export interface GatewayClient {
  /** The gateway port. */
  port: number;
  /** The management port (the gateway port unless a control port was asked). */
  adminPort: number;
  /** A management call with the secret. */
  admin(method: string, path: string, body?: unknown): Promise<Res>;
  /** A request to the gateway port (or `req.port`). */
  request(req: Omit<Req, 'port'> & { port?: number }): Promise<Res>;
  /** Stores an API and fails the test unless it was added. */
  addApi(def: Record<string, unknown>): Promise<void>;
  /** `/svc/reload`, failing the test unless it succeeded. */
  reload(): Promise<void>;
  /** Stores PEM certificates (with their keys when given) for `org` (default `org1`); fails unless stored. */
  addCerts(pems: readonly string[], org?: string): Promise<void>;
}

function client(port: number, adminPort: number): GatewayClient {
  const c: GatewayClient = {
    port,
    adminPort,
    admin: (method, path, body) =>
      send({
        port: adminPort,
        method,
        path,
        headers: { 'x-svc-authorization': SECRET },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      }),
    request: (req) => send({ port, ...req }),
    addApi: async (def) => {
      const res = await c.admin('POST', '/svc/apis', def);
      if (res.status !== 200) throw new Error(`adding API failed: ${res.status} ${res.text}`);
    },
    reload: async () => {
      const res = await c.admin('GET', '/svc/reload');
      if (res.status !== 200) throw new Error(`reload failed: ${res.status} ${res.text}`);
    },
    addCerts: async (pems, org = 'org1') => {
      for (const pem of pems) {
        const res = await c.admin('POST', `/svc/certs?org_id=${encodeURIComponent(org)}`, pem);
        if (res.status !== 200) throw new Error(`adding certificate failed: ${res.status} ${res.text}`);
      }
    },
  };
  return c;
}

/** A keyless API definition for tests. */
export function keyless(
  id: string,
  listenPath: string,
  target: string,
  extra: Record<string, unknown> = {},
  proxy: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    api_id: id,
    name: id,
    use_keyless: true,
    proxy: { listen_path: listenPath, target_url: target, ...proxy },
    ...extra,
  };
}

/**
 * The `version_data` of an API with one version (`name`, default `Default`) using extended paths,
 * with `settings` in it (`{ extended_paths: {...} }`, `global_headers`, ...): spread into
 * `keyless(..., extra)` or `keyed(..., extra)`.
 */
export function oneVersion(settings: Record<string, unknown>, name = 'Default'): Record<string, unknown> {
  return {
    version_data: {
      not_versioned: true,
      default_version: name,
      versions: { [name]: { name, use_extended_paths: true, ...settings } },
    },
  };
}

/** A keyed API definition for tests: auth token in `Authorization` unless `extra` says otherwise. */
export function keyed(
  id: string,
  listenPath: string,
  target: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    api_id: id,
    name: `${id} API`,
    use_keyless: false,
    proxy: { listen_path: listenPath, target_url: target },
    ...extra,
  };
}

/** A gateway running in this process. */
export interface InProcessGateway extends GatewayClient {
  gw: Gateway;
  store: Store;
  config: Readonly<GatewayConfig>;
  dataDir: string;
  stop(): Promise<void>;
}

/** Starts a gateway in this process on 127.0.0.1:0 with a files store in a new directory. */
export async function startGateway(
  opts: {
    argv?: string[];
    store?: Store;
    tls?: TlsMaterial;
    log?: Logger;
    dataDir?: string;
    /** Another middleware chain (default: routes/chain.ts). */
    chain?: readonly GatewayMiddleware[];
    /** Counters of limits (default: what the configuration names). */
    counters?: Counters;
    /** The gateway's clock (default: Date.now). */
    now?: () => number;
    observer?: RequestObserver;
  } = {},
): Promise<InProcessGateway> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'svc-gw-data-'));
  const config = loadGatewayConfig({
    argv: [
      '--secret',
      SECRET,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--data-dir',
      dataDir,
      ...(opts.argv ?? []),
    ],
    env: {},
  });
  const log = opts.log ?? silentLogger();
  const store = opts.store ?? (await openStore(config, log));
  const counters = opts.counters ?? (await openCounters(config, log));
  const gw = await Gateway.start({
    config,
    store,
    counters,
    log,
    tls: opts.tls,
    ...(opts.chain === undefined ? {} : { chain: opts.chain }),
    ...(opts.now === undefined ? {} : { now: opts.now }),
    observer: opts.observer,
  });
  const port = gw.port('main') ?? 0;
  return {
    ...client(port, gw.port('control') ?? port),
    gw,
    store,
    config,
    dataDir,
    stop: async () => {
      await gw.stop();
      await store.close();
      await counters.close();
    },
  };
}

/** The options of {@link startGateway}. */
export type GatewayOptions = NonNullable<Parameters<typeof startGateway>[0]>;

/**
 * The suite's gateway in this process: started (as {@link startGateway} with `opts`, or what
 * `opts()` gives then, and `setup` run on it) in a `before` hook, stopped in an `after` hook; the getter fails the test if it did
 * not start.
 */
export function useGateway(
  opts: GatewayOptions | (() => GatewayOptions) = {},
  setup?: (gw: InProcessGateway) => Promise<void>,
): () => InProcessGateway {
  let gw: InProcessGateway | undefined;
  before(async () => {
    gw = await startGateway(typeof opts === 'function' ? opts() : opts);
    await setup?.(gw);
  });
  after(async () => {
    await gw?.stop();
  });
  return () => {
    if (gw === undefined) throw new Error('the suite gateway did not start');
    return gw;
  };
}

/** Runs `fn` against a new gateway in this process (as {@link startGateway}), stopped after it. */
export async function withGateway<T>(
  fn: (gw: InProcessGateway) => Promise<T>,
  opts: GatewayOptions = {},
): Promise<T> {
  const gw = await startGateway(opts);
  try {
    return await fn(gw);
  } finally {
    await gw.stop();
  }
}

/**
 * Asserts that storing `def` through `gw` is refused with 400 and a message that names each of
 * `parts` (a field's path and why).
 */
export async function assertWriteRefused(
  gw: GatewayClient,
  def: Record<string, unknown>,
  parts: readonly string[],
): Promise<void> {
  const res = await gw.admin('POST', '/svc/apis', def);
  assert.equal(res.status, 400, res.text);
  const message = (res.json as { message: string }).message;
  for (const part of parts) assert.ok(message.includes(part), `${part} in ${message}`);
}

/** A gateway in this process with the default certificate it presents. */
export type TlsGateway = InProcessGateway & { serverCert: TestCert };

/**
 * Starts a gateway in this process (as {@link startGateway}) whose HTTPS listeners present `cert`
 * (default: a fresh self-signed one) as the default certificate (`--tls-cert`, `--tls-key`);
 * `argv` follows those flags.
 */
export async function startTlsGateway(
  argv: string[] = [],
  cert: TestCert = selfSignedCert(),
): Promise<TlsGateway> {
  const gw = await startGateway({
    argv: ['--tls-cert', cert.certFile, '--tls-key', cert.keyFile, ...argv],
    tls: cert,
  });
  return Object.assign(gw, { serverCert: cert });
}

/** A gateway running as a child process (`node gateway/main.ts ...`). */
export interface GatewayProcess extends GatewayClient {
  child: ChildProcess;
  /** Everything the process logged so far. */
  stderr(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
}

const MAIN = join(import.meta.dirname, '..', 'main.ts');

/** Resolves once `gw`'s primary logged that every worker serves (`what` names the wait). */
export async function allWorkersServing(gw: GatewayProcess, what = 'both workers'): Promise<void> {
  await waitFor(what, () => gw.stderr().includes('"message":"all workers serving"'));
}

/**
 * Starts a gateway of two workers (as {@link spawnGateway}) on the files store in a new data
 * directory whose name starts with `prefix`; `args` follow.
 */
export function spawnWorkers(
  prefix: string,
  args: string[] = [],
  opts: Parameters<typeof spawnGateway>[1] = {},
): Promise<GatewayProcess> {
  return spawnGateway(['--workers', '2', '--data-dir', mkdtempSync(join(tmpdir(), prefix)), ...args], opts);
}

/**
 * Starts `node gateway/main.ts` with the test secret on a free port and waits until it serves
 * (`/ready` answers 200 unless `waitReady` is false).
 */
export async function spawnGateway(
  args: string[],
  /** `env`: variables added to this process's environment. */
  opts: { waitReady?: boolean; env?: Record<string, string> } = {},
): Promise<GatewayProcess> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [MAIN, '--secret', SECRET, '--host', '127.0.0.1', '--port', String(port), '--log-level', 'info', ...args],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      ...(opts.env === undefined ? {} : { env: { ...process.env, ...opts.env } }),
    },
  );
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      resolve(code);
    }),
  );
  let gone = false;
  void exited.then(() => (gone = true));
  const c = client(port, port);
  if (opts.waitReady !== false) {
    const state = await waitFor(
      `gateway on ${port} to be ready`,
      async () => {
        if (gone) return 'exited';
        const r = await send({ port, path: '/ready', fresh: true });
        return r.status === 200 ? 'ready' : undefined;
      },
      60_000,
    ).catch((err: unknown) => {
      // Not ready in time: the caller never gets the process to stop, so it is stopped here.
      child.kill('SIGKILL');
      throw err;
    });
    if (state === 'exited') throw new Error(`gateway exited before it was ready:\n${stderr}`);
  }
  return {
    ...c,
    child,
    stderr: () => stderr,
    exited,
    stop: async () => {
      if (!gone) child.kill('SIGTERM');
      return exited;
    },
  };
}
