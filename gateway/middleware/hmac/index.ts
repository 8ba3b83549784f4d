/**
 * HMAC request signing (`enable_signature_checking`). The client signs the request with the
 * shared secret of its key (`hmac_string`, on a key with `hmac_enabled` or a policy that sets
 * it) and sends `Authorization: Signature keyId="<key>",algorithm="hmac-sha256",headers="(request-target)
 * date",signature="<base64>"` (or the same in a `Signature` header, or where
 * `auth_configs.hmac` says). The signature is the HMAC (sha1, sha256, sha384 or sha512; limited
 * by `hmac_allowed_algorithms`) of one `name: value` line per signed header (`date` by default),
 * `(request-target): <method> <path and query>` standing for the request line; the path alone is
 * accepted too, as the reference gateway signs it. The signed `Date` (or `X-Aux-Date`) must be
 * within `hmac_allowed_clock_skew` milliseconds of the gateway clock (0: any date). Every
 * refusal is 400 `Authorization field missing, malformed or invalid`, as in the reference.
 */
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { authMethodsOf } from '../../../schemas/rules/auth.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import {
  methodLocations,
  readCredential,
  type CredentialLocations,
  type Found,
} from '../../pipeline/credentials.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { adoptIdentity } from '../../sessions/identity.ts';
import { refusalOf } from '../../sessions/refusal.ts';
import { openSecret } from '../../sessions/secrets.ts';
import {
  hmacOf,
  parseSignature,
  sameSignature,
  signedDate,
  signingString,
  type SignatureParams,
} from './signature.ts';

const SIGNATURE = /^\s*signature\s/i;

/** The signature of a request and where it came from: the configured location, else `Signature`. */
function readSignature(
  ctx: RequestContext,
  where: CredentialLocations,
): { params: SignatureParams; source: Found['source'] } | undefined {
  let found = readCredential(ctx, where);
  if (found === undefined || !SIGNATURE.test(found.value)) {
    const h = ctx.headers.signature;
    const v = Array.isArray(h) ? h[0] : h;
    found =
      v === undefined || v.trim() === ''
        ? undefined
        : { value: v, source: { kind: 'header', name: 'signature' } };
  }
  if (found === undefined) return undefined;
  const params = parseSignature(found.value);
  return params === undefined ? undefined : { params, source: found.source };
}

/** See the module comment. */
export const hmacSigning: GatewayMiddleware = {
  name: 'hmac',
  enabled: (api: GatewayApiDefinition) => authMethodsOf(api).includes('hmac_key'),
  create: (api, deps) => {
    const where = methodLocations(api, 'hmac_key');
    const allowed = new Set<string>(api.hmac_allowed_algorithms ?? []);
    const skewMs = api.hmac_allowed_clock_skew ?? 0;
    const orgId = api.org_id ?? '';
    const invalid = (ctx: RequestContext, why: string): ReturnType<typeof reject> => {
      ctx.emit('AuthFailure', why);
      return reject(ctx, GatewayError.hmacInvalid());
    };

    return around(async (ctx, next) => {
      const read = readSignature(ctx, where);
      if (read === undefined) return invalid(ctx, 'Attempted access without a valid request signature.');
      const { params } = read;
      if (allowed.size > 0 && !allowed.has(params.algorithm)) {
        return invalid(ctx, 'Attempted access with a signature algorithm the API does not allow.');
      }
      const date = Date.parse(signedDate(ctx.headers).value);
      if (Number.isNaN(date) || (skewMs > 0 && Math.abs(deps.now() - date) > skewMs)) {
        return invalid(ctx, 'Attempted access with a missing or stale signed date.');
      }
      const key = await deps.sessions.byKey(params.keyId);
      const sealed = key?.stored.hmac_string;
      if (key === undefined || sealed === undefined)
        return invalid(ctx, 'Attempted access with non-existent key.');
      const refused = refusalOf(key, orgId);
      if (refused !== undefined) return reject(ctx, refused);
      if (!key.applied.ok || key.applied.session.hmac_enabled !== true) {
        return invalid(ctx, 'Attempted access with a key that may not sign requests.');
      }
      const secret = openSecret(sealed, deps.config.secret);
      if (secret === undefined) {
        ctx.log.error('hmac secret unreadable: was the gateway secret changed? write the key again', {
          key_hash: key.id,
        });
        return invalid(ctx, 'Attempted access with a key whose secret is unreadable.');
      }
      const withQuery = ctx.path + ctx.query;
      const targets = ctx.query === '' ? [withQuery] : [withQuery, ctx.path];
      const ok = targets.some((target) =>
        sameSignature(
          hmacOf(
            params.algorithm,
            secret,
            signingString(params.headers, { method: ctx.method, target, headers: ctx.headers }),
          ),
          params.signature,
        ),
      );
      if (!ok) return invalid(ctx, 'Attempted access with a wrong request signature.');
      adoptIdentity(ctx, api, 'hmac_key', key.id, key.applied.session);
      (ctx.state.credentials ??= []).push(read.source);
      await next();
      return undefined;
    });
  },
};
