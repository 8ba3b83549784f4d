/**
 * The form of a license key (mode pro): a JWT whose header names a signing algorithm. Unsigned
 * keys (`alg: none`, or no `alg`) are refused wherever a key is given: by the operator, at start
 * and for each connection (operator/license.ts, which then verifies the signature with the
 * license public key), and by the admission webhook for a key written in an OperatorContext. The
 * key itself is never part of a message.
 */
import { isPlainObject } from '../../lib/plain-object.ts';

/** Why `token` can't be a license key (its form, or unsigned), or undefined when it may be one. */
export function licenseKeyProblem(token: string): string | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] === '' || parts[1] === '') {
    return 'license key is not a JWT: it needs three dot-separated parts (header.payload.signature)';
  }
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(parts[0] ?? '', 'base64url').toString('utf8'));
  } catch {
    return 'license key is not a JWT: its header is not base64url-encoded JSON';
  }
  if (!isPlainObject(header)) {
    return 'license key is not a JWT: its header is not a JSON object';
  }
  const alg = header.alg;
  if (typeof alg !== 'string' || alg === '' || alg.toLowerCase() === 'none') {
    return 'license key is not signed (alg none): unsigned license keys are refused';
  }
  return undefined;
}
