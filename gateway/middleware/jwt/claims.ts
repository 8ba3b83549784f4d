/**
 * What a verified token's claims say, as pure functions of the claims and the API: whether it is
 * valid now (`exp`, `nbf`, `iat` with the API's skews), who it identifies, which policies apply.
 */
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { isPlainObject } from '../../../lib/plain-object.ts';

/** The claims of a token: a JSON object. */
export type Claims = Readonly<Record<string, unknown>>;

/** The time claims' skews of an API, in seconds. */
export interface Skews {
  exp: number;
  iat: number;
  nbf: number;
}

/** The skews `api` allows (0 when unset). */
export function skewsOf(api: GatewayApiDefinition): Skews {
  return {
    exp: api.jwt_expires_at_validation_skew ?? 0,
    iat: api.jwt_issued_at_validation_skew ?? 0,
    nbf: api.jwt_not_before_validation_skew ?? 0,
  };
}

/**
 * Why the token is not valid at `nowS` (Unix seconds), or undefined. Each time claim is optional;
 * one that is not a number makes the token invalid. A token expires at its `exp` (RFC 7519:
 * not accepted on or after it), `skews.exp` seconds later; `nbf` and `iat` may be up to their
 * skew ahead of the clock.
 */
export function timeRefusal(claims: Claims, nowS: number, skews: Skews): GatewayError | undefined {
  const at = (name: string): number | undefined | null => {
    const v = claims[name];
    if (v === undefined) return undefined;
    return typeof v === 'number' && Number.isFinite(v) ? v : null;
  };
  const exp = at('exp');
  const nbf = at('nbf');
  const iat = at('iat');
  if (exp === null || nbf === null || iat === null) return GatewayError.jwtInvalid();
  if (exp !== undefined && nowS - skews.exp >= exp) return GatewayError.jwtExpired();
  if (nbf !== undefined && nbf > nowS + skews.nbf) return GatewayError.jwtNotYetValid();
  if (iat !== undefined && iat > nowS + skews.iat) return GatewayError.jwtIssuedInFuture();
  return undefined;
}

/** The identity: the claim `jwt_identity_base_field` names, else `sub`; a non-empty string. */
export function identityOf(claims: Claims, baseField: string | undefined): string | undefined {
  for (const field of [baseField ?? '', 'sub']) {
    if (field === '' || !Object.hasOwn(claims, field)) continue;
    const v = claims[field];
    if (typeof v === 'string') return v === '' ? undefined : v;
  }
  return undefined;
}

/** A claim as a list of strings: one string, or a list of them (other values left out). */
function strings(v: unknown): string[] {
  if (typeof v === 'string') return v === '' ? [] : [v];
  if (Array.isArray(v)) return v.filter((s): s is string => typeof s === 'string' && s !== '');
  return [];
}

/** The scopes of a token: the claim at the dotted `path`, a space-separated string or a list. */
export function scopesOf(claims: Claims, path: string): string[] {
  let v: unknown = claims;
  for (const part of path.split('.')) {
    if (!isPlainObject(v)) return [];
    v = Object.hasOwn(v, part) ? v[part] : undefined;
  }
  if (typeof v === 'string') return v.split(' ').filter((s) => s !== '');
  return strings(v);
}

/**
 * The policy IDs a token gets on `api`: those its policy claim names (`jwt_policy_field_name`,
 * a string or a list), else the API's `jwt_default_policies`. With `jwt_scope_to_policy_mapping`
 * and a token that carries scopes, the policies its scopes map to are added to the claimed ones,
 * or replace the default ones (as in the reference gateway: a token with scopes gets what its
 * scopes grant). Empty when nothing applies.
 */
export function policiesOf(claims: Claims, api: GatewayApiDefinition): string[] {
  const field = api.jwt_policy_field_name ?? '';
  let ids = field === '' ? [] : strings(claims[field]);
  const fromDefaults = ids.length === 0;
  if (fromDefaults) ids = [...(api.jwt_default_policies ?? [])];
  const mapping = api.jwt_scope_to_policy_mapping ?? {};
  if (Object.keys(mapping).length > 0) {
    const scopes = scopesOf(claims, api.jwt_scope_claim_name ?? 'scope');
    const mapped = scopes.flatMap((s) => (Object.hasOwn(mapping, s) ? [mapping[s] ?? ''] : []));
    if (scopes.length > 0) ids = [...(fromDefaults ? [] : ids), ...mapped];
  }
  return [...new Set(ids.filter((id) => id !== ''))];
}
