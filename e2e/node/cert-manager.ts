/**
 * cert-manager on the test node, installed the way its users install it: its own Helm chart (from
 * its module zip, put together by `tools/build.sh cert-manager`, CRDs included) with the
 * controller, webhook and cainjector images made here (`tools/cert-manager-images.sh`: built from
 * its Go modules, `from scratch`, uid 1000), never pulled. The version is the one
 * tools/cert-manager/go.mod pins, the oldest the charts claim to support.
 *
 * {@link installCertManager} is idempotent and shared by the node suites: the first caller installs
 * the release `cert-manager` in the namespace `cert-manager`, later callers find it installed with
 * the same images and only check that it issues. Nobody uninstalls it (the node's rules). Other
 * suites call it before installing a chart with `webhooks.certManager.enabled=true` or
 * `tls.certManager.enabled=true`.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { waitFor } from '../../lib/testing/wait.ts';
import { toolsDir } from '../harness/control-plane.ts';
import { apply, cluster, helm, kubectl, repoRoot, run } from './helpers.ts';

/** Namespace and Helm release name of cert-manager on the node. */
export const CERT_MANAGER_NAMESPACE = 'cert-manager';
const RELEASE = 'cert-manager';
/** Held while the release is installed or upgraded: several suites may call the installer at once. */
const LOCK = '/tmp/svc-node-cert-manager.lock';
const COMPONENTS = ['controller', 'webhook', 'cainjector'] as const;
type Component = (typeof COMPONENTS)[number];

/** What {@link installCertManager} found or did. */
export interface CertManager {
  /** cert-manager's version, as its chart says (`v1.8.2`). */
  version: string;
  /** Component (`controller`, `webhook`, `cainjector`) -> image reference in the node's containerd. */
  images: Map<Component, string>;
  /** Whether the release was already installed with these images (nothing was installed). */
  reused: boolean;
  /** Milliseconds from `helm upgrade --install` until a test Certificate was Ready (0 when reused). */
  installToReadyMs: number;
  /** Milliseconds spent building (or finding in the cache) and importing the images. */
  imagesMs: number;
}

/** The chart's values: the images made here, non-root and read-only as the operator's pods run. */
function chartValues(images: CertManager['images']): object {
  const image = (c: Component): object => {
    const ref = images.get(c) ?? '';
    const colon = ref.lastIndexOf(':');
    return { repository: ref.slice(0, colon), tag: ref.slice(colon + 1), pullPolicy: 'Never' };
  };
  // No runAsUser: the kubelet checks the images' own user (1000) against runAsNonRoot.
  const pod = { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };
  const container = {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] },
  };
  return {
    installCRDs: true,
    image: image('controller'),
    securityContext: pod,
    containerSecurityContext: container,
    webhook: { image: image('webhook'), securityContext: pod, containerSecurityContext: container },
    cainjector: { image: image('cainjector'), securityContext: pod, containerSecurityContext: container },
    // Its check runs cmctl, an image not made here; checkIssues checks more (a Certificate Ready).
    startupapicheck: { enabled: false },
  };
}

interface ImageValue {
  repository?: string;
  tag?: string;
}

/** The release's images as Helm keeps its values, or undefined when it is not deployed. */
async function deployedImages(): Promise<string[] | undefined> {
  let status: { info?: { status?: string } };
  try {
    status = JSON.parse(
      await helm(['status', RELEASE, '-n', CERT_MANAGER_NAMESPACE, '-o', 'json']),
    ) as typeof status;
  } catch {
    return undefined;
  }
  if (status.info?.status !== 'deployed') return undefined;
  const values = JSON.parse(
    await helm(['get', 'values', RELEASE, '-n', CERT_MANAGER_NAMESPACE, '-o', 'json']),
  ) as { image?: ImageValue; webhook?: { image?: ImageValue }; cainjector?: { image?: ImageValue } };
  const ref = (i?: ImageValue): string => `${i?.repository ?? ''}:${i?.tag ?? ''}`;
  return [ref(values.image), ref(values.webhook?.image), ref(values.cainjector?.image)];
}

/**
 * A self-signed Issuer and a Certificate in cert-manager's namespace, until the Certificate is
 * Ready: the API server called cert-manager's webhook through its Service for both, and the
 * controller issued the Secret. All three are removed afterwards.
 */
export async function checkIssues(timeoutMs = 180_000): Promise<void> {
  const name = `svc-check-${randomBytes(3).toString('hex')}`;
  const docs = [
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: { name, namespace: CERT_MANAGER_NAMESPACE },
      spec: { selfSigned: {} },
    },
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name, namespace: CERT_MANAGER_NAMESPACE },
      spec: {
        secretName: name,
        commonName: name,
        dnsNames: [`${name}.${CERT_MANAGER_NAMESPACE}.svc`],
        issuerRef: { name, kind: 'Issuer', group: 'cert-manager.io' },
      },
    },
  ];
  try {
    // Refused while the webhook does not answer yet (no endpoint, or its CA not yet injected).
    await waitFor(
      'cert-manager webhook to admit an Issuer and a Certificate',
      () => apply(docs),
      timeoutMs,
      1000,
    );
    await waitFor(
      `the Certificate ${CERT_MANAGER_NAMESPACE}/${name} Ready`,
      async () =>
        (await kubectl([
          '-n',
          CERT_MANAGER_NAMESPACE,
          'get',
          'certificate',
          name,
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ])) === 'True',
      timeoutMs,
      500,
    );
  } finally {
    await kubectl([
      '-n',
      CERT_MANAGER_NAMESPACE,
      'delete',
      `certificate/${name}`,
      `issuer/${name}`,
      `secret/${name}`,
      '--ignore-not-found',
      '--wait=false',
    ]).catch(() => undefined);
  }
}

/**
 * cert-manager on the cluster, issuing. On the node: builds (or finds cached) its images and
 * imports them, installs the release unless it is deployed with these images, then waits until a
 * test Certificate is Ready. On another cluster (SVC_E2E_KUBECONFIG): cert-manager must be
 * installed already (the kind workflow installs it); only the check runs.
 */
export async function installCertManager(): Promise<CertManager> {
  const log = (m: string): void => {
    process.stderr.write(`cert-manager: ${m}\n`);
  };
  const { node } = await cluster();
  const images: CertManager['images'] = new Map();
  if (node === undefined) {
    await checkIssues();
    return { version: '', images, reused: true, installToReadyMs: 0, imagesMs: 0 };
  }
  const chart = path.join(toolsDir(), 'cert-manager-chart');

  let started = Date.now();
  // A first build compiles the three commands: 20 minutes on two cores busy with other builds
  // (2026-11-27), beyond run()'s default of 15.
  const tsv = await run(
    path.join(repoRoot, 'tools', 'cert-manager-images.sh'),
    ['import', node.containerdSocket],
    undefined,
    40 * 60_000,
  );
  for (const line of tsv.trim().split('\n')) {
    const [name, ref] = line.split('\t');
    const component = COMPONENTS.find((c) => name === `cert-manager-${c}`);
    if (component !== undefined && ref !== undefined) images.set(component, ref);
  }
  if (images.size !== COMPONENTS.length) throw new Error(`tools/cert-manager-images.sh printed:\n${tsv}`);
  const imagesMs = Date.now() - started;
  const version =
    /^version:\s*(\S+)/m.exec(await readFile(path.join(chart, 'Chart.yaml'), 'utf8'))?.[1] ?? '';
  log(`${version}: images ready in ${(imagesMs / 1000).toFixed(1)}s`);

  const wanted = COMPONENTS.map((c) => images.get(c));
  const current = await deployedImages();
  if (current?.every((ref, i) => ref === wanted[i]) === true) {
    log('installed with these images already');
    await checkIssues();
    return { version, images, reused: true, installToReadyMs: 0, imagesMs };
  }

  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-cert-manager-'));
  try {
    const values = path.join(dir, 'values.yaml');
    await writeFile(values, stringify(chartValues(images)));
    started = Date.now();
    log(`helm upgrade --install ${RELEASE} ${version}`);
    // Under the lock: a second installer waits here, then upgrades to the same values (no change).
    await run('flock', [
      LOCK,
      path.join(toolsDir(), 'helm'),
      `--kubeconfig=${node.kubeconfig}`,
      'upgrade',
      '--install',
      RELEASE,
      chart,
      '-n',
      CERT_MANAGER_NAMESPACE,
      '--create-namespace',
      '-f',
      values,
      '--wait',
      '--timeout=5m',
    ]);
    await checkIssues();
    const installToReadyMs = Date.now() - started;
    log(`issuing ${(installToReadyMs / 1000).toFixed(1)}s after helm upgrade --install`);
    return { version, images, reused: false, installToReadyMs, imagesMs };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
