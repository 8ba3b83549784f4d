/**
 * One ApiKey reconciled: the gateway made to hold the key it describes (inputs.ts reads what it
 * is made of, push.ts writes it), its status reported; the finalizer deletes the key.
 */
import type { ApiKeyStatus } from '../../../schemas/generated/kinds.ts';
import { KEY_FINALIZER } from '../../../schemas/finalizers.ts';
import { apiKeyProblems, keyTypeOf } from '../../../schemas/rules/api-key.ts';
import { formatProblem } from '../../../schemas/rules/field-problem.ts';
import type { Logger } from '../../../lib/log.ts';
import type { WorkResult } from '../../../lib/k8s/workqueue.ts';
import { splitKey } from '../../../lib/k8s/informer.ts';
import { translateApiKey } from '../../translate/api-key.ts';
import { apiRefText } from '../../references.ts';
import { callGateway, reportFailure, reportSuccess, reportUnresolved, type Fail } from '../status.ts';
import { finalizeInGateway, leaveFormerGateway, pushedTo } from '../sync.ts';
import { accessOf, keyValueOf, policyIdsOf } from './inputs.ts';
import { pushBasic, pushToken, removeFrom, type Push } from './push.ts';
import type { ApiKeyDeps, KeyObject } from './types.ts';

/**
 * The gateway's `counter_id` of an ApiKey: every value the key has (both during a rotation's
 * overlap) counts against one rate limit and quota, kept across rotations.
 */
const counterIdOf = (obj: KeyObject): string =>
  `apikey-${obj.metadata.uid ?? `${obj.metadata.namespace}.${obj.metadata.name}`}`;

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

  const policyIds = await policyIdsOf(spec, namespace, deps, fail);
  if (!policyIds) return {};
  const access = await accessOf(current, namespace, deps, fail);
  if (!access) return {};
  const { rights, apiRefs, texts, apiIds } = access;
  const type = keyTypeOf(spec);
  const pushedBefore = old.keyHash !== undefined || old.username !== undefined;
  const value = await keyValueOf(current, status, resolved.conn, client.url, deps, fail, log);
  if (!value) return {};

  const desired = translateApiKey(rights === undefined ? spec : { ...spec, accessRights: rights }, {
    orgId: resolved.conn.org,
    policyIds,
    counterId: counterIdOf(current),
    namespace,
    apiId: (ref) => apiIds.get(apiRefText(ref)) ?? '',
    ...(value.bound ? { certificateId: value.bound.id } : {}),
  });
  const here = pushedTo(client, spec.contextRef, namespace);
  const now = deps.now();
  const push: Push = {
    client,
    keys,
    spec,
    old,
    status,
    desired,
    raw: value.raw,
    version: value.version,
    bound: value.bound,
    org: resolved.conn.org,
    // Once the key was pushed, its counters are the ApiKey's: a new value (rotation, a user name
    // changed, a key re-created after drift) goes on counting where the previous one was.
    keepCounters: pushedBefore,
    inUse: (id) => deps.certificateInUse(id, current),
    now,
    log,
  };
  const done = await callGateway(() => (type === 'basic' ? pushBasic(push) : pushToken(push)), fail);
  if (!done) return {};
  const { action, requeueAfterMs } = done.value;
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
