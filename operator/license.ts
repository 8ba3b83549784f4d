/**
 * The operator's license key (mode pro): a JWT. Its form and expiry are always checked; its
 * signature too when a license public key is configured (SVC_OPERATOR_LICENSE_PUBLIC_KEY, PEM
 * SPKI). A key that passes is remembered with its expiry, so later checks are synchronous.
 */
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify, type JWTPayload } from 'jose';
import { errorMessage } from '../lib/errors.ts';

/** A checked license: when it ends (ms since the epoch; undefined: never). */
export type License = { ok: true; expiresAt?: number; subject?: string } | { ok: false; problem: string };

/** How licenses are checked. */
export interface LicenseOptions {
  /** PEM (SPKI) public key the license must be signed with; unset: the signature is not checked. */
  publicKey?: string;
  now?: () => number;
}

/** Checks a license key (form, expiry, signature when a public key is given). */
export async function checkLicense(token: string | undefined, opts: LicenseOptions = {}): Promise<License> {
  const now = opts.now ?? Date.now;
  if (token === undefined || token === '') {
    return { ok: false, problem: 'mode pro needs a license key (SVC_OPERATOR_LICENSEKEY, JWT form)' };
  }
  let payload: JWTPayload;
  let alg: string | undefined;
  try {
    payload = decodeJwt(token);
    alg = decodeProtectedHeader(token).alg;
  } catch (err) {
    return { ok: false, problem: `license key is not a JWT: ${errorMessage(err)}` };
  }
  if (opts.publicKey !== undefined && opts.publicKey !== '') {
    if (alg === undefined || alg === 'none') {
      return { ok: false, problem: 'license key is not signed (alg none) but a license public key is set' };
    }
    try {
      const key = await importSPKI(opts.publicKey, alg);
      // Expiry is checked below against the injected clock, not jose's.
      await jwtVerify(token, key, { currentDate: new Date(now()) });
    } catch (err) {
      return { ok: false, problem: `license key signature or claims do not verify: ${errorMessage(err)}` };
    }
  }
  const expiresAt = typeof payload.exp === 'number' ? payload.exp * 1000 : undefined;
  if (expiresAt !== undefined && expiresAt <= now()) {
    return { ok: false, problem: `license key expired on ${new Date(expiresAt).toISOString()}` };
  }
  return { ok: true, expiresAt, ...(payload.sub === undefined ? {} : { subject: payload.sub }) };
}

/** Checks each distinct key once, then only its expiry. */
export class LicenseChecker {
  readonly #opts: LicenseOptions;
  readonly #now: () => number;
  readonly #seen = new Map<string, License>();

  constructor(opts: LicenseOptions = {}) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** Undefined when the key is valid now, else why not. */
  async problem(token: string | undefined): Promise<string | undefined> {
    let l = token === undefined ? undefined : this.#seen.get(token);
    if (l === undefined) {
      l = await checkLicense(token, this.#opts);
      if (token !== undefined && this.#seen.size < 100) this.#seen.set(token, l);
    }
    if (!l.ok) return l.problem;
    if (l.expiresAt !== undefined && l.expiresAt <= this.#now()) {
      return `license key expired on ${new Date(l.expiresAt).toISOString()}`;
    }
    return undefined;
  }
}
