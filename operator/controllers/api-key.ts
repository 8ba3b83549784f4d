/**
 * The ApiKey controller: one key (or basic-auth user) of the gateway (mode ce, `/svc/keys`) or
 * the dashboard (mode pro, `/api/keys`) per object, its value in a Secret. The gateway and the
 * dashboard store only the hash; the operator writes the clear value nowhere but the
 * Secret (and the gateway's management API, which hashes it), and never logs it.
 */
import { hash, randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import type { ApiKey, ApiKeyStatus, SecurityPolicy } from '../../schemas/generated/kinds.ts';
import type { GatewaySession } from '../../schemas/generated/models.ts';
import { API_KINDS, API_VERSION } from '../../schemas/common.ts';
import { KEY_FINALIZER } from '../../schemas/finalizers.ts';
import { apiKeyProblems, keyTypeOf } from '../../schemas/rules/api-key.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { resolveRef } from '../../schemas/rules/references.ts';
import type { ControllerSpec } from '../../lib/k8s/manager.ts';
import type { Logger } from '../../lib/log.ts';
import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { SvcObjects, type SvcObject } from '../../lib/k8s/objects.ts';
import { objectKey, splitKey, type Informer, type InformerEvent } from '../../lib/k8s/informer.ts';
import { statusOf } from '../../lib/k8s/client.ts';
import { TransientError } from '../../lib/errors.ts';
import type { KeyOps, ManagementClient } from '../clients/management.ts';
import type { Connections } from '../connections.ts';
import { hashOf } from '../ids.ts';
import { translateApiKey } from '../translate/api-key.ts';
import { clientCertificateOf, type SecretContent } from '../certificates.ts';
import { certificateHolders } from './certificate-secrets.ts';
import { secretWatch, viewChanged, watchOf, type ControllerEnv } from './env.ts';
import { byAccessRight, byContext } from './indexes.ts';
import { resolveApis, type ApiIdView } from './api-refs.ts';
import { apiRefText, keyAccessRefs } from '../references.ts';
import type { ApiResourceRef } from '../../schemas/generated/kinds.ts';
import {
  callGateway,
  reportFailure,
  reportSuccess,
  reportUnresolved,
  type Fail,
  type ReportDeps,
} from './status.ts';
import { finalizeInGateway, leaveFormerGateway, pushedTo } from './sync.ts';

export { KEY_FINALIZER };

/** An ApiKey with the metadata every stored object has. */
export type KeyObject = ApiKey & SvcObject<ApiKey['spec'], ApiKeyStatus>;

/** As much of a SecurityPolicy as a key reads. */
export interface PolicyView extends k8s.KubernetesObject {
  /** Its partitions: whether it grants access rights (which replace the key's own). */
  spec?: Pick<SecurityPolicy['spec'], 'partitions'>;
  status?: Pick<NonNullable<SecurityPolicy['status']>, 'pol_id' | 'conditions'>;
}

/**
 * Whether the gateway takes a policy's access rights for its keys (replacing theirs): its `acl`
 * partition is on, or it sets no partition (every part applies).
 */
export function grantsAccess(p: PolicyView): boolean {
  const parts = p.spec?.partitions ?? {};
  const any =
    parts.acl === true || parts.rate_limit === true || parts.quota === true || parts.complexity === true;
  return !any || parts.acl === true;
}

/** The Secret holding a key's value, as the reconciler sees it. */
export interface KeySecret {
  /** The value under the data key, or undefined when the Secret has no such key. */
  value: string | undefined;
  /** Changes whenever the Secret is written (basic passwords are re-sent then). */
  version: string;
}

/** What the reconciler needs; tests pass their own. */
export interface ApiKeyDeps extends ReportDeps<KeyObject> {
  read: (namespace: string, name: string) => Promise<KeyObject | undefined>;
  objects: Pick<SvcObjects<KeyObject>, 'ensureFinalizer' | 'removeFinalizer' | 'patchStatus'>;
  connections: Pick<Connections, 'resolve'>;
  policy: (namespace: string, name: string) => PolicyView | undefined;
  /** The Secret a certificate key is bound by (`spec.certificateSecretRef`), or undefined. */
  certificateSecret: (namespace: string, name: string) => SecretContent | undefined;
  /**
   * Whether a certificate the gateway holds is used by anything but the key `self` (an API that
   * lists it, another key bound to it): it is then left when the key lets it go.
   */
  certificateInUse: (id: string, self: KeyObject) => boolean;
  /** The API resource an access right names, or undefined when it does not exist. */
  api: (ref: ApiResourceRef) => ApiIdView | undefined;
  /** The Secret's value under `dataKey`; undefined when the Secret does not exist. */
  secret: (namespace: string, name: string, dataKey: string) => KeySecret | undefined;
  /**
   * Writes `value` under `dataKey` of the Secret (created, owned by the key, when missing);
   * returns the Secret's new version.
   */
  writeSecret: (owner: KeyObject, name: string, dataKey: string, value: string) => Promise<string>;
  /**
   * The status this process last wrote for the object (by uid). The informer cache may not hold
   * it yet when a second reconcile starts right after the first: read stale, a rotation would
   * be done twice (a second value generated, the first one left in the gateway). This process
   * is the only writer (the leader), so what it remembers is never older than its cache.
   */
  written?: (uid: string | undefined) => ApiKeyStatus | undefined;
  log: Logger;
}

/** The stored ID of a token or a user name: what the gateway names the key by. */
export const keyHashOf = (raw: string): string => hash('sha256', raw, 'hex');

/**
 * The gateway's `counter_id` of an ApiKey: every value the key has (both during a rotation's
 * overlap) counts against one rate limit and quota, kept across rotations.
 */
const counterIdOf = (obj: KeyObject): string =>
  `apikey-${obj.metadata.uid ?? `${obj.metadata.namespace}.${obj.metadata.name}`}`;

/** A new key value: 192 random bits, hex (a valid key ID for the gateway's paths). */
const newValue = (): string => randomBytes(24).toString('hex');

/** The Secret a key reads, and whether the operator generates it (no name given). */
function secretOf(obj: KeyObject): { name: string; dataKey: string; generated: boolean } {
  const ref = obj.spec.secretRef;
  return {
    name: ref?.name ?? obj.metadata.name,
    dataKey: ref?.key ?? 'key',
    generated: ref?.name === undefined,
  };
}

/**
 * Whether the gateway's copy differs from what the operator wrote in a field it owns. An empty
 * `org_id` is the peer's to fill (a dashboard files the key under its caller's organisation).
 */
function drifted(held: GatewaySession, desired: GatewaySession): boolean {
  const h = held as Record<string, unknown>;
  return Object.entries(desired).some(([k, v]) => {
    if (k === 'org_id' && v === '') return false;
    const got = h[k] ?? (Array.isArray(v) ? [] : typeof v === 'object' ? {} : typeof v === 'string' ? '' : 0);
    return !isDeepStrictEqual(got, v);
  });
}

/**
 * Makes the gateway hold the key an ApiKey describes. Policies are resolved to the IDs of
 * SecurityPolicies the gateway holds (missing: `PolicyNotFound`, not pushed yet:
 * `PolicyNotReady`; their watch queues the key again). The value is read from the Secret; a
 * Secret named in `spec.secretRef.name` that does not exist (or lacks the data key) is waited
 * for (`SecretNotFound`); without a name, the operator generates the value and writes the Secret
 * named like the key, owned by it. A token whose value changed is a rotation: the new value is
 * created, the old one deleted at once or after `spec.rotation.overlapSeconds`. `spec.rotate`
 * set to a new string makes the operator write a new value itself. Updates keep the key's
 * counters (quota, rate). The finalizer deletes the key.
 */
export async function reconcileApiKey(key: string, deps: ApiKeyDeps): Promise<WorkResult> {
  const { namespace, name } = splitKey(key);
  const obj = await deps.read(namespace, name);
  if (!obj) return {};
  const log = deps.log.child({ kind: 'ApiKey', object: key });
  if (obj.metadata.deletionTimestamp) return finalize(obj, deps, log);

  const ensured = await deps.objects.ensureFinalizer(obj, KEY_FINALIZER);
  const remembered = deps.written?.(ensured.metadata.uid);
  const current: KeyObject = remembered ? { ...ensured, status: remembered } : ensured;
  const old = current.status ?? {};
  const spec = current.spec;
  const status: ApiKeyStatus = { ...old, observedGeneration: current.metadata.generation };
  const fail: Fail = (reason, message, call) =>
    reportFailure(current, status, { reason, message, call }, deps);

  const problems = apiKeyProblems(spec);
  if (problems.length > 0) {
    await fail(
      'SpecInvalid',
      problems.map((p) => formatProblem({ ...p, path: `spec.${p.path}` })).join('; '),
      false,
    );
    return {};
  }
  const resolved = await deps.connections.resolve(spec.contextRef, namespace);
  if (!resolved.ok) return reportUnresolved(resolved, fail);
  const client = resolved.client;
  const keys = client.keys;
  if (keys === undefined) {
    await fail('KeysNotSupported', `${client.url} manages no keys: an older gateway or dashboard`, false);
    return {};
  }

  // Policies: resolved to the IDs of policies the gateway holds.
  const policyIds: string[] = [];
  for (const [i, r] of (spec.policies ?? []).entries()) {
    const ref = resolveRef(r, namespace);
    if (!ref) {
      await fail('SpecInvalid', `spec.policies[${i}]: names no SecurityPolicy`, false);
      return {};
    }
    const p = deps.policy(ref.namespace, ref.name);
    const ready = p?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    if (!p) {
      await fail(
        'PolicyNotFound',
        `spec.policies[${i}]: SecurityPolicy ${ref.namespace}/${ref.name} does not exist yet: the key is created once it does`,
        false,
      );
      return {};
    }
    if (!ready || p.status?.pol_id === undefined) {
      await fail(
        'PolicyNotReady',
        `spec.policies[${i}]: SecurityPolicy ${ref.namespace}/${ref.name} is not Ready yet (not held by the gateway): the key is created once it is`,
        false,
      );
      return {};
    }
    if ((spec.accessRights ?? []).length > 0 && grantsAccess(p)) {
      await fail(
        'AccessRightsOverridden',
        `spec.policies[${i}]: SecurityPolicy ${ref.namespace}/${ref.name} grants access rights (no partitions, or partitions.acl), which would replace spec.accessRights: move the rights into the policy, or limit it to other partitions (quota, rate_limit)`,
        false,
      );
      return {};
    }
    policyIds.push(p.status.pol_id);
  }

  // Access rights: each API resolved to the ID the gateway holds it under.
  const apiRefs = keyAccessRefs(current, namespace);
  const texts = apiRefs.map(apiRefText);
  const repeated = texts.find((t, i) => texts.indexOf(t) !== i);
  if (repeated !== undefined) {
    await fail('SpecInvalid', `spec.accessRights lists ${repeated} twice: merge the two entries`, false);
    return {};
  }
  const apiIds = new Map<string, string>();
  const unresolved = resolveApis(apiRefs, deps.api, apiIds, {
    field: 'spec.accessRights',
    then: 'the key is created',
  });
  if (unresolved) {
    await fail(unresolved.reason, unresolved.message, false);
    return {};
  }

  const type = keyTypeOf(spec);
  const pushedBefore = old.keyHash !== undefined || old.username !== undefined;
  // A certificate key: the client certificate of its Secret, uploaded alone, is the credential.
  let bound: { id: string; pem: string } | undefined;
  let value: string | undefined;
  let version = '';
  if (type === 'certificate') {
    if (resolved.conn.mode === 'pro') {
      await fail(
        'NotSupportedInPro',
        `certificate keys (dynamic mTLS) are served in mode ce: the dashboard at ${client.url} binds no key to a certificate; use a token or basic key there`,
        false,
      );
      return {};
    }
    const secretName = spec.certificateSecretRef ?? '';
    const content = deps.certificateSecret(namespace, secretName);
    if (!content) {
      await fail(
        'SecretNotFound',
        `spec.certificateSecretRef: Secret ${namespace}/${secretName} does not exist yet: the key is bound once it does (type kubernetes.io/tls, the client certificate in tls.crt)`,
        false,
      );
      return {};
    }
    const read = clientCertificateOf(content, resolved.conn.org);
    if (!read.ok) {
      await fail(
        'SecretInvalid',
        `spec.certificateSecretRef: Secret ${namespace}/${secretName} ${read.problem}`,
        false,
      );
      return {};
    }
    bound = { id: read.id, pem: read.pem };
    // The gateway names a bound key by its organisation and the certificate (certKeyOf).
    value = `cert:${resolved.conn.org}:${read.fingerprint}`;
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
      return {};
    }
    value = newValue();
    version = await deps.writeSecret(current, where.name, where.dataKey, value);
    log.info(rotateAsked ? 'key value rotated' : 'key value generated', { secret: where.name });
    if (rotateAsked) status.lastRotatedAt = stamp(deps.now());
  }
  if (spec.rotate !== undefined) status.rotated = spec.rotate;
  else delete status.rotated;
  const raw = value ?? '';

  const desired = translateApiKey(spec, {
    orgId: resolved.conn.org,
    policyIds,
    counterId: counterIdOf(current),
    namespace,
    apiId: (ref) => apiIds.get(apiRefText(ref)) ?? '',
    ...(bound ? { certificateId: bound.id } : {}),
  });
  // Once the key was pushed, its counters are the ApiKey's: a new value (rotation, a user name
  // changed, a key re-created after drift) goes on counting where the previous one was.
  const keepCounters = pushedBefore;
  const here = pushedTo(client, spec.contextRef, namespace);
  const now = deps.now();
  let requeueAfterMs: number | undefined;

  const done = await callGateway(async (): Promise<'Created' | 'Updated' | undefined> => {
    if (type === 'basic') {
      const username = spec.username ?? '';
      const id = keyHashOf(username);
      const desiredHash = hashOf({ desired, username, secret: version });
      const withPassword = { ...desired, basic_auth_data: { password: raw } };
      const copy = await keys.get(id);
      let action: 'Created' | 'Updated' | undefined;
      if (!copy) {
        await keys.create(username, withPassword, { keepCounters });
        action = 'Created';
      } else if (desiredHash !== old.latestCRDSpecHash || drifted(copy, desired)) {
        await keys.update(id, withPassword);
        action = 'Updated';
      }
      if (old.username !== undefined && old.username !== username) await keys.delete(keyHashOf(old.username));
      if (old.keyHash !== undefined) await keys.delete(old.keyHash);
      if (old.rotatedFrom?.keyHash !== undefined) await keys.delete(old.rotatedFrom.keyHash);
      if (old.certificateId !== undefined && !deps.certificateInUse(old.certificateId, current)) {
        await client.deleteCert(old.certificateId);
      }
      delete status.certificateId;
      status.username = username;
      status.latestCRDSpecHash = desiredHash;
      delete status.keyHash;
      delete status.rotatedFrom;
      return action;
    }

    const keyHash = keyHashOf(raw);
    const desiredHash = hashOf(desired);
    const copy = await keys.get(keyHash);
    let action: 'Created' | 'Updated' | undefined;
    if (!copy) {
      // A bound key is created from its certificate, which the gateway must hold first.
      if (bound) await client.addCert(bound.pem, resolved.conn.org);
      await keys.create(raw, desired, { keepCounters });
      action = 'Created';
    } else if (desiredHash !== old.latestCRDSpecHash || drifted(copy, desired)) {
      await keys.update(keyHash, desired);
      action = 'Updated';
    }
    if (old.username !== undefined) await keys.delete(keyHashOf(old.username));
    // One previous value at most: a rotation during an overlap ends the older one at once.
    let previous = old.rotatedFrom;
    if (old.keyHash !== undefined && old.keyHash !== keyHash) {
      if (previous?.keyHash !== undefined && previous.keyHash !== keyHash)
        await keys.delete(previous.keyHash);
      const overlap = spec.rotation?.overlapSeconds ?? 0;
      status.lastRotatedAt = stamp(now);
      if (overlap > 0) {
        previous = { keyHash: old.keyHash, until: stamp(new Date(now.getTime() + overlap * 1000)) };
        // The old value keeps working as the key is now: same policies, expiry, metadata.
        await keys.update(old.keyHash, desired);
      } else {
        await keys.delete(old.keyHash);
        previous = undefined;
      }
      log.info('key rotated', { keyHash, previous: old.keyHash, overlapSeconds: overlap });
    }
    if (previous?.keyHash !== undefined && previous.until !== undefined) {
      const left = Date.parse(previous.until) - now.getTime();
      if (left <= 0 || previous.keyHash === keyHash) {
        if (previous.keyHash !== keyHash) await keys.delete(previous.keyHash);
        previous = undefined;
      } else {
        requeueAfterMs = left;
      }
    }
    if (previous) status.rotatedFrom = previous;
    else delete status.rotatedFrom;
    // A certificate no longer bound goes (once its key is gone), unless something else uses it.
    if (old.certificateId !== undefined && old.certificateId !== bound?.id) {
      if (!deps.certificateInUse(old.certificateId, current)) await client.deleteCert(old.certificateId);
    }
    if (bound) status.certificateId = bound.id;
    else delete status.certificateId;
    status.keyHash = keyHash;
    status.latestCRDSpecHash = desiredHash;
    delete status.username;
    return action;
  }, fail);
  if (!done) return {};
  const action = done.value;
  await leaveFormerGateway(
    current,
    {
      before: old.pushedTo,
      here,
      what: `key ${name}`,
      remove: (c) => removeFrom(c, old, (id) => deps.certificateInUse(id, current)),
    },
    deps,
    fail,
  );
  status.pushedTo = here;
  status.policyIds = policyIds;
  status.policies = policyIds.join(',');
  if (apiRefs.length > 0) status.apiIds = texts.map((t) => apiIds.get(t) ?? '');
  else delete status.apiIds;
  if (spec.expiresAt !== undefined) status.expiresAt = spec.expiresAt;
  else delete status.expiresAt;
  if (action) log.info(`key ${action.toLowerCase()}`, { gateway: client.url });
  const who = type === 'basic' ? `basic-auth user ${spec.username ?? ''}` : `key ${status.keyHash ?? ''}`;
  const expired = spec.expiresAt !== undefined && Date.parse(spec.expiresAt) <= now.getTime();
  await reportSuccess(
    current,
    status,
    {
      reason: 'Synced',
      message: `${who} is held by ${client.url}${expired ? ` (expired at ${spec.expiresAt ?? ''}: refused)` : ''}${status.rotatedFrom ? ` (the previous value works until ${status.rotatedFrom.until ?? ''})` : ''}`,
      action,
      what: `key ${name}`,
      where: client.url,
    },
    deps,
  );
  return requeueAfterMs === undefined ? {} : { requeueAfterMs };
}

const stamp = (d: Date): string => d.toISOString().replace(/\.\d+Z$/, 'Z');

/**
 * Deletes every key the status records from a gateway, then the certificate a key was bound to
 * unless `inUse`; false when there was no key.
 */
async function removeFrom(
  client: ManagementClient,
  status: ApiKeyStatus,
  inUse: (certificateId: string) => boolean,
): Promise<boolean> {
  const keys: KeyOps | undefined = client.keys;
  if (!keys) return false;
  const ids = [
    status.keyHash,
    status.rotatedFrom?.keyHash,
    status.username === undefined ? undefined : keyHashOf(status.username),
  ].filter((id): id is string => id !== undefined);
  let removed = false;
  for (const id of ids) removed = (await keys.delete(id)) || removed;
  if (status.certificateId !== undefined && !inUse(status.certificateId))
    await client.deleteCert(status.certificateId);
  return removed;
}

async function finalize(obj: KeyObject, deps: ApiKeyDeps, log: Logger): Promise<WorkResult> {
  if (!obj.metadata.finalizers?.includes(KEY_FINALIZER)) return {};
  const status = obj.status ?? {};
  const where = status.pushedTo ? status.pushedTo.contextRef : obj.spec.contextRef;
  return finalizeInGateway(
    obj,
    {
      finalizer: KEY_FINALIZER,
      what: `key ${obj.metadata.name}`,
      resolved: await deps.connections.resolve(where, obj.metadata.namespace),
      remove: (client) => removeFrom(client, status, (id) => deps.certificateInUse(id, obj)),
    },
    deps,
    log,
  );
}

/** What of a policy its keys depend on: its ID, readiness, deletion, whether it grants access. */
const policyView = (p: PolicyView): unknown => ({
  id: p.status?.pol_id,
  grants: grantsAccess(p),
  ready: p.status?.conditions?.find((c) => c.type === 'Ready')?.status,
  deleting: p.metadata?.deletionTimestamp !== undefined,
});

/** The value under `dataKey` of a Secret from the cache. */
function secretValue(secret: k8s.V1Secret | undefined, dataKey: string): KeySecret | undefined {
  if (!secret) return undefined;
  const b64 = secret.data?.[dataKey];
  return {
    value: b64 === undefined ? undefined : Buffer.from(b64, 'base64').toString('utf8'),
    version: `${secret.metadata?.uid ?? ''}/${secret.metadata?.resourceVersion ?? ''}`,
  };
}

/** What of an API its keys depend on: its ID, whether it is going. */
const apiView = (api: ApiIdView): unknown => ({
  apiId: api.status?.api_id,
  deleting: api.metadata?.deletionTimestamp !== undefined,
});

/**
 * The ApiKey controller: keys are reconciled when they change, when the Secret they read
 * appears or changes, when a policy they name appears, gets its ID or goes, when an API their
 * access rights name appears, gets its ID or goes, and when their OperatorContext changes.
 */
export function apiKeyController(env: ControllerEnv): ControllerSpec {
  const keySpec = watchOf(env, 'ApiKey');
  const policySpec = watchOf(env, 'SecurityPolicy');
  const secretSpec = secretWatch(env);
  const keysInf = env.manager.informer<KeyObject>(keySpec);
  const policies = env.manager.informer<PolicyView>(policySpec);
  const secrets = env.manager.informer<k8s.V1Secret>(secretSpec);
  const stored = new SvcObjects<KeyObject>(env.kc, keySpec.plural);
  const written = new Map<string, ApiKeyStatus>();
  const objects: ApiKeyDeps['objects'] = {
    ensureFinalizer: (o, f) => stored.ensureFinalizer(o, f),
    removeFinalizer: async (o, f) => {
      await stored.removeFinalizer(o, f);
      if (o.metadata.uid !== undefined) written.delete(o.metadata.uid);
    },
    patchStatus: async (o, st) => {
      const changed = await stored.patchStatus(o, st);
      if (o.metadata.uid !== undefined) written.set(o.metadata.uid, structuredClone(st));
      return changed;
    },
  };
  const apis = Object.fromEntries(
    API_KINDS.map((kind) => [kind, env.manager.informer<ApiIdView>(watchOf(env, kind))]),
  ) as Record<(typeof API_KINDS)[number], Informer<ApiIdView>>;
  const keysCovering = byAccessRight(keysInf, (k) => keyAccessRefs(k));
  /** Keys of the ApiKeys whose access rights name an API of `kind`. */
  const keysOf = (kind: (typeof API_KINDS)[number], api: ApiIdView | undefined): string[] =>
    api
      ? keysCovering({ kind, namespace: api.metadata?.namespace ?? '', name: api.metadata?.name ?? '' }).map(
          (k) => objectKey(k),
        )
      : [];
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  const keysOfContext = byContext(keysInf);
  keysInf.addIndex('key-secret', (k) =>
    keyTypeOf(k.spec) === 'certificate'
      ? [`${k.metadata.namespace}/${k.spec.certificateSecretRef ?? ''}`]
      : [`${k.metadata.namespace}/${secretOf(k).name}`],
  );
  const apiCertificates = certificateHolders(env);
  const certificateInUse = (id: string, self: KeyObject): boolean =>
    apiCertificates().some((h) => h.status?.certificates?.includes(id) === true) ||
    keysInf.list().some((k) => k.metadata.uid !== self.metadata.uid && k.status?.certificateId === id);
  keysInf.addIndex('key-policy', (k) =>
    (k.spec.policies ?? []).flatMap((r) => {
      const ref = resolveRef(r, k.metadata.namespace);
      return ref ? [`${ref.namespace}/${ref.name}`] : [];
    }),
  );

  const writeSecret = async (
    owner: KeyObject,
    name: string,
    dataKey: string,
    value: string,
  ): Promise<string> => {
    const namespace = owner.metadata.namespace;
    const data = { [dataKey]: Buffer.from(value, 'utf8').toString('base64') };
    const existing = secrets.get(namespace, name);
    if (existing) {
      const patched = await core.patchNamespacedSecret(
        { name, namespace, body: { data }, fieldManager: 'svc-operator' },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      return `${patched.metadata?.uid ?? ''}/${patched.metadata?.resourceVersion ?? ''}`;
    }
    try {
      const created = await core.createNamespacedSecret({
        namespace,
        fieldManager: 'svc-operator',
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'Opaque',
          metadata: {
            name,
            namespace,
            labels: { 'app.kubernetes.io/managed-by': 'svc-operator' },
            ownerReferences: [
              {
                apiVersion: API_VERSION,
                kind: 'ApiKey',
                name: owner.metadata.name,
                uid: owner.metadata.uid ?? '',
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          },
          data,
        },
      });
      return `${created.metadata?.uid ?? ''}/${created.metadata?.resourceVersion ?? ''}`;
    } catch (err) {
      // Written meanwhile (by a user, or a reconcile before the cache saw it): read it next time.
      if (statusOf(err) === 409) {
        throw new TransientError('OP_ERR_SECRET_CONFLICT', `Secret ${namespace}/${name} appeared meanwhile`);
      }
      throw err;
    }
  };

  return {
    name: 'apikey',
    watch: keySpec,
    workers: 64,
    reconcile: (key) =>
      reconcileApiKey(key, {
        read: (namespace, name) => Promise.resolve(keysInf.get(namespace, name)),
        objects,
        connections: env.connections,
        events: env.events,
        policy: (namespace, name) => policies.get(namespace, name),
        api: (ref) => apis[ref.kind].get(ref.namespace, ref.name),
        certificateSecret: (namespace, name) => secrets.get(namespace, name),
        certificateInUse,
        secret: (namespace, name, dataKey) => secretValue(secrets.get(namespace, name), dataKey),
        writeSecret,
        written: (uid) => (uid === undefined ? undefined : written.get(uid)),
        now: env.now,
        log: env.log,
      }),
    watches: [
      {
        watch: secretSpec,
        map: (secret: k8s.V1Secret, old: k8s.V1Secret | undefined, event: InformerEvent) =>
          viewChanged(event, secret, old, (s) => s.data)
            ? keysInf.byIndex('key-secret', objectKey(secret)).map((k) => objectKey(k))
            : [],
      },
      {
        watch: policySpec,
        map: (p: PolicyView, old: PolicyView | undefined, event: InformerEvent) =>
          viewChanged(event, p, old, policyView)
            ? keysInf.byIndex('key-policy', objectKey(p)).map((k) => objectKey(k))
            : [],
      },
      ...API_KINDS.map((kind) => ({
        watch: watchOf(env, kind),
        map: (api: ApiIdView, old: ApiIdView | undefined, event: InformerEvent) =>
          viewChanged(event, api, old, apiView)
            ? [...new Set([...keysOf(kind, api), ...keysOf(kind, old)])]
            : [],
      })),
      {
        watch: watchOf(env, 'OperatorContext'),
        map: (ctx: k8s.KubernetesObject) => keysOfContext(objectKey(ctx)).map((k) => objectKey(k)),
      },
    ],
  };
}
