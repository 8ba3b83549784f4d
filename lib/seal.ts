/**
 * Secrets sealed under a secret of the process: AES-256-GCM under a key derived (HKDF-SHA256) from
 * that secret and a purpose, stored as `sealed:v1:<base64 of iv, ciphertext, tag>`. The dashboard
 * keeps certificates' private keys this way at rest (under its admin secret) and hands them to
 * gateways this way (under the node secret they share), so a key never crosses the wire, a log or
 * a database dump in clear. A different secret or purpose opens nothing.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const PREFIX = 'sealed:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

function keyOf(secret: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'svc-sealed', purpose, 32));
}

/** `plain` encrypted under `secret` for `purpose` (a fixed label naming what the secret guards). */
export function seal(plain: string, secret: string, purpose: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyOf(secret, purpose), iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64');
}

/** The plain text of a sealed value, or undefined when it was not sealed under this secret and purpose. */
export function unseal(sealed: string, secret: string, purpose: string): string | undefined {
  if (!sealed.startsWith(PREFIX)) return undefined;
  const raw = Buffer.from(sealed.slice(PREFIX.length), 'base64');
  if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyOf(secret, purpose), raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    return Buffer.concat([
      decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)),
      decipher.final(),
    ]).toString('utf8');
  } catch {
    return undefined;
  }
}

/** Purpose of a certificate's private key at rest in the dashboard. */
export const CERT_KEY_AT_REST = 'dashboard certificate keys at rest v1';
/** Purpose of a certificate's private key on its way from the dashboard to a gateway. */
export const CERT_KEY_TO_NODE = 'dashboard certificate keys to nodes v1';
