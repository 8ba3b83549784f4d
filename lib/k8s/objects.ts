import * as k8s from '@kubernetes/client-node';
import { isDeepStrictEqual } from 'node:util';
import { GROUP, VERSION } from '../../schemas/common.ts';
import type { Condition } from '../../schemas/generated/kinds.ts';
import { redactUrl } from '../log.ts';
import { withKstatus } from './kstatus.ts';

export type { Condition };

/**
 * Sets `next` in a copy of `conditions`. The transition time moves only when the status
 * changes, so an unchanged condition compares equal and causes no status write. The message is
 * redacted as a log line is (`redactUrl`): whoever reads the object reads it. Setting `Ready`
 * also sets the conditions kstatus (Flux) reads from it (kstatus.ts).
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: Omit<Condition, 'lastTransitionTime'>,
  now: Date,
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const prev = i >= 0 ? list[i] : undefined;
  const lastTransitionTime =
    prev?.status === next.status ? prev.lastTransitionTime : now.toISOString().replace(/\.\d+Z$/, 'Z');
  const merged: Condition = { ...next, message: redactUrl(next.message), lastTransitionTime };
  if (i >= 0) list[i] = merged;
  else list.push(merged);
  return merged.type === 'Ready' ? withKstatus(list, merged, now) : list;
}

/** An svc custom resource as the helpers see it. */
export interface SvcObject<S = unknown, St = unknown> extends k8s.KubernetesObject {
  metadata: k8s.V1ObjectMeta & { name: string; namespace: string };
  spec: S;
  status?: St;
}

/** Reads and writes svc custom resources of one plural. */
export class SvcObjects<T extends SvcObject> {
  readonly #api: k8s.CustomObjectsApi;
  readonly plural: string;
  readonly #fieldManager: string;

  constructor(kc: k8s.KubeConfig, plural: string, fieldManager = 'svc-operator') {
    this.#api = kc.makeApiClient(k8s.CustomObjectsApi);
    this.plural = plural;
    this.#fieldManager = fieldManager;
  }

  #ref(namespace: string, name: string) {
    return { group: GROUP, version: VERSION, plural: this.plural, namespace, name };
  }

  /** The object, or undefined when it does not exist. */
  async get(namespace: string, name: string): Promise<T | undefined> {
    try {
      return (await this.#api.getNamespacedCustomObject(this.#ref(namespace, name))) as T;
    } catch (err) {
      if (err instanceof k8s.ApiException && err.code === 404) return undefined;
      throw err;
    }
  }

  /** Adds `finalizer` when missing; returns the updated object. */
  async ensureFinalizer(obj: T, finalizer: string): Promise<T> {
    const current = obj.metadata.finalizers ?? [];
    if (current.includes(finalizer)) return obj;
    return this.#patch(obj, {
      metadata: { finalizers: [...current, finalizer], resourceVersion: obj.metadata.resourceVersion },
    });
  }

  /** Removes `finalizer` when present. */
  async removeFinalizer(obj: T, finalizer: string): Promise<void> {
    const current = obj.metadata.finalizers ?? [];
    if (!current.includes(finalizer)) return;
    try {
      await this.#patch(obj, {
        metadata: {
          finalizers: current.filter((f) => f !== finalizer),
          resourceVersion: obj.metadata.resourceVersion,
        },
      });
    } catch (err) {
      if (err instanceof k8s.ApiException && err.code === 404) return;
      throw err;
    }
  }

  /** Writes `status` through the status subresource, only when it differs from the object's. */
  async patchStatus(obj: T, status: NonNullable<T['status']>): Promise<boolean> {
    if (isDeepStrictEqual(obj.status ?? {}, status)) return false;
    // A merge patch with the whole status: fields we dropped become null and are removed.
    const body: Record<string, unknown> = { ...(status as Record<string, unknown>) };
    for (const key of Object.keys(obj.status ?? {})) {
      if (!(key in body)) body[key] = null;
    }
    await this.#api.patchNamespacedCustomObjectStatus(
      {
        ...this.#ref(obj.metadata.namespace, obj.metadata.name),
        body: { status: body },
        fieldManager: this.#fieldManager,
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    return true;
  }

  async #patch(obj: T, body: object): Promise<T> {
    return (await this.#api.patchNamespacedCustomObject(
      { ...this.#ref(obj.metadata.namespace, obj.metadata.name), body, fieldManager: this.#fieldManager },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    )) as T;
  }
}

/** The writes a reconciler makes of its kind's objects (tests pass their own). */
export type ObjectWrites<T extends SvcObject> = Pick<
  SvcObjects<T>,
  'ensureFinalizer' | 'removeFinalizer' | 'patchStatus'
>;

/**
 * The writes of a kind's objects through `stored`, remembering the status last written of each
 * object (by uid): `written` gives it back. The informer cache may not hold it yet when the next
 * reconcile starts (right after the first, or queued by the finalizer's own update); read stale,
 * a reconciler would do or report again what it just did. The process writing is the only writer
 * (the leader), so what it remembers is never older than its cache; it forgets an object when its
 * finalizer goes.
 */
export function rememberingWrites<T extends SvcObject>(
  stored: SvcObjects<T>,
): { objects: ObjectWrites<T>; written: (uid: string | undefined) => NonNullable<T['status']> | undefined } {
  const written = new Map<string, NonNullable<T['status']>>();
  return {
    objects: {
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
    },
    written: (uid) => (uid === undefined ? undefined : written.get(uid)),
  };
}
