/**
 * Secrets at rest that the gateway must read back: a key's `hmac_string` (HMAC request signing
 * needs the shared secret itself, so it can't be hashed like a password). It is stored as
 * `enc:v1:<base64 of iv, ciphertext, tag>`, AES-256-GCM under a key derived (HKDF-SHA256) from
 * the gateway secret (the project's one sealer, lib/seal.ts, in the gateway's format), and never
 * returned by the management API. Every gateway sharing a store shares its secret already (the
 * management API needs it); changing the secret makes the stored HMAC secrets unreadable until the
 * keys are written again.
 */
import { sealer } from '../../lib/seal.ts';

const stored = sealer({ prefix: 'enc:v1:', salt: 'svc-gateway', info: 'stored secrets v1' });

/** Whether `value` is a sealed secret (what `sealSecret` returns). */
export function isSealed(value: string): boolean {
  return stored.isSealed(value);
}

/** `plain` encrypted under the gateway secret, for storage. */
export function sealSecret(plain: string, gatewaySecret: string): string {
  return stored.seal(plain, gatewaySecret);
}

/** The plain secret of a sealed one, or undefined when it is not sealed under this gateway secret. */
export function openSecret(sealed: string, gatewaySecret: string): string | undefined {
  return stored.open(sealed, gatewaySecret);
}
