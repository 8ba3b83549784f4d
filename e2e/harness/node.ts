/**
 * A real single-node Kubernetes cluster on this machine, started by the project itself from real
 * parts: etcd and kube-apiserver (built by `make deps`), kube-controller-manager, kube-scheduler,
 * kubelet, kube-proxy (iptables mode), CoreDNS and the sandbox's pause (built by
 * `tools/build.sh node`), containerd, runc and the CNI plugins from Debian's packages (installed
 * here when missing), a bridge network with host-local addresses and portmap.
 *
 * Unlike control-plane.ts (one throwaway control plane per test process), the node outlives the
 * command that started it: its daemons run detached, their pids and settings are kept in
 * `nodeDir()/state.json`, the next `startNode()` reuses a node that is still healthy, and
 * `stopNode()` ends every process the node started (containers included), unmounts what they
 * mounted and undoes its network and sysctl changes. Needs root.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { createHash, generateKeyPair, randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { waitFor } from '../../lib/testing/wait.ts';
import { toolsDir } from './control-plane.ts';

const execFileAsync = promisify(execFile);
const generateKeyPairAsync = promisify(generateKeyPair);

/** Name of the Node object the kubelet registers. */
export const NODE_NAME = 'svc-node';
/** The pods' addresses (one node: one host-local range on one bridge). */
export const POD_CIDR = '10.244.0.0/24';
/** ClusterIPs; the first is the `kubernetes` Service, `DNS_IP` is kube-dns. */
export const SERVICE_CIDR = '10.96.0.0/16';
export const DNS_IP = '10.96.0.10';
export const CLUSTER_DOMAIN = 'cluster.local';
const APISERVER_PORT = 6443;
// Below the ephemeral range (32768+), so no test's free port takes them.
const ETCD_PORT = 12379;
const ETCD_PEER_PORT = 12380;
const BRIDGE = 'svc-cni0';
const CNI_NETWORK = 'svc-node';
/** Image names in the node's containerd (namespace k8s.io); made here, never pulled. */
export const PAUSE_IMAGE = 'localhost/svc/pause';
export const COREDNS_IMAGE = 'localhost/svc/coredns';

const STOP_GRACE_MS = 10_000;

/** What `state.json` records about a started node. */
interface NodeState {
  nodeIp: string;
  server: string;
  pids: Record<string, number>;
  /** sysctls as they were before the node changed them, restored by stopNode. */
  sysctls: Record<string, string>;
  startedAt: string;
  readyAfterMs: number;
}

/** A running node. */
export interface Node {
  /** `https://<node ip>:6443`. */
  server: string;
  /** Admin kubeconfig (group system:masters). */
  kubeconfig: string;
  /** The node's directory: data, configs, logs. */
  dir: string;
  nodeIp: string;
  /** The node's containerd socket (for `ctr -a`). */
  containerdSocket: string;
  /** Whether this call found the node already running. */
  reused: boolean;
  /** Milliseconds from the start until the Node and CoreDNS were Ready (of the run that started it). */
  readyAfterMs: number;
}

/** Options of {@link startNode}. */
export interface NodeOptions {
  /** Progress on stderr. */
  verbose?: boolean;
}

/** The node's directory: `SVC_NODE_DIR`, else `~/.cache/svc-node` (outside the repository). */
export function nodeDir(): string {
  const explicit = process.env.SVC_NODE_DIR;
  if (explicit !== undefined && explicit !== '') return explicit;
  const xdg = process.env.XDG_CACHE_HOME;
  const cache = xdg !== undefined && xdg !== '' ? xdg : path.join(os.homedir(), '.cache');
  return path.join(cache, 'svc-node');
}

/** Where images made here are cached as OCI archives, named by a hash of their content. */
export function imageCacheDir(): string {
  const xdg = process.env.XDG_CACHE_HOME;
  const cache = xdg !== undefined && xdg !== '' ? xdg : path.join(os.homedir(), '.cache');
  return path.join(cache, 'svc-images');
}

const paths = (dir: string) => ({
  state: path.join(dir, 'state.json'),
  pki: path.join(dir, 'pki'),
  logs: path.join(dir, 'logs'),
  kubeconfig: path.join(dir, 'kubeconfig'),
  etcd: path.join(dir, 'etcd'),
  containerd: path.join(dir, 'containerd'),
  containerdSocket: path.join(dir, 'containerd', 'containerd.sock'),
  kubelet: path.join(dir, 'kubelet'),
  manifests: path.join(dir, 'manifests'),
  podLogs: path.join(dir, 'pod-logs'),
  cni: path.join(dir, 'cni'),
  cniConf: path.join(dir, 'cni', 'net.d'),
  cniIpam: path.join(dir, 'cni', 'ipam'),
  config: path.join(dir, 'config'),
});

/** Binaries: etcd, kube-apiserver and kubectl from `make deps`, the rest from `tools/build.sh node`. */
const TOOLS = [
  'etcd',
  'kube-apiserver',
  'kubectl',
  'kube-controller-manager',
  'kube-scheduler',
  'kubelet',
  'kube-proxy',
  'coredns',
  'pause',
] as const;
type Tool = (typeof TOOLS)[number];

function tool(name: Tool): string {
  return path.join(toolsDir(), name);
}

/** Host commands and the Debian package that brings each. */
const HOST_PACKAGES: Record<string, string> = {
  containerd: 'containerd',
  runc: 'runc',
  '/usr/lib/cni/bridge': 'containernetworking-plugins',
  buildah: 'buildah',
  iptables: 'iptables',
  conntrack: 'conntrack',
  openssl: 'openssl',
};

async function sh(cmd: string, args: string[], opts: { input?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err !== null) {
        reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr.trim()}`));
      } else {
        resolve(stdout);
      }
    });
    // A command that exits without reading its stdin is reported through its exit code.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(opts.input ?? '');
  });
}

async function shOk(cmd: string, args: string[]): Promise<boolean> {
  try {
    await execFileAsync(cmd, args);
    return true;
  } catch {
    return false;
  }
}

function onPath(cmd: string): boolean {
  if (cmd.startsWith('/')) return existsSync(cmd);
  return (process.env.PATH ?? '')
    .split(':')
    .concat(['/usr/sbin', '/sbin'])
    .some((d) => existsSync(path.join(d, cmd)));
}

/** apt-get installs the host packages that are missing (we are root on these machines). */
export async function ensureHostPackages(log: (m: string) => void): Promise<void> {
  const missing = [
    ...new Set(
      Object.entries(HOST_PACKAGES)
        .filter(([cmd]) => !onPath(cmd))
        .map(([, pkg]) => pkg),
    ),
  ];
  if (missing.length === 0) return;
  log(`apt-get install -y ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = (): Promise<unknown> =>
    execFileAsync('apt-get', ['install', '-y', '-q', ...missing], { env, maxBuffer: 64 * 1024 * 1024 });
  try {
    await install();
  } catch {
    await execFileAsync('apt-get', ['update', '-q'], { env, maxBuffer: 64 * 1024 * 1024 });
    await install();
  }
}

/** The address of the interface of the default route: the node's InternalIP and the apiserver's. */
async function detectNodeIp(): Promise<string> {
  const explicit = process.env.SVC_NODE_IP;
  if (explicit !== undefined && explicit !== '') return explicit;
  const route = await sh('ip', ['-4', '-o', 'route', 'show', 'default']);
  const dev = /\bdev (\S+)/.exec(route)?.[1];
  if (dev === undefined)
    throw new Error('node: no IPv4 default route; set SVC_NODE_IP to an address of this machine');
  const addr = await sh('ip', ['-4', '-o', 'addr', 'show', 'dev', dev]);
  const ip = /\binet (\d+\.\d+\.\d+\.\d+)\//.exec(addr)?.[1];
  if (ip === undefined) throw new Error(`node: no IPv4 address on ${dev}; set SVC_NODE_IP`);
  return ip;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pid still runs the command we started (pids are reused). */
function ours(pid: number, dir: string, name: string): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes(name) && cmdline.includes(dir);
  } catch {
    return false;
  }
}

async function readState(dir: string): Promise<NodeState | undefined> {
  try {
    return JSON.parse(await readFile(paths(dir).state, 'utf8')) as NodeState;
  } catch {
    return undefined;
  }
}

function tail(file: string, lines = 25): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch (err) {
    return `(cannot read ${file}: ${String(err)})`;
  }
}

/** Starts a daemon detached from us, its output in logs/<name>.log. */
function daemon(dir: string, name: string, bin: string, args: string[]): number {
  const logFile = path.join(paths(dir).logs, `${name}.log`);
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd] });
    child.unref();
    if (child.pid === undefined) throw new Error(`node: ${name} did not start`);
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

async function httpsGet(url: string, ca: Buffer, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      url,
      { ca, headers: token === undefined ? {} : { Authorization: `Bearer ${token}` }, timeout: 5_000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout GET ${url}`)));
    req.on('error', reject);
  });
}

/** Waits for `check`, failing at once with the daemon's log if it died. */
async function waitDaemon(
  what: string,
  dir: string,
  name: string,
  pid: number,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  try {
    await waitFor(
      what,
      async () => {
        if (!alive(pid)) throw new Error(`${name} exited`);
        return await check().catch(() => false);
      },
      timeoutMs,
      250,
    );
  } catch (err) {
    const logFile = path.join(paths(dir).logs, `${name}.log`);
    throw new Error(
      `node: ${err instanceof Error ? err.message : String(err)}\nlog: ${logFile}\n--- last lines ---\n${tail(logFile)}`,
      { cause: err },
    );
  }
}

/** A CA and the certificates the node's TLS needs, made with openssl. */
async function makePki(pki: string, nodeIp: string): Promise<void> {
  await mkdir(pki, { recursive: true, mode: 0o700 });
  const f = (name: string): string => path.join(pki, name);
  await sh('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '3650',
    '-subj',
    '/CN=svc-node-ca',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
  ]);
  const leaf = async (name: string, subj: string, ext: string): Promise<void> => {
    await sh('openssl', [
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      subj,
      '-keyout',
      f(`${name}.key`),
      '-out',
      f(`${name}.csr`),
    ]);
    await writeFile(f(`${name}.ext`), ext);
    await sh('openssl', [
      'x509',
      '-req',
      '-in',
      f(`${name}.csr`),
      '-CA',
      f('ca.crt'),
      '-CAkey',
      f('ca.key'),
      '-CAcreateserial',
      '-days',
      '3650',
      '-extfile',
      f(`${name}.ext`),
      '-out',
      f(`${name}.crt`),
    ]);
  };
  const sans = [
    'DNS:kubernetes',
    'DNS:kubernetes.default',
    'DNS:kubernetes.default.svc',
    `DNS:kubernetes.default.svc.${CLUSTER_DOMAIN}`,
    'DNS:localhost',
    `IP:${nodeIp}`,
    'IP:127.0.0.1',
    'IP:10.96.0.1',
  ];
  await leaf(
    'apiserver',
    '/CN=kube-apiserver',
    `basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=${sans.join(',')}\n`,
  );
  // The apiserver's client certificate towards the kubelet (logs, exec, port-forward).
  await leaf(
    'apiserver-kubelet-client',
    '/O=system:masters/CN=kube-apiserver-kubelet-client',
    'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n',
  );
  const { publicKey, privateKey } = await generateKeyPairAsync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  await writeFile(f('sa.pub'), publicKey, { mode: 0o600 });
  await writeFile(f('sa.key'), privateKey, { mode: 0o600 });
}

/** Static bearer tokens: one user per component, as kubeadm's certificates would name them. */
const USERS = {
  admin: { user: 'svc-admin', groups: ['system:masters'] },
  kubelet: { user: `system:node:${NODE_NAME}`, groups: ['system:nodes'] },
  'kube-proxy': { user: 'system:kube-proxy', groups: [] as string[] },
  'kube-controller-manager': { user: 'system:kube-controller-manager', groups: [] as string[] },
  'kube-scheduler': { user: 'system:kube-scheduler', groups: [] as string[] },
} as const;
type User = keyof typeof USERS;

async function writeKubeconfigs(dir: string, server: string): Promise<Record<User, string>> {
  const p = paths(dir);
  const lines: string[] = [];
  const files = {} as Record<User, string>;
  for (const [name, u] of Object.entries(USERS) as [User, (typeof USERS)[User]][]) {
    const token = randomBytes(24).toString('hex');
    lines.push(`${token},${u.user},${u.user},"${u.groups.join(',')}"`);
    const file = name === 'admin' ? p.kubeconfig : path.join(p.config, `${name}.kubeconfig`);
    await writeFile(
      file,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'svc-node', cluster: { server, 'certificate-authority': path.join(p.pki, 'ca.crt') } },
        ],
        users: [{ name: u.user, user: { token } }],
        contexts: [{ name: 'svc-node', context: { cluster: 'svc-node', user: u.user } }],
        'current-context': 'svc-node',
      }),
      { mode: 0o600 },
    );
    files[name] = file;
  }
  await writeFile(path.join(p.pki, 'tokens.csv'), `${lines.join('\n')}\n`, { mode: 0o600 });
  return files;
}

async function writeConfigs(dir: string, nodeIp: string, kubeconfigs: Record<User, string>): Promise<void> {
  const p = paths(dir);
  await writeFile(
    path.join(p.config, 'containerd.toml'),
    `# The test node's own containerd: its own root, state, socket and runc root.
version = 2
root = "${path.join(p.containerd, 'root')}"
state = "${path.join(p.containerd, 'state')}"
[grpc]
  address = "${p.containerdSocket}"
[ttrpc]
  address = "${p.containerdSocket}.ttrpc"
[debug]
  level = "info"
[plugins."io.containerd.internal.v1.opt"]
  path = "${path.join(p.containerd, 'opt')}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}:${imageTag('pause')}"
  # Processes here lack CAP_SYS_RESOURCE: a sandbox asking for oom_score_adj -998 fails.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${path.join(p.containerd, 'runc')}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${p.cniConf}"
`,
  );
  await writeFile(
    path.join(p.cniConf, '10-svc-node.conflist'),
    JSON.stringify(
      {
        cniVersion: '1.0.0',
        name: CNI_NETWORK,
        plugins: [
          {
            type: 'bridge',
            bridge: BRIDGE,
            isGateway: true,
            ipMasq: true,
            hairpinMode: true,
            ipam: {
              type: 'host-local',
              ranges: [[{ subnet: POD_CIDR }]],
              routes: [{ dst: '0.0.0.0/0' }],
              dataDir: p.cniIpam,
            },
          },
          { type: 'portmap', capabilities: { portMappings: true } },
        ],
      },
      null,
      2,
    ),
  );
  await writeFile(
    path.join(p.config, 'kubelet.yaml'),
    stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      // This machine has cgroup v1, which the kubelet refuses by default since 1.35.
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      containerRuntimeEndpoint: `unix://${p.containerdSocket}`,
      staticPodPath: p.manifests,
      podLogsDir: p.podLogs,
      address: nodeIp,
      port: 10250,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort: 10248,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: path.join(p.pki, 'ca.crt') },
      },
      authorization: { mode: 'Webhook' },
      clusterDNS: [DNS_IP],
      clusterDomain: CLUSTER_DOMAIN,
      // No upstream resolver for pods: the machine's is not theirs to use, cluster names suffice.
      resolvConf: '',
      failSwapOn: false,
      // Images are made here, not pulled: never collect them.
      imageGCHighThresholdPercent: 100,
      evictionHard: {
        'memory.available': '100Mi',
        'nodefs.available': '1%',
        'imagefs.available': '1%',
        'nodefs.inodesFree': '1%',
      },
      serializeImagePulls: false,
      maxPods: 110,
    }),
  );
  await writeFile(
    path.join(p.config, 'kube-proxy.yaml'),
    stringify({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'iptables',
      clientConnection: { kubeconfig: kubeconfigs['kube-proxy'] },
      hostnameOverride: NODE_NAME,
      clusterCIDR: POD_CIDR,
      bindAddress: nodeIp,
      healthzBindAddress: '127.0.0.1:10256',
      metricsBindAddress: '127.0.0.1:10249',
      // Leave the machine's conntrack settings alone.
      conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    }),
  );
}

/** Hash of a file, for image tags and cache names. */
function fileHash(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 16);
}

function imageTag(binary: 'pause' | 'coredns'): string {
  return fileHash(tool(binary));
}

/**
 * An image made of one static binary (`from scratch`), built with buildah into an OCI archive
 * under imageCacheDir(), reused while the binary is the same. Returns the archive's path.
 */
export async function scratchImage(opts: {
  name: string;
  tag: string;
  binary: string;
  entrypoint: string[];
  user?: string;
}): Promise<string> {
  const cache = imageCacheDir();
  await mkdir(cache, { recursive: true });
  const archive = path.join(cache, `${opts.name.replace(/[/:]/g, '_')}-${opts.tag}.oci.tar`);
  if (existsSync(archive)) return archive;
  const ctr = (await sh('buildah', ['from', 'scratch'])).trim();
  try {
    await sh('buildah', ['copy', '--chmod', '0755', ctr, opts.binary, opts.entrypoint[0] ?? '/bin']);
    await sh('buildah', [
      'config',
      '--entrypoint',
      JSON.stringify(opts.entrypoint),
      '--user',
      opts.user ?? '65532:65532',
      ctr,
    ]);
    await sh('buildah', ['commit', '--quiet', ctr, `oci-archive:${archive}.tmp:${opts.name}:${opts.tag}`]);
  } finally {
    await sh('buildah', ['rm', ctr]).catch(() => undefined);
  }
  await sh('mv', [`${archive}.tmp`, archive]);
  return archive;
}

/** Imports an image archive (OCI or docker) into the node's containerd, namespace k8s.io. */
export async function importImage(archive: string, dir = nodeDir()): Promise<void> {
  await sh('ctr', [
    '-a',
    paths(dir).containerdSocket,
    '-n',
    'k8s.io',
    'images',
    'import',
    '--all-platforms',
    archive,
  ]);
}

function coreDnsManifests(image: string): string {
  const corefile = `.:1053 {
    errors
    health {
        lameduck 5s
    }
    ready
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loadbalance
    reload
}
`;
  const labels = { 'k8s-app': 'kube-dns' };
  const docs = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: 'kube-system' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:coredns' },
      rules: [
        {
          apiGroups: [''],
          resources: ['endpoints', 'services', 'pods', 'namespaces'],
          verbs: ['list', 'watch'],
        },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }],
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'coredns', namespace: 'kube-system' },
      data: { Corefile: corefile },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: 'kube-system', labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'coredns',
            priorityClassName: 'system-cluster-critical',
            dnsPolicy: 'Default',
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
            tolerations: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }],
            containers: [
              {
                name: 'coredns',
                image,
                imagePullPolicy: 'Never',
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 1053, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 1053, protocol: 'TCP' },
                ],
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                resources: { requests: { cpu: '50m', memory: '50Mi' }, limits: { memory: '170Mi' } },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
                livenessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10 },
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 2 },
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels },
      spec: {
        clusterIP: DNS_IP,
        selector: labels,
        ports: [
          { name: 'dns', port: 53, targetPort: 1053, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, targetPort: 1053, protocol: 'TCP' },
        ],
      },
    },
  ];
  return docs.map((d) => stringify(d)).join('---\n');
}

/** Runs kubectl against the node. */
export async function nodeKubectl(args: string[], input?: string, dir = nodeDir()): Promise<string> {
  return sh(tool('kubectl'), [`--kubeconfig=${paths(dir).kubeconfig}`, ...args], { input });
}

async function setSysctl(key: string, value: string, saved: Record<string, string>): Promise<void> {
  const file = path.join('/proc/sys', key.replaceAll('.', '/'));
  const before = (await readFile(file, 'utf8')).trim();
  if (before === value) return;
  saved[key] = before;
  await writeFile(file, value);
}

/** The node's health: every daemon alive and the apiserver ready. */
async function healthy(dir: string, state: NodeState): Promise<boolean> {
  for (const [name, pid] of Object.entries(state.pids)) {
    if (!alive(pid) || !ours(pid, dir, name)) return false;
  }
  try {
    await nodeKubectl(['get', '--raw', '/readyz'], undefined, dir);
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts the node, or returns the one already running. Builds nothing: the binaries come from
 * `make deps` and `tools/build.sh node` (`make node` runs both).
 */
export async function startNode(opts: NodeOptions = {}): Promise<Node> {
  const started = Date.now();
  const log = (m: string): void => {
    if (opts.verbose === true)
      process.stderr.write(`node: ${m} (${((Date.now() - started) / 1000).toFixed(1)}s)\n`);
  };
  const dir = nodeDir();
  const p = paths(dir);
  const info = (state: NodeState, reused: boolean): Node => ({
    server: state.server,
    kubeconfig: p.kubeconfig,
    dir,
    nodeIp: state.nodeIp,
    containerdSocket: p.containerdSocket,
    reused,
    readyAfterMs: state.readyAfterMs,
  });

  const previous = await readState(dir);
  if (previous !== undefined) {
    if (await healthy(dir, previous)) {
      log(`reusing the node running since ${previous.startedAt}`);
      return info(previous, true);
    }
    log('a previous node is not healthy: stopping what is left of it');
    await stopNode(opts);
  }
  if (process.getuid?.() !== 0) throw new Error('node: must run as root (containerd, kubelet, iptables)');
  for (const t of TOOLS) {
    if (!existsSync(tool(t))) {
      throw new Error(
        `node: ${t} not found at ${tool(t)}; run \`make node\` (make deps, then tools/build.sh node)`,
      );
    }
  }
  await ensureHostPackages(log);
  const nodeIp = await detectNodeIp();
  const server = `https://${nodeIp}:${APISERVER_PORT}`;
  const state: NodeState = {
    nodeIp,
    server,
    pids: {},
    sysctls: {},
    startedAt: new Date().toISOString(),
    readyAfterMs: 0,
  };

  // Everything but the logs of a previous run is rebuilt.
  for (const d of Object.values(p)) {
    if (d !== p.logs && d !== p.state && d !== p.kubeconfig && d !== p.containerdSocket) {
      await rm(d, { recursive: true, force: true });
    }
  }
  await rm(p.logs, { recursive: true, force: true });
  for (const d of [p.logs, p.config, p.manifests, p.podLogs, p.cniConf, p.cniIpam, p.kubelet, p.containerd]) {
    await mkdir(d, { recursive: true });
  }
  const save = (): Promise<void> => writeFile(p.state, JSON.stringify(state, null, 2));

  try {
    await makePki(p.pki, nodeIp);
    const kubeconfigs = await writeKubeconfigs(dir, server);
    await writeConfigs(dir, nodeIp, kubeconfigs);
    await setSysctl('net.ipv4.ip_forward', '1', state.sysctls);
    await setSysctl('net.bridge.bridge-nf-call-iptables', '1', state.sysctls);
    await save();

    const etcdUrl = `http://127.0.0.1:${ETCD_PORT}`;
    state.pids.etcd = daemon(dir, 'etcd', tool('etcd'), [
      '--name=svc-node',
      `--data-dir=${p.etcd}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=http://127.0.0.1:${ETCD_PEER_PORT}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${ETCD_PEER_PORT}`,
      `--initial-cluster=svc-node=http://127.0.0.1:${ETCD_PEER_PORT}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ]);
    await save();
    // containerd starts beside etcd: they do not depend on each other.
    state.pids.containerd = daemon(dir, 'containerd', 'containerd', [
      '--config',
      path.join(p.config, 'containerd.toml'),
    ]);
    await save();
    await waitDaemon(
      'etcd /health',
      dir,
      'etcd',
      state.pids.etcd,
      async () => {
        const res = await fetch(`${etcdUrl}/health`);
        return res.ok && (await res.text()).includes('"health":"true"');
      },
      30_000,
    );
    log('etcd healthy');

    const pki = (f: string): string => path.join(p.pki, f);
    state.pids['kube-apiserver'] = daemon(dir, 'kube-apiserver', tool('kube-apiserver'), [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${nodeIp}`,
      `--advertise-address=${nodeIp}`,
      `--secure-port=${APISERVER_PORT}`,
      `--tls-cert-file=${pki('apiserver.crt')}`,
      `--tls-private-key-file=${pki('apiserver.key')}`,
      `--client-ca-file=${pki('ca.crt')}`,
      `--token-auth-file=${pki('tokens.csv')}`,
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      '--allow-privileged=true',
      `--service-account-issuer=https://kubernetes.default.svc.${CLUSTER_DOMAIN}`,
      `--service-account-key-file=${pki('sa.pub')}`,
      `--service-account-signing-key-file=${pki('sa.key')}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      `--kubelet-client-certificate=${pki('apiserver-kubelet-client.crt')}`,
      `--kubelet-client-key=${pki('apiserver-kubelet-client.key')}`,
      '--kubelet-preferred-address-types=InternalIP',
    ]);
    await save();
    const ca = readFileSync(pki('ca.crt'));
    await waitDaemon(
      'kube-apiserver /readyz',
      dir,
      'kube-apiserver',
      state.pids['kube-apiserver'],
      async () => {
        const res = await httpsGet(`${server}/readyz`, ca);
        return res.status === 200;
      },
      90_000,
    );
    log('kube-apiserver ready');

    state.pids['kube-controller-manager'] = daemon(
      dir,
      'kube-controller-manager',
      tool('kube-controller-manager'),
      [
        `--kubeconfig=${kubeconfigs['kube-controller-manager']}`,
        `--authentication-kubeconfig=${kubeconfigs['kube-controller-manager']}`,
        `--authorization-kubeconfig=${kubeconfigs['kube-controller-manager']}`,
        '--bind-address=127.0.0.1',
        '--leader-elect=false',
        '--use-service-account-credentials=true',
        `--service-account-private-key-file=${pki('sa.key')}`,
        `--root-ca-file=${pki('ca.crt')}`,
        `--cluster-signing-cert-file=${pki('ca.crt')}`,
        `--cluster-signing-key-file=${pki('ca.key')}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        '--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller',
      ],
    );
    state.pids['kube-scheduler'] = daemon(dir, 'kube-scheduler', tool('kube-scheduler'), [
      `--kubeconfig=${kubeconfigs['kube-scheduler']}`,
      `--authentication-kubeconfig=${kubeconfigs['kube-scheduler']}`,
      `--authorization-kubeconfig=${kubeconfigs['kube-scheduler']}`,
      '--bind-address=127.0.0.1',
      '--leader-elect=false',
    ]);
    await save();

    await waitDaemon(
      'containerd socket',
      dir,
      'containerd',
      state.pids.containerd,
      () => shOk('ctr', ['-a', p.containerdSocket, 'version']),
      30_000,
    );
    log('containerd up');
    const pauseArchive = await scratchImage({
      name: PAUSE_IMAGE,
      tag: imageTag('pause'),
      binary: tool('pause'),
      entrypoint: ['/pause'],
    });
    const corednsTag = imageTag('coredns');
    const corednsArchive = await scratchImage({
      name: COREDNS_IMAGE,
      tag: corednsTag,
      binary: tool('coredns'),
      entrypoint: ['/coredns'],
    });
    await importImage(pauseArchive, dir);
    await importImage(corednsArchive, dir);
    log('pause and coredns images imported');

    state.pids.kubelet = daemon(dir, 'kubelet', tool('kubelet'), [
      `--config=${path.join(p.config, 'kubelet.yaml')}`,
      `--kubeconfig=${kubeconfigs.kubelet}`,
      `--root-dir=${p.kubelet}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${nodeIp}`,
    ]);
    state.pids['kube-proxy'] = daemon(dir, 'kube-proxy', tool('kube-proxy'), [
      `--config=${path.join(p.config, 'kube-proxy.yaml')}`,
    ]);
    await save();

    await waitDaemon(
      `Node ${NODE_NAME} Ready`,
      dir,
      'kubelet',
      state.pids.kubelet,
      async () => {
        const out = await nodeKubectl(
          ['get', 'node', NODE_NAME, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'],
          undefined,
          dir,
        );
        return out.trim() === 'True';
      },
      120_000,
    );
    log(`node ${NODE_NAME} Ready`);

    await nodeKubectl(['apply', '-f', '-'], coreDnsManifests(`${COREDNS_IMAGE}:${corednsTag}`), dir);
    await waitDaemon(
      'CoreDNS Deployment available',
      dir,
      'kubelet',
      state.pids.kubelet,
      async () => {
        const out = await nodeKubectl(
          ['-n', 'kube-system', 'get', 'deploy', 'coredns', '-o', 'jsonpath={.status.availableReplicas}'],
          undefined,
          dir,
        );
        return out.trim() === '1';
      },
      120_000,
    );
    state.readyAfterMs = Date.now() - started;
    await save();
    log('CoreDNS available: the node is ready');
    return info(state, false);
  } catch (err) {
    await save().catch(() => undefined);
    throw err;
  }
}

function procsWithCmdline(match: (cmdline: string) => boolean): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (match(cmdline)) pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** Every process in the kubelet's pod cgroups (containers and their children). */
function podProcesses(): number[] {
  const pids = new Set<number>();
  const walk = (d: string): void => {
    let entries: string[];
    try {
      entries = readdirSync(d);
    } catch {
      return;
    }
    try {
      for (const line of readFileSync(path.join(d, 'cgroup.procs'), 'utf8').split('\n')) {
        if (line !== '') pids.add(Number(line));
      }
    } catch {
      // Not a cgroup dir.
    }
    for (const e of entries) {
      const sub = path.join(d, e);
      try {
        if (statSync(sub).isDirectory()) walk(sub);
      } catch {
        // Removed meanwhile.
      }
    }
  };
  walk('/sys/fs/cgroup/pids/kubepods');
  return [...pids];
}

/** Removes the kubelet's cgroups (deepest first) in every v1 hierarchy, once they hold no process. */
function removePodCgroups(): void {
  let hierarchies: string[];
  try {
    hierarchies = readdirSync('/sys/fs/cgroup');
  } catch {
    return;
  }
  const rmdirDeep = (d: string): void => {
    let entries: string[];
    try {
      entries = readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return;
    }
    for (const e of entries) rmdirDeep(path.join(d, e));
    try {
      execFileSyncQuiet('rmdir', [d]);
    } catch {
      // Still busy: left for the next stop.
    }
  };
  for (const h of hierarchies) {
    const root = path.join('/sys/fs/cgroup', h, 'kubepods');
    if (existsSync(root)) rmdirDeep(root);
  }
}

function execFileSyncQuiet(cmd: string, args: string[]): void {
  // rmdir(2) on a cgroup dir; node's rmSync refuses non-empty-looking cgroup dirs.
  const res = spawnSync(cmd, args);
  if (res.status !== 0) throw new Error(`${cmd} failed`);
}

async function killAndWait(pids: number[], what: string, log: (m: string) => void): Promise<void> {
  const live = pids.filter(alive);
  if (live.length === 0) return;
  for (const pid of live) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // Gone.
    }
  }
  const deadline = Date.now() + STOP_GRACE_MS;
  while (Date.now() < deadline && live.some(alive)) await delay(100);
  const stubborn = live.filter(alive);
  for (const pid of stubborn) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
  if (stubborn.length > 0) log(`${what}: killed ${stubborn.length} process(es) that ignored SIGTERM`);
  while (live.some(alive)) await delay(50);
}

/**
 * Stops the node: the kubelet, every container, containerd and its shims, kube-proxy (and its
 * iptables rules), the control plane; unmounts everything mounted under the node's directory
 * and the pods' network namespaces; removes the bridge, the CNI's iptables chains and the pod
 * cgroups; restores the sysctls; deletes the node's data (its logs stay in `logs/`).
 */
export async function stopNode(opts: NodeOptions = {}): Promise<void> {
  const log = (m: string): void => {
    if (opts.verbose === true) process.stderr.write(`node: ${m}\n`);
  };
  const dir = nodeDir();
  const p = paths(dir);
  const state = await readState(dir);
  const pidOf = (name: string): number[] => {
    const pid = state?.pids[name];
    const listed = pid !== undefined && ours(pid, dir, name) ? [pid] : [];
    // Also any copy started against this dir whose pid was not recorded (a start that crashed).
    return [
      ...new Set([...listed, ...procsWithCmdline((c) => c.includes(dir) && c.includes(tool(name as Tool)))]),
    ];
  };

  await killAndWait(pidOf('kubelet'), 'kubelet', log);
  // Containers: SIGKILL, as the kubelet is no longer there to stop them gracefully.
  for (const pid of podProcesses()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
  const shims = procsWithCmdline((c) => c.includes('containerd-shim') && c.includes(p.containerdSocket));
  const containerd = state?.pids.containerd;
  await killAndWait(
    [...shims, ...(containerd !== undefined && ours(containerd, dir, 'containerd') ? [containerd] : [])],
    'containerd',
    log,
  );
  await killAndWait(pidOf('kube-proxy'), 'kube-proxy', log);
  if (existsSync(tool('kube-proxy'))) {
    // Removes the KUBE-* chains and rules kube-proxy wrote.
    await sh(tool('kube-proxy'), ['--cleanup']).catch((err: unknown) => {
      log(`kube-proxy --cleanup: ${String(err)}`);
    });
  }
  for (const name of ['kube-scheduler', 'kube-controller-manager', 'kube-apiserver', 'etcd']) {
    await killAndWait(pidOf(name), name, log);
  }

  // Mounts: the kubelet's volumes, containerd's rootfs and shm, the pods' netns; deepest first.
  const mountinfo = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  const mounts = mountinfo
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m.startsWith(`${dir}/`) || /^\/(var\/)?run\/netns\/cni-/.test(m))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) {
    await sh('umount', [m]).catch(() => sh('umount', ['-l', m]).catch(() => undefined));
  }
  for (const netns of existsSync('/run/netns') ? readdirSync('/run/netns') : []) {
    if (netns.startsWith('cni-')) await rm(path.join('/run/netns', netns), { force: true });
  }
  if (mounts.length > 0) log(`unmounted ${mounts.length} mount(s)`);

  removePodCgroups();
  if (await shOk('ip', ['link', 'show', BRIDGE])) await sh('ip', ['link', 'del', BRIDGE]);
  await removeChains();
  for (const [key, value] of Object.entries(state?.sysctls ?? {})) {
    await writeFile(path.join('/proc/sys', key.replaceAll('.', '/')), value).catch(() => undefined);
  }
  for (const d of Object.values(p)) {
    if (d !== p.logs) await rm(d, { recursive: true, force: true, maxRetries: 3 });
  }
  log('stopped');
}

/**
 * The iptables chains left behind: the kubelet's (KUBE-FIREWALL, KUBE-KUBELET-CANARY, ...), and the
 * bridge plugin's masquerade chains (CNI-<hash>) of pods that died unannounced. kube-proxy's own
 * are gone already (--cleanup). Rules jumping to them are deleted by number, then the chains.
 */
async function removeChains(): Promise<void> {
  const ours = /^(KUBE|CNI)-/;
  for (const table of ['filter', 'nat', 'mangle']) {
    let rules: string;
    try {
      rules = await sh('iptables', ['-t', table, '-S']);
    } catch {
      continue;
    }
    const chains = new Set<string>();
    const builtin = new Set<string>();
    for (const line of rules.split('\n')) {
      const [verb, chain] = line.split(' ');
      if (chain === undefined) continue;
      if (verb === '-N' && ours.test(chain)) chains.add(chain);
      if (verb === '-P') builtin.add(chain);
    }
    if (chains.size === 0) continue;
    for (const chain of [...builtin, ...[...rules.matchAll(/^-N (\S+)/gm)].map((m) => m[1] ?? '')]) {
      if (chains.has(chain)) continue;
      const listing = await sh('iptables', ['-t', table, '-L', chain, '-n', '--line-numbers']).catch(
        () => '',
      );
      const numbers = listing
        .split('\n')
        .map((l) => l.split(/\s+/))
        .filter(([num, target]) => /^\d+$/.test(num ?? '') && chains.has(target ?? ''))
        .map(([num]) => Number(num))
        .sort((a, b) => b - a);
      for (const n of numbers)
        await sh('iptables', ['-t', table, '-D', chain, String(n)]).catch(() => undefined);
    }
    for (const c of chains) await sh('iptables', ['-t', table, '-F', c]).catch(() => undefined);
    for (const c of chains) await sh('iptables', ['-t', table, '-X', c]).catch(() => undefined);
  }
}

/** Whether a node is running and healthy, and its kubeconfig. */
export async function nodeStatus(): Promise<{ running: boolean; kubeconfig?: string; server?: string }> {
  const dir = nodeDir();
  const state = await readState(dir);
  if (state === undefined || !(await healthy(dir, state))) return { running: false };
  return { running: true, kubeconfig: paths(dir).kubeconfig, server: state.server };
}
