/**
 * How each of the developer portal's kinds (APIDescription, PortalAPICatalogue, PortalConfig) is
 * reconciled: the one flow they share. The portal is the dashboard's (mode pro): the translated
 * document is written to its portal admin API (docs/portal.md) and read back for drift, as the
 * other kinds' documents are. Through a gateway (mode ce) there is no portal: `Ready=False`,
 * `NotSupportedInModeCe`, written once (a repeat changes nothing and records no event or log).
 */
import type { NamespacedRef, PushedTo, Transaction } from '../../../schemas/generated/kinds.ts';
import type { FieldProblem } from '../../../schemas/rules/field-problem.ts';
import type * as k8s from '@kubernetes/client-node';
import { rememberingWrites, SvcObjects, type SvcObject } from '../../../lib/k8s/objects.ts';
import { splitKey } from '../../../lib/k8s/informer.ts';
import type { WorkResult } from '../../../lib/k8s/workqueue.ts';
import type { Logger } from '../../../lib/log.ts';
import type { Condition } from '../../../schemas/generated/kinds.ts';
import type { PortalCollection } from '../../clients/management.ts';
import type { Connections } from '../../connections.ts';
import type { PortalDocument } from '../../translate/portal.ts';
import {
  callGateway,
  reportFailure,
  reportSuccess,
  reportUnresolved,
  type Fail,
  type ReportDeps,
} from '../status.ts';
import { finalizeInGateway, leaveFormerGateway, pushDocument, pushedTo, type PushMemory } from '../sync.ts';

/** The status every portal kind has. */
export interface PortalStatus {
  id?: string;
  pushedTo?: PushedTo;
  observedGeneration?: number;
  latestCRDSpecHash?: string;
  latestSvcSpecHash?: string;
  latestTransaction?: Transaction;
  conditions?: Condition[];
}

/** A stored object of a portal kind. */
export type PortalObject<S extends { contextRef?: NamespacedRef }, St extends PortalStatus> = SvcObject<
  S,
  St
> & {
  metadata: { name: string; namespace: string };
  spec: S;
};

/** What the shared flow needs; tests pass their own. */
export interface PortalDeps<
  T extends PortalObject<{ contextRef?: NamespacedRef }, PortalStatus>,
> extends ReportDeps<T> {
  read: (namespace: string, name: string) => Promise<T | undefined>;
  objects: Pick<SvcObjects<T>, 'ensureFinalizer' | 'removeFinalizer' | 'patchStatus'>;
  connections: Pick<Connections, 'resolve'>;
  pushes: PushMemory;
  /**
   * The status this process last wrote for the object (by uid). The informer cache may not hold
   * it yet when the next reconcile starts (the finalizer's own update queues one at once): read
   * stale, a failure already reported would be reported, and its event recorded, again. This
   * process is the only writer (the leader), so what it remembers is never older than its cache.
   */
  written?: (uid: string | undefined) => NonNullable<T['status']> | undefined;
  log: Logger;
}

/** A kind's object writes, remembering the status last written of each object (`written`). */
export function portalObjects<T extends PortalObject<{ contextRef?: NamespacedRef }, PortalStatus>>(
  kc: k8s.KubeConfig,
  plural: string,
): Pick<PortalDeps<T>, 'objects' | 'written'> {
  return rememberingWrites(new SvcObjects<T>(kc, plural));
}

/** The document a kind wants written, with the status fields it resolved; or why it can't be yet. */
export type Desired<St> =
  { doc: PortalDocument; status: Partial<St> } | { reason: string; message: string; requeueAfterMs?: number };

/** What differs between the three kinds. */
export interface PortalKind<T extends PortalObject<{ contextRef?: NamespacedRef }, PortalStatus>> {
  kind: 'APIDescription' | 'PortalAPICatalogue' | 'PortalConfig';
  finalizer: string;
  collection: PortalCollection;
  /** The document's ID in the portal. */
  id: (obj: T) => string;
  /** The spec's problems (schemas/rules/portal-kinds.ts): the webhooks refuse them; here for clusters without. */
  problems: (obj: T) => FieldProblem[];
  /** The document, once what it references is there. */
  desired: (obj: T, id: string) => Desired<NonNullable<T['status']>>;
}

/** `APIDescription default/orders`: how messages name an object. */
const named = (kind: string, o: { metadata: { namespace: string; name: string } }): string =>
  `${kind} ${o.metadata.namespace}/${o.metadata.name}`;

/**
 * Reconciles one object of a portal kind: finalizer, spec rules, connection, mode, references,
 * then the write (skipped when the portal holds what was last written), and the status once.
 */
export async function reconcilePortal<T extends PortalObject<{ contextRef?: NamespacedRef }, PortalStatus>>(
  key: string,
  kind: PortalKind<T>,
  deps: PortalDeps<T>,
): Promise<WorkResult> {
  const { namespace, name } = splitKey(key);
  const obj = await deps.read(namespace, name);
  if (!obj) return {};
  const log = deps.log.child({ kind: kind.kind, object: key });
  if (obj.metadata.deletionTimestamp !== undefined) return finalize(obj, kind, deps, log);

  const ensured = await deps.objects.ensureFinalizer(obj, kind.finalizer);
  const remembered = deps.written?.(ensured.metadata.uid);
  const current: T = remembered ? { ...ensured, status: remembered } : ensured;
  const old: PortalStatus = current.status ?? {};
  const status = { ...old, observedGeneration: current.metadata.generation } as NonNullable<T['status']>;
  const fail: Fail = (reason, message, call) =>
    reportFailure(current, status, { reason, message, call }, deps);

  const problems = kind.problems(current);
  if (problems.length > 0) {
    await fail('SpecInvalid', problems.map((p) => `spec.${p.path}: ${p.message}`).join('; '), false);
    return {};
  }
  const resolved = await deps.connections.resolve(current.spec.contextRef, namespace);
  if (!resolved.ok) return reportUnresolved(resolved, fail);
  const { client } = resolved;
  const portal = client.portal;
  if (resolved.conn.mode !== 'pro' || portal === undefined) {
    await fail(
      'NotSupportedInModeCe',
      `the developer portal is the dashboard's (mode pro), and ${client.url} is a gateway (mode ce): nothing is written. Point contextRef at a mode pro OperatorContext, or delete this ${kind.kind}`,
      false,
    );
    return {};
  }
  const id = kind.id(current);
  const desired = kind.desired(current, id);
  if ('reason' in desired) {
    await fail(desired.reason, desired.message, false);
    return desired.requeueAfterMs === undefined ? {} : { requeueAfterMs: desired.requeueAfterMs };
  }
  const what = named(kind.kind, current);
  const here = pushedTo(client, current.spec.contextRef, namespace);
  const { collection } = kind;
  const put = (doc: PortalDocument): Promise<void> => portal.put(collection, id, doc);
  const done = await callGateway(
    () =>
      pushDocument(
        { get: () => portal.get(collection, id), create: put, update: put },
        desired.doc,
        old,
        undefined,
        { pushes: deps.pushes, uid: current.metadata.uid, id },
      ),
    fail,
  );
  if (!done) return {};
  await leaveFormerGateway(
    current,
    {
      before: old.pushedTo,
      here,
      what,
      remove: (c) => c.portal?.delete(collection, id) ?? Promise.resolve(false),
    },
    { ...deps, log },
    fail,
  );
  Object.assign(status, desired.status, done.value.hashes, { id, pushedTo: here });
  // A field the kind resolved to nothing (a product without a policy) leaves the status.
  for (const [k, v] of Object.entries(desired.status)) {
    if (v === undefined) Reflect.deleteProperty(status, k);
  }
  const { action } = done.value;
  if (action) log.info(`portal ${collection} ${action.toLowerCase()}`, { dashboard: client.url, id });
  await reportSuccess(
    current,
    status,
    {
      reason: 'Synced',
      message: `held by the developer portal of ${client.url} (${collection}${collection === 'config' ? '' : ` ${id}`})`,
      action,
      what,
      where: `the developer portal of ${client.url}`,
    },
    deps,
  );
  return {};
}

/**
 * Deletes the document from the portal it was written to (the settings go back to the
 * dashboard's defaults), then drops the finalizer. Never written (mode ce, or refused before):
 * nothing to delete.
 */
async function finalize<T extends PortalObject<{ contextRef?: NamespacedRef }, PortalStatus>>(
  obj: T,
  kind: PortalKind<T>,
  deps: PortalDeps<T>,
  log: Logger,
): Promise<WorkResult> {
  if (!obj.metadata.finalizers?.includes(kind.finalizer)) return {};
  const before = obj.status?.pushedTo;
  const id = obj.status?.id;
  if (before === undefined || id === undefined) {
    await deps.objects.removeFinalizer(obj, kind.finalizer);
    return {};
  }
  return finalizeInGateway(
    obj,
    {
      finalizer: kind.finalizer,
      what: named(kind.kind, obj),
      resolved: await deps.connections.resolve(before.contextRef, obj.metadata.namespace),
      remove: (client) => client.portal?.delete(kind.collection, id) ?? Promise.resolve(false),
    },
    deps,
    log,
  );
}
