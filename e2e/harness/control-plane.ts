/**
 * A real Kubernetes control plane (etcd + kube-apiserver) on free loopback ports, for tests and
 * `make cluster`. There is deliberately no controller-manager or scheduler: tests talk to the API,
 * nothing reconciles built-in kinds (no pods, no garbage collection, namespaces stay Terminating).
 * Its processes as children of this one: control-plane-children.ts.
 */
import { spawn } from 'node:child_process';
import { generateKeyPair, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { Child, installProcessHooks, keepDirs, livePlanes, ownedDirs } from './control-plane-children.ts';

/** Result of one kubectl invocation. */
export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options of {@link ControlPlane.kubectl}. */
export interface KubectlOptions {
  /** Written to kubectl's stdin (e.g. a manifest for `apply -f -`). */
  input?: string;
  /** Resolve with a non-zero code instead of rejecting. */
  allowFailure?: boolean;
}

/** A running control plane; everything it owns lives in `dir`. */
export interface ControlPlane {
  /** `https://127.0.0.1:<port>` of the kube-apiserver. */
  server: string;
  /** Path of a kubeconfig with cluster-admin rights (group system:masters). */
  kubeconfig: string;
  /** Bearer token of the admin user. */
  token: string;
  /** CA bundle that verifies the apiserver's serving certificate. */
  caFile: string;
  /** Temporary directory holding data, keys and logs. */
  dir: string;
  /** Runs the built kubectl against this control plane; rejects on a non-zero exit unless allowFailure. */
  kubectl(args: string[], opts?: KubectlOptions): Promise<KubectlResult>;
  /** Server-side applies every manifest in `dir` and waits until all CRDs are Established. */
  installCrds(dir: string): Promise<void>;
  /**
   * Stops the apiserver and etcd, waits `downMs` (default 0), then starts them again on the same
   * ports, data dir and credentials, and resolves once the apiserver is ready again: clients keep
   * their kubeconfig, and everything stored survives (a fault test of watches and retries).
   */
  restart(opts?: { downMs?: number }): Promise<void>;
  /** Stops the apiserver, then etcd, and removes `dir` (unless SVC_KEEP_CLUSTER_DIR is set). Idempotent. */
  stop(): Promise<void>;
}

/** Options of {@link startControlPlane}. */
export interface StartOptions {
  /** Directory of CRD manifests to install before returning. */
  crdDir?: string;
  /** Print progress to stderr. */
  verbose?: boolean;
}

const READY_TIMEOUT_MS = 60_000;
const ETCD_TIMEOUT_MS = 30_000;
const POLL_MS = 100;

const generateKeyPairAsync = promisify(generateKeyPair);

/** Directory of the test binaries, resolved exactly like `tools/build.sh --print`. */
export function toolsDir(): string {
  const explicit = process.env.SVC_TOOLS_DIR;
  if (explicit !== undefined && explicit !== '') return explicit;
  const xdg = process.env.XDG_CACHE_HOME;
  const cache = xdg !== undefined && xdg !== '' ? xdg : path.join(os.homedir(), '.cache');
  return path.join(cache, 'svc-tools', 'bin');
}

/**
 * The Kubernetes version the local control plane runs when it is not the default one:
 * `SVC_KUBE_VERSION` (a k8s.io/kubernetes tag such as `v1.28.15`), else undefined.
 */
export function kubeVersion(): string | undefined {
  const version = process.env.SVC_KUBE_VERSION;
  if (version === undefined || version === '') return undefined;
  if (!/^v1\.\d+\.\d+$/.test(version)) {
    throw new Error(`SVC_KUBE_VERSION=${version} is not a k8s.io/kubernetes tag like v1.28.15`);
  }
  return version;
}

/**
 * Directory of the kube-apiserver the local control plane runs: with `SVC_KUBE_VERSION` the
 * folder `SVC_KUBE_VERSION=<tag> tools/build.sh` builds that version into (`k8s-<tag>/bin` beside
 * {@link toolsDir}), else {@link toolsDir}. etcd and kubectl always come from {@link toolsDir}.
 */
export function kubeToolsDir(): string {
  const version = kubeVersion();
  return version === undefined ? toolsDir() : path.join(path.dirname(toolsDir()), `k8s-${version}`, 'bin');
}

/** Absolute path of a built tool (`etcd`, `kube-apiserver`, `kubectl`); throws naming `make deps` if missing. */
export function toolPath(name: 'etcd' | 'kube-apiserver' | 'kubectl'): string {
  const version = name === 'kube-apiserver' ? kubeVersion() : undefined;
  const file = path.join(version === undefined ? toolsDir() : kubeToolsDir(), name);
  if (!existsSync(file)) {
    throw new Error(
      version === undefined
        ? `${name} not found at ${file}; run \`make deps\` (tools/build.sh) to build the test binaries` +
            ' (SVC_TOOLS_DIR overrides the directory)'
        : `${name} ${version} not found at ${file}; run \`SVC_KUBE_VERSION=${version} tools/build.sh\` to build it`,
    );
  }
  return file;
}

/** Distinct free loopback ports: all listeners stay open until every port is chosen. */
async function freePorts(count: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = net.createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolve);
      });
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('no TCP address for port probe');
      ports.push(address.port);
    }
    return ports;
  } finally {
    await Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => {
              resolve();
            });
          }),
      ),
    );
  }
}

interface HttpResult {
  status: number;
  body: string;
}

function httpGet(url: string, options: https.RequestOptions = {}): Promise<HttpResult> {
  const client = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.get(url, { ...options, timeout: 5_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`timeout GET ${url}`)));
    req.on('error', reject);
  });
}

/**
 * Polls `probe` until it returns true, failing early if `child` dies and with `child`'s log at the
 * deadline. `probe` returns a description of the last failure instead of false, for the message.
 */
async function pollUntil(
  what: string,
  child: Child,
  timeoutMs: number,
  probe: () => Promise<true | string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string;
  for (;;) {
    if (!child.running) throw child.failure(`${child.exitDescription} while waiting for ${what}`);
    try {
      const result = await probe();
      if (result === true) return;
      last = result;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() >= deadline) {
      throw child.failure(`${what} not reached within ${timeoutMs / 1000}s (last: ${last})`);
    }
    await delay(POLL_MS);
  }
}

/** Runs a binary to completion, collecting its output. */
function run(bin: string, args: string[], input?: string): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    proc.on('error', reject);
    proc.on('close', (code, signal) => {
      resolve({ code: code ?? (signal !== null ? 128 + os.constants.signals[signal] : 1), stdout, stderr });
    });
    // kubectl may exit before reading all of stdin (e.g. bad flags); that is reported via its code.
    proc.stdin.on('error', () => undefined);
    proc.stdin.end(input ?? '');
  });
}

/** Starts etcd and kube-apiserver in a fresh temp dir and waits until the apiserver is ready. */
export async function startControlPlane(opts: StartOptions = {}): Promise<ControlPlane> {
  const log = (message: string): void => {
    if (opts.verbose === true) process.stderr.write(`control-plane: ${message}\n`);
  };
  const bins = {
    etcd: toolPath('etcd'),
    apiserver: toolPath('kube-apiserver'),
    kubectl: toolPath('kubectl'),
  };
  installProcessHooks();

  const started = Date.now();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-cp-'));
  ownedDirs.add(dir);
  const children: Child[] = [];
  try {
    const [etcdPort, peerPort, apiPort] = (await freePorts(3)) as [number, number, number];
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;

    log(`starting etcd on ${etcdUrl} (dir ${dir})`);
    const spawnEtcd = (): Child =>
      new Child(
        'etcd',
        bins.etcd,
        [
          '--name=default',
          `--data-dir=${path.join(dir, 'etcd')}`,
          `--listen-client-urls=${etcdUrl}`,
          `--advertise-client-urls=${etcdUrl}`,
          `--listen-peer-urls=${peerUrl}`,
          `--initial-advertise-peer-urls=${peerUrl}`,
          `--initial-cluster=default=${peerUrl}`,
          // Throwaway data: durability only costs time.
          '--unsafe-no-fsync',
          '--log-level=error',
        ],
        path.join(dir, 'etcd.log'),
      );
    let etcd = spawnEtcd();
    children.push(etcd);

    // Prepare the apiserver's credentials while etcd starts.
    const pki = path.join(dir, 'pki');
    await mkdir(pki, { mode: 0o700 });
    const { publicKey, privateKey } = await generateKeyPairAsync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const saPub = path.join(pki, 'sa.pub');
    const saKey = path.join(pki, 'sa.key');
    await writeFile(saPub, publicKey, { mode: 0o600 });
    await writeFile(saKey, privateKey, { mode: 0o600 });
    const token = randomBytes(32).toString('hex');
    const tokenFile = path.join(pki, 'tokens.csv');
    await writeFile(tokenFile, `${token},svc-admin,svc-admin,"system:masters"\n`, { mode: 0o600 });

    const etcdHealthy = (child: Child): Promise<void> =>
      pollUntil('etcd /health', child, ETCD_TIMEOUT_MS, async () => {
        const res = await httpGet(`${etcdUrl}/health`);
        return res.status === 200 && res.body.includes('"health":"true"')
          ? true
          : `${res.status} ${res.body}`;
      });
    await etcdHealthy(etcd);
    log(`etcd healthy after ${Date.now() - started}ms`);

    const server = `https://127.0.0.1:${apiPort}`;
    // The apiserver writes a self-signed serving cert here, followed by the CA that signed it.
    const caFile = path.join(pki, 'apiserver.crt');
    log(`starting kube-apiserver on ${server}`);
    const spawnApiserver = (): Child =>
      new Child(
        'kube-apiserver',
        bins.apiserver,
        [
          `--etcd-servers=${etcdUrl}`,
          '--bind-address=127.0.0.1',
          '--advertise-address=127.0.0.1',
          `--secure-port=${apiPort}`,
          `--cert-dir=${pki}`,
          `--token-auth-file=${tokenFile}`,
          '--authorization-mode=RBAC',
          '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
          `--service-account-key-file=${saPub}`,
          `--service-account-signing-key-file=${saKey}`,
          '--service-cluster-ip-range=10.96.0.0/16',
          // The default (lease) reconciler rejects a loopback address for the `kubernetes` Endpoints
          // and logs that error every few seconds; nothing here routes to the service anyway.
          '--endpoint-reconciler-type=none',
        ],
        path.join(dir, 'kube-apiserver.log'),
      );
    let apiserver = spawnApiserver();
    children.push(apiserver);

    const apiserverReady = (child: Child): Promise<void> =>
      pollUntil('kube-apiserver /readyz', child, READY_TIMEOUT_MS, async () => {
        if (!existsSync(caFile)) return `${caFile} not written yet`;
        const res = await httpGet(`${server}/readyz`, {
          ca: readFileSync(caFile),
          headers: { Authorization: `Bearer ${token}` },
        });
        return res.status === 200 && res.body.trim() === 'ok' ? true : `${res.status} ${res.body.trim()}`;
      });
    await apiserverReady(apiserver);
    log(`kube-apiserver ready after ${Date.now() - started}ms`);
    const wanted = kubeVersion();
    if (wanted !== undefined) {
      // The suites must not pass on another version than the one asked for by mistake.
      const res = await httpGet(`${server}/version`, {
        ca: readFileSync(caFile),
        headers: { Authorization: `Bearer ${token}` },
      });
      const served = (JSON.parse(res.body) as { gitVersion?: string }).gitVersion;
      if (served !== wanted) {
        throw new Error(`SVC_KUBE_VERSION=${wanted} but ${bins.apiserver} serves version ${String(served)}`);
      }
      log(`kube-apiserver ${served}`);
    }

    const kubeconfig = path.join(dir, 'kubeconfig');
    await writeFile(
      kubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'svc', cluster: { server, 'certificate-authority': caFile } }],
        users: [{ name: 'svc-admin', user: { token } }],
        contexts: [{ name: 'svc', context: { cluster: 'svc', user: 'svc-admin' } }],
        'current-context': 'svc',
      }),
      { mode: 0o600 },
    );

    // Per-cluster discovery cache: ports get reused across runs, and a shared ~/.kube/cache would
    // then serve another cluster's resource list (e.g. missing freshly installed CRDs).
    const cacheDir = path.join(dir, 'kube-cache');
    const kubectl = async (args: string[], kopts: KubectlOptions = {}): Promise<KubectlResult> => {
      const result = await run(
        bins.kubectl,
        [`--kubeconfig=${kubeconfig}`, `--cache-dir=${cacheDir}`, ...args],
        kopts.input,
      );
      if (result.code !== 0 && kopts.allowFailure !== true) {
        throw new Error(`kubectl ${args.join(' ')} exited with ${result.code}:\n${result.stderr.trim()}`);
      }
      return result;
    };

    const installCrds = async (crdDir: string): Promise<void> => {
      await kubectl(['apply', '--server-side', '-f', crdDir]);
      // kubectl wait fails at once on a CRD the API server has not written a status for yet
      // ("accessor error: <nil>"): asked again until every CRD has one, within the same minute.
      const deadline = Date.now() + 60_000;
      for (;;) {
        const left = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
        const waited = await kubectl(
          ['wait', '--for', 'condition=Established', 'crd', '--all', `--timeout=${String(left)}s`],
          { allowFailure: true },
        );
        if (waited.code === 0) break;
        if (!waited.stderr.includes('accessor error') || Date.now() > deadline) {
          throw new Error(`kubectl wait for the CRDs exited with ${waited.code}:\n${waited.stderr.trim()}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };

    let stopping: Promise<void> | undefined;
    let restarting: Promise<void> | undefined;
    const restart = async (ropts: { downMs?: number } = {}): Promise<void> => {
      if (stopping !== undefined) throw new Error('control plane stopped: cannot restart it');
      // Apiserver first, as in stop(); both are stopped on purpose, so no crash report.
      await apiserver.stop();
      await etcd.stop();
      log('stopped etcd and kube-apiserver for a restart');
      if (ropts.downMs !== undefined && ropts.downMs > 0) await delay(ropts.downMs);
      // The same ports, data dir and certificates (cert-dir keeps the generated serving cert).
      etcd = spawnEtcd();
      await etcdHealthy(etcd);
      apiserver = spawnApiserver();
      await apiserverReady(apiserver);
      etcd.reportCrash = true;
      apiserver.reportCrash = true;
      log('etcd and kube-apiserver restarted');
    };
    const plane: ControlPlane = {
      server,
      kubeconfig,
      token,
      caFile,
      dir,
      kubectl,
      installCrds,
      restart: (ropts) => {
        if (restarting !== undefined) throw new Error('control plane already restarting');
        restarting = restart(ropts).finally(() => {
          restarting = undefined;
        });
        return restarting;
      },
      stop: () => {
        stopping ??= (async () => {
          // A restart in progress finishes first, so its children are the ones stopped.
          await restarting?.catch(() => undefined);
          // Apiserver first, so it never runs against a vanished etcd.
          await apiserver.stop();
          await etcd.stop();
          livePlanes.delete(plane);
          ownedDirs.delete(dir);
          if (keepDirs()) {
            log(`kept ${dir}`);
          } else {
            await rm(dir, { recursive: true, force: true, maxRetries: 3 });
          }
        })();
        return stopping;
      },
    };
    livePlanes.add(plane);

    if (opts.crdDir !== undefined) {
      const manifests = (await readdir(opts.crdDir)).filter((f) => /\.(ya?ml|json)$/.test(f));
      log(`installing ${manifests.length} CRD manifest(s) from ${opts.crdDir}`);
      try {
        await installCrds(opts.crdDir);
      } catch (err) {
        await plane.stop();
        throw err;
      }
      log(`CRDs established after ${Date.now() - started}ms`);
    }
    etcd.reportCrash = true;
    apiserver.reportCrash = true;
    return plane;
  } catch (err) {
    // Keep the dir: the error message points at the logs in it.
    for (const child of children.reverse()) await child.stop();
    ownedDirs.delete(dir);
    throw err;
  }
}
