/**
 * Credentials at rest. A key is stored under the SHA-256 of its value, never the value: keys are
 * long random strings (or, for basic-auth users, user names paired with a password), so a fast
 * hash is enough to make a stolen store useless as credentials. Passwords are stored with scrypt
 * (Node's built-in, no native addon), and every comparison is constant-time.
 */
import { createHash, hash, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/** The stored ID of a key (or basic-auth user name): hex SHA-256 of its value. */
export function keyIdOf(raw: string): string {
  // crypto.hash: one call, no Hash object per request (it is on every authenticated request).
  return hash('sha256', raw, 'hex');
}

/** A new random key for an organisation: its ID, then 32 hex characters. */
export function generateKey(orgId: string | undefined): string {
  return `${orgId ?? ''}${randomBytes(16).toString('hex')}`;
}

/** scrypt cost: about 50 ms on one core, 16 MiB; a verified password is then cached. */
const SCRYPT = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, KEY_LENGTH, opts, (err, key) => {
      if (err === null) resolve(key);
      else reject(err);
    });
  });
}

/** The stored form of a password: `scrypt$N$r$p$<salt>$<hash>` (base64). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, SCRYPT);
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/** Whether `stored` looks like what hashPassword returns. */
export function isPasswordHash(stored: string): boolean {
  return /^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/.test(stored);
}

/** Checks a password against its stored form, in constant time; false for anything malformed. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  if (!isPasswordHash(stored)) return false;
  const [, n, r, p, salt, hash] = stored.split('$');
  const want = Buffer.from(hash ?? '', 'base64');
  if (want.length !== KEY_LENGTH) return false;
  const got = await derive(password, Buffer.from(salt ?? '', 'base64'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return timingSafeEqual(got, want);
}

/** Constant-time equality of two strings (their SHA-256, so lengths don't leak either). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(
    createHash('sha256').update(a, 'utf8').digest(),
    createHash('sha256').update(b, 'utf8').digest(),
  );
}
