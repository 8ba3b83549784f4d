/**
 * Secrets sealed under a secret of the process: AES-256-GCM under a key derived (HKDF-SHA256) from
 * that secret, stored as `<prefix><base64 of iv, ciphertext, tag>`. The one sealer of the project:
 * - the dashboard keeps certificates' private keys this way at rest (under its admin secret) and
 *   hands them to gateways this way (under the node secret they share), `sealed:v1:`, one key per
 *   purpose (`seal`/`unseal`), so a key never crosses the wire, a log or a database dump in clear;
 * - the gateway keeps the secrets it must read back (a key's `hmac_string`, a certificate's private
 *   key) under its gateway secret, `enc:v1:` (gateway/sessions/secrets.ts).
 * A different secret, purpose or format opens nothing.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** How a kind of sealed value is written: its prefix and the HKDF salt and info of its key. */
export interface SealFormat {
  readonly prefix: string;
  readonly salt: string;
  readonly info: string;
}

export interface Sealer {
  /** Whether `value` is written in this format (what `seal` returns). */
  isSealed(value: string): boolean;
  /** `plain` encrypted under `secret`. */
  seal(plain: string, secret: string): string;
  /** The plain text of a sealed value, or undefined when it was not sealed under this secret and format. */
  open(sealed: string, secret: string): string | undefined;
}

/** The sealer of one format; derived keys are kept per secret (HKDF runs once per secret). */
export function sealer(format: SealFormat): Sealer {
  const derived = new Map<string, Buffer>();
  const keyOf = (secret: string): Buffer => {
    let key = derived.get(secret);
    if (key === undefined) {
      key = Buffer.from(hkdfSync('sha256', secret, format.salt, format.info, 32));
      derived.set(secret, key);
    }
    return key;
  };
  const isSealed = (value: string): boolean => value.startsWith(format.prefix);
  return {
    isSealed,
    seal(plain, secret) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', keyOf(secret), iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return format.prefix + Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64');
    },
    open(sealed, secret) {
      if (!isSealed(sealed)) return undefined;
      const raw = Buffer.from(sealed.slice(format.prefix.length), 'base64');
      if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
      try {
        const decipher = createDecipheriv('aes-256-gcm', keyOf(secret), raw.subarray(0, IV_BYTES));
        decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
        return Buffer.concat([
          decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)),
          decipher.final(),
        ]).toString('utf8');
      } catch {
        return undefined;
      }
    },
  };
}

const byPurpose = new Map<string, Sealer>();

function sealerFor(purpose: string): Sealer {
  let s = byPurpose.get(purpose);
  if (s === undefined) {
    s = sealer({ prefix: 'sealed:v1:', salt: 'svc-sealed', info: purpose });
    byPurpose.set(purpose, s);
  }
  return s;
}

/** `plain` encrypted under `secret` for `purpose` (a fixed label naming what the secret guards). */
export function seal(plain: string, secret: string, purpose: string): string {
  return sealerFor(purpose).seal(plain, secret);
}

/** The plain text of a sealed value, or undefined when it was not sealed under this secret and purpose. */
export function unseal(sealed: string, secret: string, purpose: string): string | undefined {
  return sealerFor(purpose).open(sealed, secret);
}

/** Purpose of a certificate's private key at rest in the dashboard. */
export const CERT_KEY_AT_REST = 'dashboard certificate keys at rest v1';
/** Purpose of a certificate's private key on its way from the dashboard to a gateway. */
export const CERT_KEY_TO_NODE = 'dashboard certificate keys to nodes v1';
