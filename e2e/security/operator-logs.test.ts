/**
 * Secrets by reference leak no private key: a real control plane, the gateway and the operator as
 * processes at log level debug, an ApiDefinition naming `kubernetes.io/tls` Secrets in
 * `client_certificate_refs` and `upstream_certificate_refs` and an Opaque one in
 * `pinned_public_keys_refs`, and another naming a Secret whose key is not its certificate's (the
 * operator reports it, and the gateway refuses the upload). Then the operator's and the
 * gateway's output, the Kubernetes Events and the statuses are searched for every line of every
 * private key, and for the gateway secret.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { makeCert } from '../../gateway/testing/client-certs.ts';
import { startOperator, type OperatorProc } from '../harness/processes.ts';
import {
  applyManifest,
  defaultCertEnv,
  readyOf,
  startCluster,
  tlsSecretManifest,
  waitForStatus,
  waitReady,
} from '../operator/helpers.ts';
import { startGw } from './start.ts';

const NS = 'vault';
const GW_SECRET = 'opLogsGwSecretXn4Bv7';

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

/** The base64 lines of a PEM block. */
const pemBody = (pem: string): string[] =>
  pem
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length >= 16 && !l.startsWith('-----'));

test('no private key of a Secret by reference reaches a log, an Event or a status', async () => {
  const { dir, cp } = await startCluster('sec-op-logs', [NS, 'svc-operator-system']);
  closers.push(() => cp.stop());
  const gw = await startGw({
    name: 'op-logs-gateway',
    secret: GW_SECRET,
    dataDir: join(dir, 'gw'),
    logDir: dir,
    env: { ...defaultCertEnv(), SVC_GW_LOG_LEVEL: 'debug' },
  });
  const operator: OperatorProc = await startOperator({
    name: 'op-logs-operator',
    gateway: gw,
    kubeconfig: cp.kubeconfig,
    logDir: dir,
    org: 'e2e-org',
    env: { WATCH_NAMESPACE: NS, LOG_LEVEL: 'debug' },
  });
  closers.push(() => operator.stop());

  const client = await makeCert('vault-client');
  const toUpstream = await makeCert('vault-gateway');
  const pinned = await makeCert('vault-pin');
  const other = await makeCert('vault-other');
  const b64 = (t: string): string => Buffer.from(t).toString('base64');
  await applyManifest(cp, tlsSecretManifest(NS, 'client', client));
  await applyManifest(cp, tlsSecretManifest(NS, 'to-upstream', toUpstream));
  // The pinned Secret holds a key too (a tls Secret copied as it is): only its certificate is read.
  await applyManifest(cp, tlsSecretManifest(NS, 'pin', pinned));
  // A Secret whose key is another certificate's.
  await applyManifest(
    cp,
    `apiVersion: v1
kind: Secret
metadata: {name: mismatched, namespace: ${NS}}
type: kubernetes.io/tls
data:
  tls.crt: ${b64(toUpstream.cert)}
  tls.key: ${b64(other.key)}
`,
  );
  await applyManifest(
    cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: partners, namespace: ${NS}}
spec:
  name: partners
  use_keyless: true
  use_mutual_tls_auth: true
  client_certificate_refs: [client]
  upstream_certificate_refs: {"upstream.example": to-upstream}
  pinned_public_keys_refs: {"upstream.example": pin}
  proxy: {listen_path: /partners/, target_url: "https://upstream.example:8443"}
---
apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: broken, namespace: ${NS}}
spec:
  name: broken
  use_keyless: true
  upstream_certificate_refs: {"upstream.example": mismatched}
  proxy: {listen_path: /broken/, target_url: "https://upstream.example:8443"}
`,
  );
  await waitReady(cp, { kind: 'apidefinition', ns: NS, name: 'partners' }, 120_000);
  const broken = await waitForStatus(
    cp,
    { kind: 'apidefinition', ns: NS, name: 'broken' },
    'Ready False',
    (s) => readyOf(s)?.status === 'False' && (readyOf(s)?.message ?? '').includes('mismatched'),
    120_000,
  ).catch(async (err: unknown) => {
    const all = await cp.kubectl(['get', 'apidefinitions', '-n', NS, '-o', 'yaml']);
    throw new Error(`${String(err)}\n${all.stdout}`);
  });
  // The status names the field and the Secret, not only the gateway's refusal.
  assert.equal(readyOf(broken)?.reason, 'SecretInvalid');
  assert.match(
    readyOf(broken)?.message ?? '',
    /^spec\.upstream_certificate_refs\[.*\]: Secret vault\/mismatched tls\.key is not the private key of tls\.crt's certificate/,
  );
  const events = (await cp.kubectl(['get', 'events', '-n', NS, '-o', 'json'])).stdout;
  const statuses = (await cp.kubectl(['get', 'apidefinitions', '-n', NS, '-o', 'json'])).stdout;
  const parsed = JSON.parse(statuses) as { items: { status?: unknown }[] };
  const statusText = parsed.items.map((i) => JSON.stringify(i.status)).join('\n');
  await operator.stop();
  await gw.stop();

  const secrets = new Map<string, string>([['gateway secret', GW_SECRET]]);
  for (const [name, c] of [
    ['client', client],
    ['to-upstream', toUpstream],
    ['pin', pinned],
    ['other', other],
  ] as const) {
    for (const [i, l] of pemBody(c.key).entries()) secrets.set(`${name} key line ${String(i)}`, l);
    // The DER of the key, base64 on one line, as a Secret's data holds it.
    secrets.set(`${name} key as Secret data`, b64(c.key).slice(0, 64));
  }
  const leaks: string[] = [];
  for (const [where, text] of [
    ['operator', operator.log()],
    ['gateway', gw.log()],
    ['events', events],
    ['statuses', statusText],
  ] as const) {
    for (const line of text.split('\n')) {
      for (const [what, s] of secrets)
        if (line.includes(s)) leaks.push(`${where}: ${what}: ${line.slice(0, 300)}`);
    }
  }
  assert.deepEqual(leaks, [], `private keys or secrets found:\n${leaks.join('\n')}`);
  // The lines searched are there: the uploads logged (by ID), the refusal recorded.
  assert.match(operator.log(), /"message":"certificates uploaded"/);
  assert.match(events + statusText, /mismatched/);
});
