/**
 * Certificates named by Secret, for every API kind that names them (ApiDefinition,
 * SvcOasApiDefinition; the fields: schemas/rules/secret-refs.ts). One lifecycle: each Secret is
 * read into an upload (its ID known before the upload, operator/certificates.ts) or a public-key
 * pin; the uploads go to the gateway before the API that lists them; after the push, the
 * certificates the API no longer lists are deleted unless another API (of any kind) lists them.
 * The IDs an API uses are recorded in its `status.certificates`, so that a rotation or a delete
 * knows what to remove.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Logger } from '../../lib/log.ts';
import { objectKey } from '../../lib/k8s/informer.ts';
import { writtenSecretName, type CertificateSecretRef } from '../../schemas/rules/secret-refs.ts';
import { publicKeyPinOf, tlsUploadOf, type SecretContent } from '../certificates.ts';
import { watchOf, type ControllerEnv } from './env.ts';
import { callGateway, type Fail } from './status.ts';

/** An API object as far as its certificates go. */
export interface CertificateHolder {
  metadata?: { namespace?: string; name?: string };
  status?: { certificates?: string[] };
}

/** What the Secrets an API names hold: uploads and pins by Secret name, and the uploads' IDs. */
export interface SecretCertificates {
  uploads: ReadonlyMap<string, { pem: string; id: string }>;
  pins: ReadonlyMap<string, string>;
  /** The IDs of the uploads, without repeats, in field order. */
  ids: string[];
}

/**
 * Why an API may not name a Secret of another namespace (undefined: it may). Without one, no
 * API may: only the ApiDefinition controller answers it (for the APIs generated for a Gateway
 * whose listener a ReferenceGrant allows the Secret).
 */
export type OtherNamespaceSecret = (ref: {
  path: string;
  namespace: string;
  name: string;
}) => Promise<string | undefined>;

/**
 * Reads the Secrets that `refs` name, of `namespace` (or of the namespace a ref names, when
 * `otherNamespace` permits it, else `RefNotPermitted`). A missing Secret is `SecretNotFound`, a
 * Secret that holds no usable certificate `SecretInvalid`, each naming the field and the Secret;
 * then the result is undefined (the Secret's watch queues the API when it appears or changes).
 * Uploads and pins are keyed by the Secret as its field writes it (`namespace/name` for another
 * namespace's).
 */
export async function readCertificateSecrets(
  refs: readonly CertificateSecretRef[],
  namespace: string,
  orgId: string,
  secret: (namespace: string, name: string) => Promise<SecretContent | undefined>,
  fail: Fail,
  otherNamespace?: OtherNamespaceSecret,
): Promise<SecretCertificates | undefined> {
  const uploads = new Map<string, { pem: string; id: string }>();
  const pins = new Map<string, string>();
  for (const ref of refs) {
    const { path, name, use } = ref;
    const pinned = use === 'pinned';
    const key = writtenSecretName(ref);
    if (pinned ? pins.has(key) : uploads.has(key)) continue;
    const ns = ref.namespace ?? namespace;
    if (ns !== namespace) {
      const refused = otherNamespace
        ? await otherNamespace({ path, namespace: ns, name })
        : 'an API names Secrets of its own namespace';
      if (refused !== undefined) {
        await fail('RefNotPermitted', `${path}: Forbidden: Secret ${ns}/${name}: ${refused}`, false);
        return undefined;
      }
    }
    const content = await secret(ns, name);
    if (!content) {
      const needs = pinned
        ? 'with tls.crt, the certificate or public key whose key is pinned'
        : 'type kubernetes.io/tls, with tls.crt and tls.key';
      await fail(
        'SecretNotFound',
        `${path}: Secret ${ns}/${name} does not exist: create it (${needs})`,
        false,
      );
      return undefined;
    }
    const read = pinned ? publicKeyPinOf(content) : tlsUploadOf(content, orgId);
    if (!read.ok) {
      await fail('SecretInvalid', `${path}: Secret ${ns}/${name} ${read.problem}`, false);
      return undefined;
    }
    if ('pin' in read) pins.set(key, read.pin);
    else uploads.set(key, read);
  }
  return { uploads, pins, ids: [...new Set([...uploads.values()].map((u) => u.id))] };
}

/** The gateway calls of the certificate lifecycle. */
export interface CertificateClient {
  addCert: (pem: string, orgId: string) => Promise<boolean>;
  deleteCert: (id: string) => Promise<boolean>;
}

/**
 * Uploads the certificates (before the API that lists them is pushed). False when the gateway
 * call failed and was reported (`callGateway`); a transient failure throws, to be retried.
 */
export async function uploadCertificates(
  client: CertificateClient,
  certs: SecretCertificates,
  orgId: string,
  fail: Fail,
  log: Logger,
): Promise<boolean> {
  const uploaded = await callGateway(async () => {
    const added: string[] = [];
    const seen = new Set<string>();
    for (const { pem, id } of certs.uploads.values()) {
      if (seen.has(id)) continue;
      seen.add(id);
      // False: the gateway holds it already (409).
      if (await client.addCert(pem, orgId)) added.push(id);
    }
    return added;
  }, fail);
  if (!uploaded) return false;
  if (uploaded.value.length > 0) log.info('certificates uploaded', { certificates: uploaded.value });
  return true;
}

/**
 * Deletes the certificates in `ids` that no other API among `holders` lists (their
 * `status.certificates`); an ID the gateway no longer holds counts as done. Returns what was
 * deleted.
 */
export async function deleteUnusedCertificates(
  client: Pick<CertificateClient, 'deleteCert'>,
  ids: readonly string[],
  self: CertificateHolder,
  holders: readonly CertificateHolder[],
): Promise<string[]> {
  const key = objectKey(self);
  const inUse = new Set(
    holders.filter((h) => objectKey(h) !== key).flatMap((h) => h.status?.certificates ?? []),
  );
  const deleted: string[] = [];
  for (const id of ids) {
    if (inUse.has(id)) continue;
    if (await client.deleteCert(id)) deleted.push(id);
  }
  return deleted;
}

/**
 * After the push (so that the gateway never points at a deleted certificate): the certificates
 * the API stopped listing go, unless another API lists them, and `status.certificates` becomes
 * `ids`. Until the deletes succeed the status keeps the dropped ones too, so that a retry
 * deletes them. False when a gateway call failed and was reported.
 */
export async function retireCertificates(
  client: Pick<CertificateClient, 'deleteCert'>,
  ids: readonly string[],
  self: CertificateHolder,
  holders: () => readonly CertificateHolder[],
  status: { certificates?: string[] },
  fail: Fail,
  log: Logger,
): Promise<boolean> {
  const dropped = (self.status?.certificates ?? []).filter((id) => !ids.includes(id));
  status.certificates = [...ids, ...dropped];
  if (dropped.length > 0) {
    const deleted = await callGateway(() => deleteUnusedCertificates(client, dropped, self, holders()), fail);
    if (!deleted) return false;
    if (deleted.value.length > 0) log.info('certificates deleted', { certificates: deleted.value });
  }
  if (ids.length > 0) status.certificates = [...ids];
  else delete status.certificates;
  return true;
}

/** On the API's delete: its certificates go, unless another API lists them. */
export async function deleteCertificatesOf(
  client: Pick<CertificateClient, 'deleteCert'>,
  self: CertificateHolder,
  holders: readonly CertificateHolder[],
  log: Logger,
): Promise<void> {
  const deleted = await deleteUnusedCertificates(client, self.status?.certificates ?? [], self, holders);
  if (deleted.length > 0) log.info('certificates deleted', { certificates: deleted });
}

/**
 * Every API of the kinds that name certificates by Secret, from the shared informers: what
 * `deleteUnusedCertificates` checks before deleting (an ApiDefinition and an SvcOasApiDefinition
 * may list the same certificate).
 */
export function certificateHolders(env: ControllerEnv): () => CertificateHolder[] {
  const kinds = (['ApiDefinition', 'SvcOasApiDefinition'] as const).map((kind) =>
    env.manager.informer<k8s.KubernetesObject & CertificateHolder>(watchOf(env, kind)),
  );
  return () => kinds.flatMap((inf) => inf.list());
}
