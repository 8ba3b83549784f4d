/**
 * Secrets at rest that the gateway must read back: a key's `hmac_string` (HMAC request signing
 * needs the shared secret itself, so it can't be hashed like a password). It is stored as
 * `enc:v1:<base64 of iv, ciphertext, tag>`, AES-256-GCM under a key derived (HKDF-SHA256) from
 * the gateway secret, and never returned by the management API. Every gateway sharing a store
 * shares its secret already (the management API needs it); changing the secret makes the stored
 * HMAC secrets unreadable until the keys are written again.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const derived = new Map<string, Buffer>();

function keyOf(gatewaySecret: string): Buffer {
  let key = derived.get(gatewaySecret);
  if (key === undefined) {
    key = Buffer.from(hkdfSync('sha256', gatewaySecret, 'svc-gateway', 'stored secrets v1', 32));
    derived.set(gatewaySecret, key);
  }
  return key;
}

/** Whether `value` is a sealed secret (what `sealSecret` returns). */
export function isSealed(value: string): boolean {
  return value.startsWith(PREFIX);
}

/** `plain` encrypted under the gateway secret, for storage. */
export function sealSecret(plain: string, gatewaySecret: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyOf(gatewaySecret), iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64');
}

/** The plain secret of a sealed one, or undefined when it is not sealed under this gateway secret. */
export function openSecret(sealed: string, gatewaySecret: string): string | undefined {
  if (!isSealed(sealed)) return undefined;
  const raw = Buffer.from(sealed.slice(PREFIX.length), 'base64');
  if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyOf(gatewaySecret), raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    return Buffer.concat([
      decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)),
      decipher.final(),
    ]).toString('utf8');
  } catch {
    return undefined;
  }
}
