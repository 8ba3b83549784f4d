/**
 * JWT authentication (`enable_jwt`, GATEWAY-BEHAVIOUR §2, §3). The token is read where
 * `auth_configs.jwt` says (default the `Authorization` header, `Bearer ` optional) and verified
 * with the key of `jwt_source` (schemas/rules/auth.ts `jwtSourceOf`): an HMAC secret, a PEM public
 * key, or a JWKS (jwks.ts). Only the algorithms of the API's `jwt_signing_method` are accepted,
 * so `alg: none`, another family, and HMAC with a public key as secret are refused. Then `exp`,
 * `nbf` and `iat` with the API's skews, the identity (`jwt_identity_base_field`, else `sub`), and
 * the policies (claims.ts).
 *
 * The session belongs to the identity, not the token: its ID is a hash of the API's organisation
 * and the identity, so every token of one subject counts against the same rate limits and quota.
 * It is the policies applied to a key that stores nothing else, cached by the session cache
 * until a policy changes (`Sessions.derived`).
 *
 * A token whose signature verified is remembered (by its SHA-256, per compiled API, at most
 * VERIFIED_MAX of them) until it expires, and at most VERIFIED_TTL_MS, or the JWKS cache time when
 * the key comes from a JWKS (so a key rotated out stops verifying within the same bound): a
 * client sending the same token again skips the signature check and the reading of its claims.
 * Time claims, and the policies the token names, are checked on every request.
 */
import { hash, type KeyObject } from 'node:crypto';
import { compactVerify, errors, type CryptoKey, type JWSHeaderParameters } from 'jose';
import type { GatewayPolicy } from '../../../schemas/generated/models.ts';
import { JWT_ALGORITHMS, jwtSourceOf, type JwtFamily } from '../../../schemas/rules/auth.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { methodLocations, readCredential } from '../../pipeline/credentials.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { adoptIdentity } from '../../sessions/identity.ts';
import { identityOf, policiesOf, skewsOf, timeRefusal, type Claims } from './claims.ts';
import { jwksFor } from './jwks.ts';
import { isJwtApi } from './stage.ts';
import { isPlainObject } from '../../../lib/plain-object.ts';

const BEARER = /^bearer\s+/i;
/** Verified tokens remembered per compiled API. */
const VERIFIED_MAX = 4096;
/** Longest a verified token is remembered (static keys; a JWKS key is remembered its cache time). */
const VERIFIED_TTL_MS = 300_000;

/** What a verified token says, as this API reads it: its claims, identity, session, policies. */
interface Verified {
  claims: Claims;
  identity: string | undefined;
  /** The session ID of the identity (undefined without one). */
  sessionId: string | undefined;
  policyIds: string[];
}

/** Tokens whose signature verified, by token hash, until `until` (ms). */
class VerifiedTokens {
  readonly #entries = new Map<string, Verified & { until: number }>();

  get(hash: string, now: number): Verified | undefined {
    const e = this.#entries.get(hash);
    if (e === undefined) return undefined;
    if (e.until > now) return e;
    this.#entries.delete(hash);
    return undefined;
  }

  set(hash: string, verified: Verified, now: number, ttlMs: number): void {
    const exp = typeof verified.claims.exp === 'number' ? verified.claims.exp * 1000 : Infinity;
    const until = Math.min(now + ttlMs, exp);
    if (until <= now) return;
    if (this.#entries.size >= VERIFIED_MAX) {
      // The oldest entry goes (a Map iterates in insertion order).
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(hash, { ...verified, until });
  }
}

type VerifyKey = KeyObject | Uint8Array | ((header: JWSHeaderParameters) => Promise<CryptoKey>);

/** The stable session ID of `identity` in organisation `orgId`. */
export function jwtSessionId(orgId: string, identity: string): string {
  return hash('sha256', `jwt\0${orgId}\0${identity}`, 'hex');
}

/** The claims of `token` when its signature verifies with `key` and one of `algorithms`. */
async function verifiedClaims(
  token: string,
  key: VerifyKey,
  algorithms: string[],
): Promise<Claims | undefined> {
  let payload: Uint8Array;
  try {
    payload = (await compactVerify(token, key, { algorithms })).payload;
  } catch (err) {
    if (!(err instanceof errors.JOSEError)) throw err;
    // A JWKS with several keys for a token without `kid`: the one that verifies it.
    if (!(err instanceof errors.JWKSMultipleMatchingKeys)) return undefined;
    const found = await firstVerifying(token, err, algorithms);
    if (found === undefined) return undefined;
    payload = found;
  }
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload).toString('utf8'));
    return isPlainObject(claims) ? claims : undefined;
  } catch {
    return undefined;
  }
}

async function firstVerifying(
  token: string,
  candidates: AsyncIterable<CryptoKey>,
  algorithms: string[],
): Promise<Uint8Array | undefined> {
  for await (const candidate of candidates) {
    try {
      return (await compactVerify(token, candidate, { algorithms })).payload;
    } catch {
      // The next candidate.
    }
  }
  return undefined;
}

/** See the module comment; the chain lists it through stage.ts, which loads this module. */
export const jwt: GatewayMiddleware = {
  name: 'jwt',
  enabled: isJwtApi,
  create: (api, deps) => {
    const family: JwtFamily = api.jwt_signing_method ?? 'hmac';
    const source = jwtSourceOf(api.jwt_source ?? '', family);
    // The write-time rules refuse such a definition: only a hand-edited file gets here.
    if (typeof source === 'string') throw new Error(`jwt_source: ${source}`);
    const algorithms = [...JWT_ALGORITHMS[family]];
    let key: VerifyKey;
    let rememberMs = VERIFIED_TTL_MS;
    if (source.kind === 'jwks') {
      const jwks = jwksFor(deps.sessions, source.url, { now: deps.now, log: deps.log });
      const maxAgeMs = deps.config.jwks_cache_ttl_s * 1000;
      key = (header) => jwks.key(header, maxAgeMs);
      rememberMs = Math.min(rememberMs, maxAgeMs);
    } else key = source.kind === 'secret' ? source.secret : source.key;
    const verified = new VerifiedTokens();
    const where = methodLocations(api, 'jwt_claim');
    const orgId = api.org_id ?? '';
    const skews = skewsOf(api);

    // A policy that does not exist, or of another organisation (it could grant that
    // organisation's APIs), never applies.
    const unusable = (p: GatewayPolicy | undefined): boolean =>
      p === undefined || (orgId !== '' && (p.org_id ?? '') !== '' && p.org_id !== orgId);
    /** Whether a policy is unusable, from the cache alone; undefined when it can't say. */
    const policyProblemCached = (ids: readonly string[]): boolean | undefined => {
      for (const id of ids) {
        const cached = deps.sessions.policyCached(id);
        if (cached === undefined) return undefined;
        if (unusable(cached ?? undefined)) return true;
      }
      return false;
    };
    const policyProblem = async (ids: readonly string[]): Promise<boolean> => {
      for (const id of ids) if (unusable(await deps.sessions.policy(id))) return true;
      return false;
    };

    return around(async (ctx, next) => {
      const found = readCredential(ctx, where);
      const token = found?.value.replace(BEARER, '').trim() ?? '';
      if (found === undefined || token === '') return reject(ctx, GatewayError.jwtMissing());
      const tokenHash = hash('sha256', token, 'base64');
      let seen = verified.get(tokenHash, deps.now());
      if (seen === undefined) {
        const claims = await verifiedClaims(token, key, algorithms);
        if (claims === undefined) {
          ctx.emit('AuthFailure', 'Attempted access with an invalid JWT.');
          return reject(ctx, GatewayError.jwtInvalid());
        }
        const identity = identityOf(claims, api.jwt_identity_base_field);
        seen = {
          claims,
          identity,
          sessionId: identity === undefined ? undefined : jwtSessionId(orgId, identity),
          policyIds: policiesOf(claims, api),
        };
        verified.set(tokenHash, seen, deps.now(), rememberMs);
      }
      const { claims, identity, sessionId, policyIds: ids } = seen;
      const late = timeRefusal(claims, Math.floor(deps.now() / 1000), skews);
      if (late !== undefined) return reject(ctx, late);
      if (identity === undefined || sessionId === undefined) {
        ctx.emit('AuthFailure', 'Attempted access with a JWT without identity.');
        return reject(ctx, GatewayError.jwtNoIdentity());
      }
      if (ids.length === 0 || (policyProblemCached(ids) ?? (await policyProblem(ids)))) {
        ctx.emit('AuthFailure', 'Attempted access with a JWT without a matching policy.');
        return reject(ctx, GatewayError.jwtNoPolicy());
      }
      const session =
        deps.sessions.derivedCached(sessionId, ids) ??
        (await deps.sessions.derived(sessionId, {
          ...(orgId === '' ? {} : { org_id: orgId }),
          alias: identity,
          apply_policies: ids,
        }));
      if (!session.applied.ok) {
        return reject(
          ctx,
          session.applied.reason === 'inactive' ? GatewayError.keyInactive() : GatewayError.jwtNoPolicy(),
        );
      }
      adoptIdentity(ctx, api, 'jwt_claim', session.id, session.applied.session);
      (ctx.state.credentials ??= []).push(found.source);
      await next();
      return undefined;
    });
  },
};
