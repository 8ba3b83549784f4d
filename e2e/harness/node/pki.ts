/**
 * The node's TLS and identities: a CA and the certificates made with openssl, the service-account
 * key pair, and one kubeconfig (a static bearer token) per component.
 */
import { generateKeyPair, randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { CLUSTER_DOMAIN, NODE_NAME, paths } from './layout.ts';
import { sh } from './processes.ts';

const generateKeyPairAsync = promisify(generateKeyPair);

/** A CA and the certificates the node's TLS needs, made with openssl. */
export async function makePki(pki: string, nodeIp: string): Promise<void> {
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
export const USERS = {
  admin: { user: 'svc-admin', groups: ['system:masters'] },
  kubelet: { user: `system:node:${NODE_NAME}`, groups: ['system:nodes'] },
  'kube-proxy': { user: 'system:kube-proxy', groups: [] as string[] },
  'kube-controller-manager': { user: 'system:kube-controller-manager', groups: [] as string[] },
  'kube-scheduler': { user: 'system:kube-scheduler', groups: [] as string[] },
} as const;
export type User = keyof typeof USERS;

export async function writeKubeconfigs(dir: string, server: string): Promise<Record<User, string>> {
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
