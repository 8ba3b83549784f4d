/**
 * The ApiDefinitions a controller generates for one object of another kind (an Ingress, a
 * Gateway): created, replaced or deleted until they are the ones it wants. Both controllers write
 * them this way.
 */
import type { Logger } from '../../lib/log.ts';
import type { GeneratedApiWriter } from './ingress/types.ts';
import type { ApiObject } from './objects.ts';

/** What a write did to one generated ApiDefinition. */
export type GeneratedApiAction = 'Created' | 'Updated' | 'Deleted';

/** How writeGeneratedApis writes for its controller. */
export interface GeneratedApiWrites {
  /** Whether the stored ApiDefinition already says what the one wanted says. */
  upToDate: (have: ApiObject, want: ApiObject) => boolean;
  log: Logger;
  /** After each write, with the ApiDefinition written (or deleted): an Event, say. */
  written?: (action: GeneratedApiAction, api: ApiObject) => Promise<void>;
  /** A create or replace that failed (its `written` too): thrown again, or kept to report. */
  failed: (name: string, err: unknown) => void;
}

/**
 * Makes the generated ApiDefinitions of `owner` (`deps.generated`, in its namespace) the `wanted` ones:
 * one missing is created (false from the writer: created already, by a reconcile the cache has
 * not caught up with), one that differs is replaced (keeping what others added to its metadata:
 * its finalizers), one no longer wanted is deleted; one being deleted is left to go. Returns the
 * names wanted.
 */
export async function writeGeneratedApis<O extends { metadata: { namespace: string } }>(
  owner: O,
  wanted: readonly ApiObject[],
  deps: { apis: GeneratedApiWriter; generated: (owner: O) => readonly ApiObject[] },
  how: GeneratedApiWrites,
): Promise<Set<string>> {
  const { namespace } = owner.metadata;
  const byName = new Map(deps.generated(owner).map((a) => [a.metadata.name, a]));
  const names = new Set<string>();
  for (const desired of wanted) {
    const name = desired.metadata.name;
    names.add(name);
    const existing = byName.get(name);
    try {
      if (!existing) {
        if (!(await deps.apis.create(desired))) continue;
        await how.written?.('Created', desired);
        how.log.info('generated api created', { api: name });
      } else if (!existing.metadata.deletionTimestamp && !how.upToDate(existing, desired)) {
        desired.metadata.resourceVersion = existing.metadata.resourceVersion;
        desired.metadata.finalizers = existing.metadata.finalizers;
        await deps.apis.replace(desired);
        await how.written?.('Updated', desired);
        how.log.info('generated api updated', { api: name });
      }
    } catch (err) {
      how.failed(name, err);
    }
  }
  for (const [name, api] of byName) {
    if (names.has(name) || api.metadata.deletionTimestamp) continue;
    await deps.apis.delete(namespace, name);
    await how.written?.('Deleted', api);
    how.log.info('generated api deleted', { api: name });
  }
  return names;
}
