/**
 * The removal of a finalizer from an object the operator does not own the kind of (a Gateway, an
 * Ingress), through its own API client's merge patch.
 */
import { statusOf } from '../../lib/k8s/client.ts';

/**
 * Removes `finalizer` from `obj` in one merge patch (`patch`) guarded by the object's
 * resourceVersion. An object without it is left alone; one gone already (404) counts as done.
 */
export async function patchOutFinalizer<
  T extends { metadata: { finalizers?: string[]; resourceVersion?: string } },
>(obj: T, finalizer: string, patch: (obj: T, body: object) => Promise<unknown>): Promise<void> {
  const current = obj.metadata.finalizers ?? [];
  if (!current.includes(finalizer)) return;
  try {
    await patch(obj, {
      metadata: {
        finalizers: current.filter((f) => f !== finalizer),
        resourceVersion: obj.metadata.resourceVersion,
      },
    });
  } catch (err) {
    if (statusOf(err) !== 404) throw err;
  }
}
