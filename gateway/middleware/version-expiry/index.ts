/**
 * The request's version's `expires` (`2006-01-02 15:04`, UTC): from that minute on, every request
 * gets 403 `Api Version has expired, please check documentation or contact administrator`, as
 * in the reference gateway; before it, responses carry `X-Svc-API-Expires` with the time (RFC
 * 1123), as the reference's `X-Tyk-API-Expires`. Checked before anything else of the version.
 */
import type { GatewayApiDefinition, VersionInfo } from '../../../schemas/generated/models.ts';
import { versionExpiry } from '../../../schemas/rules/endpoints.ts';
import { reject } from '../../pipeline/compose.ts';
import { before } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { perVersion, servedVersion } from '../../pipeline/endpoints.ts';
import { GatewayError } from '../../pipeline/errors.ts';

/** When the served version of `api` expires (ms since the epoch), or undefined for never. */
export function expiryOf(api: GatewayApiDefinition): number | undefined {
  return versionExpiryOf(servedVersion(api));
}

/** When a version expires (ms since the epoch), or undefined for never. */
export function versionExpiryOf(v: VersionInfo | undefined): number | undefined {
  const expires = v?.expires?.trim();
  if (expires === undefined || expires === '') return undefined;
  const t = versionExpiry(expires);
  // The write-time rule (schemas/rules/endpoints.ts) refuses such a value: never served without it.
  if (t === undefined) throw new Error(`version expires: ${JSON.stringify(expires)} is not a time`);
  return t;
}

/** See the module comment. */
export const versionExpiryCheck: GatewayMiddleware = {
  name: 'version-expiry',
  enabled: (api) => perVersion(api, versionExpiryOf) !== undefined,
  create: (api, deps) => {
    const expiryFor = perVersion(api, (v) => {
      const t = versionExpiryOf(v);
      return t === undefined ? undefined : { t, header: new Date(t).toUTCString() };
    });
    if (expiryFor === undefined) throw new Error('version-expiry: compiled for an API without expiry');
    return before((ctx) => {
      const expiry = expiryFor(ctx);
      if (expiry !== undefined) {
        if (deps.now() >= expiry.t) return reject(ctx, GatewayError.versionExpired());
        ctx.responseHeaders['x-svc-api-expires'] = expiry.header;
      }
      return undefined;
    });
  },
};
