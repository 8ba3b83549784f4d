/** Why a found key may not be used on an API, shared by every authentication method. */
import { GatewayError } from '../pipeline/errors.ts';
import type { LoadedKey } from './sessions.ts';

/**
 * The refusal of a key on an API of organisation `orgId` (empty: any), or undefined: another
 * organisation's key is unknown here; a key whose policy is draft or inactive is disabled; one
 * whose policy is missing (or deny, never published) has no access.
 */
export function refusalOf(key: LoadedKey, orgId: string): GatewayError | undefined {
  if (orgId !== '' && (key.stored.org_id ?? '') !== orgId) return GatewayError.accessDisallowed();
  if (!key.applied.ok) {
    return key.applied.reason === 'inactive' ? GatewayError.keyInactive() : GatewayError.accessDisallowed();
  }
  return undefined;
}
