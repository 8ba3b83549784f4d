/**
 * What a key is made of, read before anything is written to the gateway: the IDs of the
 * policies it names, the IDs of the APIs its access rights name, and its value (from its
 * Secret, generated when the operator owns the Secret, or the client certificate it is bound
 * to). Each reader reports what it can't resolve through `fail` and then returns undefined.
 */
import { randomBytes } from 'node:crypto';
import type { AccessRight, ApiKeyStatus, ApiResourceRef } from '../../../schemas/generated/kinds.ts';
import { keyTypeOf } from '../../../schemas/rules/api-key.ts';
import { resolveRef } from '../../../schemas/rules/references.ts';
import type { Logger } from '../../../lib/log.ts';
import type { Connection } from '../../clients/management.ts';
import { clientCertificateOf } from '../../certificates.ts';
import { accessRef, apiRefText, apiRights, keyAccessRefs, routeRightKeys } from '../../references.ts';
import { expandRouteRights, unservedMessage } from '../route-rights.ts';
import { resolveApis } from '../api-refs.ts';
import type { Fail } from '../status.ts';
import { grantsAccess, secretOf, stamp, type ApiKeyDeps, type KeyObject } from './types.ts';

/**
 * The IDs of the SecurityPolicies the key names, as the gateway holds them (missing:
 * `PolicyNotFound`, not pushed yet: `PolicyNotReady`; their watch queues the key again).
 */
export async function policyIdsOf(
  spec: KeyObject['spec'],
  namespace: string,
  deps: ApiKeyDeps,
  fail: Fail,
): Promise<string[] | undefined> {
  const policyIds: string[] = [];
  for (const [i, r] of (spec.policies ?? []).entries()) {
    const ref = resolveRef(r, namespace);
    if (!ref) {
      await fail('SpecInvalid', `spec.policies[${i}]: names no SecurityPolicy`, false);
      return undefined;
    }
    const p = deps.policy(ref.namespace, ref.name);
    const ready = p?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    if (!p) {
      await fail(
        'PolicyNotFound',
        `spec.policies[${i}]: SecurityPolicy ${ref.namespace}/${ref.name} does not exist yet: the key is created once it does`,
        false,
      );
      return undefined;
    }
    if (!ready || p.status?.pol_id === undefined) {
      await fail(
        'PolicyNotReady',
        `spec.policies[${i}]: SecurityPolicy ${ref.namespace}/${ref.name} is not Ready yet (not held by the gateway): the key is created once it is`,
        false,
      );
      return undefined;
    }
    if ((spec.accessRights ?? []).length > 0 && grantsAccess(p)) {
      await fail(
        'AccessRightsOverridden',
        `spec.policies[${i}]: SecurityPolicy ${ref.namespace}/${ref.name} grants access rights (no partitions, or partitions.acl), which would replace spec.accessRights: move the rights into the policy, or limit it to other partitions (quota, rate_limit)`,
        false,
      );
      return undefined;
    }
    policyIds.push(p.status.pol_id);
  }
  return policyIds;
}

/** The APIs a key's access rights name: the references, their texts, and the gateway's ID of each. */
export interface KeyAccess {
  /** `spec.accessRights` with each HTTPRoute entry expanded to its generated APIs (route-rights.ts). */
  rights: AccessRight[] | undefined;
  apiRefs: ApiResourceRef[];
  texts: string[];
  apiIds: Map<string, string>;
}

/** Each API of the key's access rights resolved to the ID the gateway holds it under. */
export async function accessOf(
  current: KeyObject,
  namespace: string,
  deps: ApiKeyDeps,
  fail: Fail,
): Promise<KeyAccess | undefined> {
  const named = [
    ...keyAccessRefs(current, namespace).map(apiRefText),
    ...routeRightKeys(current.spec.accessRights, namespace).map((r) => `HTTPRoute ${r}`),
  ];
  const repeated = named.find((t, i) => named.indexOf(t) !== i);
  if (repeated !== undefined) {
    await fail('SpecInvalid', `spec.accessRights lists ${repeated} twice: merge the two entries`, false);
    return undefined;
  }
  // HTTPRoute entries: the same rights on each ApiDefinition generated to serve the route.
  const expanded = expandRouteRights(current.spec.accessRights, namespace, deps.routeApis ?? (() => []));
  if (expanded.missing) {
    await fail(
      'ApiNotFound',
      unservedMessage(expanded.missing, 'spec.accessRights', 'the key is created'),
      false,
    );
    return undefined;
  }
  const rights = current.spec.accessRights === undefined ? undefined : expanded.rights;
  const apiRefs = apiRights(rights).map((r) => accessRef(r, namespace));
  const texts = apiRefs.map(apiRefText);
  const apiIds = new Map<string, string>();
  const unresolved = resolveApis(apiRefs, deps.api, apiIds, {
    field: 'spec.accessRights',
    then: 'the key is created',
  });
  if (unresolved) {
    await fail(unresolved.reason, unresolved.message, false);
    return undefined;
  }
  return { rights, apiRefs, texts, apiIds };
}

/** A certificate key's client certificate: its ID in the gateway and its PEM. */
export interface BoundCertificate {
  id: string;
  pem: string;
}

/** The key's value and where it comes from. */
export interface KeyValue {
  /** The value ('' for none). */
  raw: string;
  /** The version of the Secret it was read from or written to ('' for a certificate key). */
  version: string;
  /** A certificate key's certificate, the credential, uploaded alone. */
  bound?: BoundCertificate;
}

/** A new key value: 192 random bits, hex (a valid key ID for the gateway's paths). */
const newValue = (): string => randomBytes(24).toString('hex');

/**
 * The key's value. A certificate key is named by its organisation and the client certificate of
 * its Secret (certKeyOf). Otherwise the value is read from the Secret; a Secret named in
 * `spec.secretRef.name` that does not exist (or lacks the data key) is waited for
 * (`SecretNotFound`); without a name, the operator generates the value and writes the Secret.
 * `spec.rotate` set to a new string on a key pushed before makes the operator write a new value
 * (`status.lastRotatedAt`); `status.rotated` records the last one seen.
 */
export async function keyValueOf(
  current: KeyObject,
  status: ApiKeyStatus,
  conn: Pick<Connection, 'mode' | 'org'>,
  gatewayUrl: string,
  deps: ApiKeyDeps,
  fail: Fail,
  log: Logger,
): Promise<KeyValue | undefined> {
  const spec = current.spec;
  const namespace = current.metadata.namespace;
  const old = current.status ?? {};
  const pushedBefore = old.keyHash !== undefined || old.username !== undefined;
  // A certificate key: the client certificate of its Secret, uploaded alone, is the credential.
  let bound: BoundCertificate | undefined;
  let value: string | undefined;
  let version = '';
  if (keyTypeOf(spec) === 'certificate') {
    if (conn.mode === 'pro') {
      await fail(
        'NotSupportedInPro',
        `certificate keys (dynamic mTLS) are served in mode ce: the dashboard at ${gatewayUrl} binds no key to a certificate; use a token or basic key there`,
        false,
      );
      return undefined;
    }
    const secretName = spec.certificateSecretRef ?? '';
    const content = deps.certificateSecret(namespace, secretName);
    if (!content) {
      await fail(
        'SecretNotFound',
        `spec.certificateSecretRef: Secret ${namespace}/${secretName} does not exist yet: the key is bound once it does (type kubernetes.io/tls, the client certificate in tls.crt)`,
        false,
      );
      return undefined;
    }
    const read = clientCertificateOf(content, conn.org);
    if (!read.ok) {
      await fail(
        'SecretInvalid',
        `spec.certificateSecretRef: Secret ${namespace}/${secretName} ${read.problem}`,
        false,
      );
      return undefined;
    }
    bound = { id: read.id, pem: read.pem };
    // The gateway names a bound key by its organisation and the certificate (certKeyOf).
    value = `cert:${conn.org}:${read.fingerprint}`;
  }

  // The value: from the Secret, generated when the operator owns the Secret.
  const where = secretOf(current);
  const held = bound ? undefined : deps.secret(namespace, where.name, where.dataKey);
  if (!bound) {
    value = held?.value;
    version = held?.version ?? '';
  }
  const rotateAsked = spec.rotate !== undefined && spec.rotate !== old.rotated && pushedBefore;
  if (!bound && (value === undefined || value === '' || rotateAsked)) {
    if (!rotateAsked && !where.generated) {
      const what = held
        ? `Secret ${namespace}/${where.name} has no data key ${where.dataKey}`
        : `Secret ${namespace}/${where.name} does not exist`;
      await fail('SecretNotFound', `${what} yet: the key is created once it does`, false);
      return undefined;
    }
    value = newValue();
    version = await deps.writeSecret(current, where.name, where.dataKey, value);
    log.info(rotateAsked ? 'key value rotated' : 'key value generated', { secret: where.name });
    if (rotateAsked) status.lastRotatedAt = stamp(deps.now());
  }
  if (spec.rotate !== undefined) status.rotated = spec.rotate;
  else delete status.rotated;
  return { raw: value ?? '', version, ...(bound ? { bound } : {}) };
}
