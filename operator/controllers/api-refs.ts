/**
 * API references resolved to gateway API IDs, one way for every kind that names APIs (a
 * SecurityPolicy's `access_rights_array`, an ApiKey's `spec.accessRights`): the `api_id` the
 * API's controller writes to its status once the API is pushed.
 */
import type * as k8s from '@kubernetes/client-node';
import type { ApiResourceRef } from '../../schemas/generated/kinds.ts';
import { apiRefText } from '../references.ts';

/** As much of an API resource as resolving reads. */
export interface ApiIdView extends k8s.KubernetesObject {
  /** `api_id` is written by the API's controller once it has pushed the API. */
  status?: { api_id?: string };
}

/** Why references can't be resolved yet: a condition reason and its message. */
export interface Unresolved {
  reason: 'ApiNotFound' | 'ApiNotReady';
  message: string;
}

/**
 * Fills `ids` (by {@link apiRefText}) with the API ID of each reference, or says why one can't
 * be resolved yet. `field` names the list in messages (`access_rights_array`), `then` what
 * happens once they resolve (`the policy is pushed`); the API's watch queues the referrer again.
 */
export function resolveApis(
  refs: readonly ApiResourceRef[],
  api: (ref: ApiResourceRef) => ApiIdView | undefined,
  ids: Map<string, string>,
  words: { field: string; then: string },
): Unresolved | undefined {
  const missing: string[] = [];
  const unready: string[] = [];
  for (const ref of refs) {
    const found = api(ref);
    const apiId = found?.status?.api_id;
    if (!found) missing.push(apiRefText(ref));
    else if (!apiId) unready.push(apiRefText(ref));
    else ids.set(apiRefText(ref), apiId);
  }
  if (missing.length > 0) {
    return {
      reason: 'ApiNotFound',
      message: `${words.field} names ${missing.join(', ')}, which does not exist yet: ${words.then} once it does`,
    };
  }
  if (unready.length > 0) {
    return {
      reason: 'ApiNotReady',
      message: `${unready.join(', ')} has no API ID yet (its controller has not pushed it): ${words.then} once it has`,
    };
  }
  return undefined;
}
