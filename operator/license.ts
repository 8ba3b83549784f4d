/**
 * The operator's license key (mode pro): a signed JWT. Unsigned keys (`alg: none`) are refused
 * always. A signed key is verified with the license public key (SVC_OPERATOR_LICENSE_PUBLIC_KEY,
 * PEM SPKI; the chart's `operator.licensePublicKey`); without one it cannot be verified, and it
 * counts as no license (fail closed: mode pro does not run on a key nobody checked). Expiry is
 * checked at start and at every later check. A key that passes is remembered with its expiry, so
 * later checks are synchronous.
 */
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify, type JWTPayload } from 'jose';
import { errorMessage } from '../lib/errors.ts';
import { licenseKeyProblem } from '../schemas/rules/license.ts';

/** A checked license: when it ends (ms since the epoch; undefined: never). */
export type License = { ok: true; expiresAt?: number; subject?: string } | { ok: false; problem: string };

/** How licenses are checked. */
export interface LicenseOptions {
  /** PEM (SPKI) public key the license must be signed with; unset: no license can be verified. */
  publicKey?: string;
  now?: () => number;
}

/** Checks a license key: form, signature (always required), expiry. */
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
  // The rule the admission webhook applies too: a signing algorithm is named (not none).
  const unsigned = licenseKeyProblem(token);
  if (unsigned !== undefined || alg === undefined) {
    return { ok: false, problem: unsigned ?? 'license key is not signed' };
  }
  if (opts.publicKey === undefined || opts.publicKey.trim() === '') {
    return {
      ok: false,
      problem:
        "license key cannot be verified: no license public key is configured (set SVC_OPERATOR_LICENSE_PUBLIC_KEY, the chart's operator.licensePublicKey); an unverified key counts as no license",
    };
  }
  // Expiry first, for a plain message (either way the key is refused).
  const expiresAt = typeof payload.exp === 'number' ? payload.exp * 1000 : undefined;
  if (expiresAt !== undefined && expiresAt <= now()) {
    return { ok: false, problem: `license key expired on ${new Date(expiresAt).toISOString()}` };
  }
  try {
    const key = await importSPKI(opts.publicKey, alg);
    await jwtVerify(token, key, { currentDate: new Date(now()) });
  } catch (err) {
    return { ok: false, problem: `license key signature or claims do not verify: ${errorMessage(err)}` };
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
