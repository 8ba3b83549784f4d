/**
 * How each of the developer portal's kinds (APIDescription, PortalAPICatalogue, PortalConfig) is
 * reconciled: the one flow they share. The portal is the dashboard's (mode pro): the translated
 * document is written to its portal admin API (docs/portal.md) and read back for drift, as the
 * other kinds' documents are. Through a gateway (mode ce) there is no portal: `Ready=False`,
 * `NotSupportedInModeCe`, written once (a repeat changes nothing and records no event or log).
 */
import type { NamespacedRef, PushedTo, Transaction } from '../../../schemas/generated/kinds.ts';
import type { FieldProblem } from '../../../schemas/rules/field-problem.ts';
import { rememberingWrites, SvcObjects, type SvcObject } from '../../../lib/k8s/objects.ts';
import {
  objectKey,
  splitKey,
  type Informer,
  type InformerEvent,
  type WatchSpec,
} from '../../../lib/k8s/informer.ts';
import type { ControllerSpec } from '../../../lib/k8s/manager.ts';
import type * as k8s from '@kubernetes/client-node';
import type { WorkResult } from '../../../lib/k8s/workqueue.ts';
import type { Logger } from '../../../lib/log.ts';
import type { Condition } from '../../../schemas/generated/kinds.ts';
import type { PortalCollection } from '../../clients/management.ts';
import type { Connections } from '../../connections.ts';
import type { PortalDocument } from '../../translate/portal.ts';
import { derivedId } from '../../ids.ts';
import {
  callGateway,
  reportFailure,
  reportSuccess,
  reportUnresolved,
  type Fail,
  type ReportDeps,
} from '../status.ts';
import { contextWatch, viewChanged, watchOf, type ControllerEnv } from '../env.ts';
import { byContext } from '../indexes.ts';
import { finalizeInGateway, leaveFormerGateway, pushDocument, pushedTo, PushMemory } from '../sync.ts';

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

/**
 * What a portal kind's controller starts from: the kind's watch and informer, and the deps of the
 * shared flow over them (reads from the informer; writes that remember the status last written of
 * each object, `written`; the controller's connections, events, clock, pushes and log).
 */
export function portalWatch<T extends PortalObject<{ contextRef?: NamespacedRef }, PortalStatus>>(
  env: ControllerEnv,
  kind: PortalKind<T>['kind'],
): { spec: WatchSpec; informer: Informer<T>; deps: PortalDeps<T> } {
  const spec = watchOf(env, kind);
  const informer = env.manager.informer<T>(spec);
  return {
    spec,
    informer,
    deps: {
      read: (namespace, name) => Promise.resolve(informer.get(namespace, name)),
      ...rememberingWrites(new SvcObjects<T>(env.kc, spec.plural)),
      connections: env.connections,
      events: env.events,
      now: env.now,
      pushes: new PushMemory(),
      log: env.log,
    },
  };
}

/** Whether an object's `Ready` condition is True. */
export const isReady = (o: { status?: { conditions?: { type: string; status: string }[] } }): boolean =>
  o.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** An object a portal kind names, as much of it as is read: its ID and its conditions. */
export type Referenced = k8s.KubernetesObject & {
  status?: { conditions?: { type: string; status: string }[] };
};

/**
 * The kind a portal kind's objects name (a product its SecurityPolicy, a catalogue its
 * APIDescriptions): which objects one names, the ID taken from one, and how one missing is told.
 */
export interface Reference<T extends k8s.KubernetesObject, R extends Referenced> {
  kind: 'SecurityPolicy' | 'APIDescription';
  /** What the reasons while one is missing start with: `PolicyNotFound`, `PolicyNotReady`. */
  reason: string;
  /** Where a Ready one is held (`the dashboard`), as its NotReady message says. */
  heldBy: string;
  /** The `namespace/name` of each an object names. */
  refsOf: (o: T) => string[];
  /** Its ID where it is held, once it has one. */
  idOf: (r: R) => string | undefined;
}

/**
 * The ID of the object `ref` names, once it exists and is Ready; else why `published` (`the
 * product`) waits for it: `<reason>NotFound` while it is absent or being deleted, `<reason>NotReady`
 * while it has no ID or is not Ready. `where` is the field that names it (`spec.policyRef`).
 */
export function referencedId<T extends k8s.KubernetesObject, R extends Referenced>(
  reference: Reference<T, R>,
  lookup: (namespace: string, name: string) => R | undefined,
  ref: { namespace: string; name: string },
  where: string,
  published: string,
): { id: string } | { reason: string; message: string } {
  const r = lookup(ref.namespace, ref.name);
  const what = `${reference.kind} ${ref.namespace}/${ref.name}`;
  if (r === undefined || r.metadata?.deletionTimestamp !== undefined) {
    return {
      reason: `${reference.reason}NotFound`,
      message: `${where}: ${what} does not exist: ${published} is published once it does`,
    };
  }
  const id = reference.idOf(r);
  if (id === undefined || !isReady(r)) {
    return {
      reason: `${reference.reason}NotReady`,
      message: `${where}: ${what} is not Ready yet (not held by ${reference.heldBy}): ${published} is published once it is`,
    };
  }
  return { id };
}

/**
 * The informer of the kind `referrers` name, and the watch that reconciles the objects naming one
 * again when it appears, gets its ID, becomes Ready or goes.
 */
function referenceWatch<T extends k8s.KubernetesObject, R extends Referenced>(
  env: ControllerEnv,
  referrers: Informer<T>,
  reference: Reference<T, R>,
): { informer: Informer<R>; watch: NonNullable<ControllerSpec['watches']>[number] } {
  const spec = watchOf(env, reference.kind);
  const informer = env.manager.informer<R>(spec);
  const index = `names-${reference.kind}`;
  referrers.addIndex(index, reference.refsOf);
  const view = (r: R): unknown => ({
    id: reference.idOf(r),
    ready: isReady(r),
    deleting: r.metadata?.deletionTimestamp !== undefined,
  });
  return {
    informer,
    watch: {
      watch: spec,
      map: (r: k8s.KubernetesObject, old: k8s.KubernetesObject | undefined, event: InformerEvent) =>
        viewChanged(event, r as R, old as R | undefined, view)
          ? referrers.byIndex(index, objectKey(r)).map((o) => objectKey(o))
          : [],
    },
  };
}

/**
 * The controller of a portal kind whose objects name others (`reference`): they are reconciled
 * when they change, when what they name appears, gets its ID, becomes Ready or goes, and when
 * their OperatorContext changes. `withLookup` adds the lookup of what they name to the shared
 * flow's deps, as the kind's deps hold it.
 */
export function referringController<
  T extends PortalObject<{ contextRef?: NamespacedRef }, PortalStatus>,
  R extends Referenced,
  D extends PortalDeps<T>,
>(
  env: ControllerEnv,
  kind: PortalKind<T, D>,
  of: { name: string; workers: number },
  reference: Reference<T, R>,
  withLookup: (deps: PortalDeps<T>, lookup: (namespace: string, name: string) => R | undefined) => D,
): ControllerSpec {
  const { spec, informer, deps } = portalWatch<T>(env, kind.kind);
  const named = referenceWatch(env, informer, reference);
  const withNamed = withLookup(deps, (namespace, name) => named.informer.get(namespace, name));
  return {
    name: of.name,
    watch: spec,
    workers: of.workers,
    reconcile: (key) => reconcilePortal(key, kind, withNamed),
    watches: [named.watch, contextWatch(env, byContext(informer))],
  };
}

/** The portal ID of an object of a kind with many (a product, a catalogue): derived from its name. */
export const portalIdOf = (o: { metadata: { namespace: string; name: string } }): string =>
  derivedId(o.metadata.namespace, o.metadata.name);

/** The document a kind wants written, with the status fields it resolved; or why it can't be yet. */
export type Desired<St> =
  { doc: PortalDocument; status: Partial<St> } | { reason: string; message: string; requeueAfterMs?: number };

/** What differs between the three kinds; `D`: the deps the kind's reconcile gets. */
export interface PortalKind<
  T extends PortalObject<{ contextRef?: NamespacedRef }, PortalStatus>,
  D extends PortalDeps<T> = PortalDeps<T>,
> {
  kind: 'APIDescription' | 'PortalAPICatalogue' | 'PortalConfig';
  finalizer: string;
  collection: PortalCollection;
  /** The document's ID in the portal. */
  id: (obj: T) => string;
  /** The spec's problems (schemas/rules/portal-kinds.ts): the webhooks refuse them; here for clusters without. */
  problems: (obj: T) => FieldProblem[];
  /** The document, once what it references is there. */
  desired: (obj: T, id: string, deps: D) => Desired<NonNullable<T['status']>>;
}

/** `APIDescription default/orders`: how messages name an object. */
const named = (kind: string, o: { metadata: { namespace: string; name: string } }): string =>
  `${kind} ${o.metadata.namespace}/${o.metadata.name}`;

/**
 * Reconciles one object of a portal kind: finalizer, spec rules, connection, mode, references,
 * then the write (skipped when the portal holds what was last written), and the status once.
 */
export async function reconcilePortal<
  T extends PortalObject<{ contextRef?: NamespacedRef }, PortalStatus>,
  D extends PortalDeps<T>,
>(key: string, kind: PortalKind<T, D>, deps: D): Promise<WorkResult> {
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
  const desired = kind.desired(current, id, deps);
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
async function finalize<
  T extends PortalObject<{ contextRef?: NamespacedRef }, PortalStatus>,
  D extends PortalDeps<T>,
>(obj: T, kind: PortalKind<T, D>, deps: PortalDeps<T>, log: Logger): Promise<WorkResult> {
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
