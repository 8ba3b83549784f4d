/**
 * Signature validation of auth tokens (`validate_signature` and `signature` of the config tokens
 * are read with: `auth_configs.authToken`, else `auth`; GATEWAY-BEHAVIOUR §2, §3). It runs right
 * after auth-token found the key: the client sends, in the `signature.header` header (or the
 * query parameter `param_name`, which wins when both are there), the hex digest, SHA-256
 * (`VendorSHA256`) or MD5 (`VendorMD5`), of the token, the secret and the current Unix time in
 * seconds written in decimal, concatenated in that order. A digest of any second within
 * `allowed_clock_skew` seconds of the gateway clock passes. A refusal is `error_code` (default
 * 401) with `error_message` (default `Request signature verification failed`).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { SIGNATURE_HASHES, tokenAuthConfigOf } from '../../../schemas/rules/auth.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { methodLocations, readToken, usesAuthToken } from '../../pipeline/credentials.ts';
import { GatewayError } from '../../pipeline/errors.ts';

/** The hex digest a client sends for `token` at Unix second `atS`. */
export function tokenSignature(
  algorithm: keyof typeof SIGNATURE_HASHES,
  token: string,
  secret: string,
  atS: number,
): string {
  return createHash(SIGNATURE_HASHES[algorithm])
    .update(`${token}${secret}${String(atS)}`)
    .digest('hex');
}

const HEX = /^[0-9a-fA-F]+$/;

/** See the module comment. */
export const tokenSignatureCheck: GatewayMiddleware = {
  name: 'token-signature',
  enabled: (api: GatewayApiDefinition) =>
    usesAuthToken(api) && tokenAuthConfigOf(api)?.validate_signature === true,
  create: (api, deps) => {
    const config = tokenAuthConfigOf(api);
    const sig = config?.signature ?? {};
    const algorithm = sig.algorithm ?? 'VendorSHA256';
    const secret = sig.secret ?? '';
    const skew = Math.max(0, sig.allowed_clock_skew ?? 0);
    const header = (sig.header ?? '').toLowerCase();
    // As the reference gateway reads it: a parameter named param_name, else like the header.
    const paramName = (sig.param_name ?? '') === '' ? sig.header : sig.param_name;
    const param = sig.use_param === true || (sig.param_name ?? '') !== '' ? paramName : undefined;
    const refusal = GatewayError.signatureInvalid(
      sig.error_code !== undefined && sig.error_code > 0 ? sig.error_code : undefined,
      sig.error_message !== undefined && sig.error_message !== '' ? sig.error_message : undefined,
    );
    const where = methodLocations(api, 'auth_token');

    return around(async (ctx, next) => {
      const token = readToken(ctx, where)?.value;
      let given: string | undefined;
      if (header !== '') {
        const h = ctx.headers[header];
        given = Array.isArray(h) ? h[0] : h;
      }
      if (param !== undefined && param !== '' && ctx.query !== '') {
        const v = new URLSearchParams(ctx.query).get(param);
        if (v !== null && v !== '') given = v;
      }
      given = given?.trim();
      if (token === undefined || given === undefined || given === '' || !HEX.test(given)) {
        return reject(ctx, refusal);
      }
      const sent = Buffer.from(given.toLowerCase(), 'hex');
      const nowS = Math.floor(deps.now() / 1000);
      let ok = false;
      // Every second of the window is computed and compared, so the time taken says nothing.
      for (let at = nowS - skew; at <= nowS + skew; at++) {
        const expected = Buffer.from(tokenSignature(algorithm, token, secret, at), 'hex');
        if (expected.length === sent.length && timingSafeEqual(expected, sent)) ok = true;
      }
      if (!ok) {
        ctx.emit('AuthFailure', 'Request signature verification failed.');
        return reject(ctx, refusal);
      }
      await next();
      return undefined;
    });
  },
};
