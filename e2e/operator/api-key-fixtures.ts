/**
 * What the ApiKey suites (api-key: mode ce through a gateway, pro-api-key: mode pro through a
 * dashboard) share: the APIs and policy their keys are for, the manifests of a key and of an API
 * created after it, the Secrets of keys and basic-auth users as kubectl reads and writes them in
 * the namespace `shop`, the wait for a key naming an API that does not exist yet, and the steps
 * of the cases both modes run alike (a policy created after its key, a key rotated by its Secret).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { ControlPlane } from '../harness/control-plane.ts';
import { applyManifest, isReady, readyOf, waitForStatus, waitReady, type Status } from './helpers.ts';

type Kubectl = Pick<ControlPlane, 'kubectl'>;

/** The namespace of the suites' keys. */
const NS = 'shop';

/** The SHA-256 hex of a value: what the gateway and the dashboard name a key by. */
export const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** An ApiKey as the status helpers name it. */
export const keyRef = (name: string, ns = NS) => ({ kind: 'apikey', ns, name });

/**
 * The APIs of the keys (vault: a token, locker: basic auth, both proxying to `upstream`) and the
 * policy vault-plan granting both. `stripAuthData`: the vault API strips the key before the call.
 */
export function keyApisManifest(upstream: string, opts: { stripAuthData?: boolean } = {}): string {
  return `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: vault, namespace: ${NS}}
spec:
  name: vault
  use_keyless: false
  use_standard_auth: true
${opts.stripAuthData === true ? '  strip_auth_data: true\n' : ''}  proxy: {listen_path: /vault/, target_url: "${upstream}", strip_listen_path: true}
---
apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: locker, namespace: ${NS}}
spec:
  name: locker
  use_keyless: false
  use_basic_auth: true
  proxy: {listen_path: /locker/, target_url: "${upstream}", strip_listen_path: true}
---
apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: vault-plan, namespace: ${NS}}
spec:
  name: vault-plan
  access_rights_array: [{name: vault}, {name: locker}]
`;
}

/** An ApiKey of the namespace; `spec` is its indented YAML body. */
export function keyManifest(name: string, spec: string): string {
  return `apiVersion: svc.svc.io/v1alpha1
kind: ApiKey
metadata: {name: ${name}, namespace: ${NS}}
spec:
${spec}`;
}

/** A merge patch of an ApiKey. */
export async function patchKey(cp: Kubectl, name: string, body: unknown): Promise<void> {
  await cp.kubectl(['patch', 'apikey', name, '-n', NS, '--type=merge', '-p', JSON.stringify(body)]);
}

/** The value under `dataKey` of a Secret, or undefined when the Secret does not exist. */
export async function secretValue(
  cp: Kubectl,
  ns: string,
  name: string,
  dataKey = 'key',
): Promise<string | undefined> {
  const r = await cp.kubectl(['get', 'secret', name, '-n', ns, '-o', 'json'], { allowFailure: true });
  if (r.code !== 0) return undefined;
  const b64 = (JSON.parse(r.stdout) as { data?: Record<string, string> }).data?.[dataKey];
  return b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString('utf8');
}

/** An `Authorization` header of basic auth. */
export const basicAuth = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** Creates the Secret of a basic-auth user, its password under `password`. */
async function createPasswordSecret(cp: Kubectl, name: string, password: string): Promise<void> {
  await cp.kubectl(['create', 'secret', 'generic', name, '-n', NS, `--from-literal=password=${password}`]);
}

/**
 * The basic-auth user `name` of the policy vault-plan, its password `password` in the Secret
 * `<name>-pw`, once Ready: its status, which names the user.
 */
export async function basicUserReady(cp: Kubectl, name: string, password: string): Promise<Status> {
  await createPasswordSecret(cp, `${name}-pw`, password);
  await applyManifest(
    cp,
    keyManifest(
      name,
      `  type: basic\n  username: ${name}\n  policies: [vault-plan]\n  secretRef: {name: ${name}-pw, key: password}\n`,
    ),
  );
  const st = await waitReady(cp, keyRef(name));
  assert.equal(st.username, name);
  return st;
}

/** Changes the password a basic-auth user's Secret holds. */
export async function changePassword(cp: Kubectl, name: string, password: string): Promise<void> {
  await cp.kubectl([
    'patch',
    'secret',
    name,
    '-n',
    NS,
    '--type=merge',
    '-p',
    JSON.stringify({ stringData: { password } }),
  ]);
}

/** The ApiDefinition pantry (a token, proxying to `upstream`), created after a key names it. */
function pantryManifest(upstream: string): string {
  return `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: pantry, namespace: ${NS}}
spec:
  name: pantry
  use_keyless: false
  use_standard_auth: true
  proxy: {listen_path: /pantry/, target_url: "${upstream}", strip_listen_path: true}
`;
}

/** Waits for the key `name` to say ApiNotFound naming the ApiDefinition pantry. */
async function waitApiNotFound(cp: Kubectl, name: string): Promise<void> {
  const waiting = await waitForStatus(
    cp,
    keyRef(name),
    'ApiNotFound',
    (s) => readyOf(s)?.reason === 'ApiNotFound',
  );
  assert.match(
    readyOf(waiting)?.message ?? '',
    /spec\.accessRights names ApiDefinition shop\/pantry, which does not exist yet/,
  );
}

/**
 * The key `name` names the ApiDefinition pantry before it exists: it says ApiNotFound naming it;
 * then pantry (proxying to `upstream`) is created, and the key is Ready with pantry's ID its only
 * one. Resolves with the key's status and pantry's.
 */
export async function pantryAfterItsKey(
  cp: Kubectl,
  name: string,
  upstream: string,
): Promise<{ key: Status; api: Status }> {
  await waitApiNotFound(cp, name);
  await applyManifest(cp, pantryManifest(upstream));
  const key = await waitReady(cp, keyRef(name));
  const api = await waitReady(cp, { kind: 'apidefinition', ns: NS, name: 'pantry' });
  assert.deepEqual(key.apiIds, [api.api_id]);
  return { key, api };
}

/** The SecurityPolicy metered: a quota of 3 an hour on vault. */
export const METERED_POLICY = `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: metered, namespace: ${NS}}
spec:
  name: metered
  quota_max: 3
  quota_renewal_rate: 3600
  access_rights_array: [{name: vault}]
`;

/**
 * The key `name` names the SecurityPolicy late-plan before it exists: it says PolicyNotFound naming
 * the policy; then the policy (granting vault) is created.
 */
export async function keyBeforeItsPolicy(cp: Kubectl, name: string): Promise<void> {
  await applyManifest(cp, keyManifest(name, '  policies: [late-plan]\n'));
  const waiting = await waitForStatus(
    cp,
    keyRef(name),
    'PolicyNotFound',
    (s) => readyOf(s)?.reason === 'PolicyNotFound',
  );
  assert.match(readyOf(waiting)?.message ?? '', /SecurityPolicy shop\/late-plan does not exist yet/);
  await applyManifest(
    cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: late-plan, namespace: shop}
spec:
  name: late-plan
  access_rights_array: [{name: vault}]
`,
  );
}

/**
 * The key hank from its Secret hank-credentials holding `value` (as an external secrets tool
 * writes it), with a rotation overlap of 600 s, under the policy paced (3 requests a minute to vault).
 */
export async function pacedKeyFromSecret(cp: Kubectl, value: string): Promise<void> {
  await cp.kubectl([
    'create',
    'secret',
    'generic',
    'hank-credentials',
    '-n',
    NS,
    `--from-literal=key=${value}`,
  ]);
  await applyManifest(
    cp,
    `apiVersion: svc.svc.io/v1alpha1
kind: SecurityPolicy
metadata: {name: paced, namespace: shop}
spec:
  name: paced
  rate: 3
  per: 60
  access_rights_array: [{name: vault}]
---
${keyManifest('hank', '  policies: [paced]\n  secretRef: {name: hank-credentials}\n  rotation: {overlapSeconds: 600}\n')}`,
  );
}

/**
 * hank's Secret changed by hand from `oldValue` to `newValue`: the key is rotated (its hash the new
 * value's, the old one's kept as rotatedFrom). Its status once rotated.
 */
export async function rotateBySecret(
  cp: Kubectl,
  oldValue: string,
  newValue: string,
): Promise<Awaited<ReturnType<typeof waitForStatus>>> {
  await cp.kubectl([
    'patch',
    'secret',
    'hank-credentials',
    '-n',
    NS,
    '--type=merge',
    '-p',
    JSON.stringify({ stringData: { key: newValue } }),
  ]);
  const st = await waitForStatus(
    cp,
    keyRef('hank'),
    'rotated by the Secret',
    (s) => s.keyHash === sha256(newValue) && isReady(s),
  );
  assert.equal((st.rotatedFrom as { keyHash?: string } | undefined)?.keyHash, sha256(oldValue));
  return st;
}

/**
 * After two requests of paced's rate of 3 (the old value, then the new): the old value is served;
 * the fourth request, with either, is over the one rate limit both count against.
 */
export async function assertOneRateForBoth(
  call: (path: string, authorization: string) => Promise<{ status: number; body: string }>,
  oldValue: string,
  newValue: string,
): Promise<void> {
  assert.equal((await call('/vault/h', oldValue)).status, 200, 'the third, with the old value');
  const over = await call('/vault/h', newValue);
  assert.equal(over.status, 429, 'the fourth is over the one rate limit both values count against');
  assert.match(over.body, /Rate Limit Exceeded/);
  assert.equal((await call('/vault/h', oldValue)).status, 429);
}
