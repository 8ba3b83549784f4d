/**
 * Credentials at rest. A key is stored under the SHA-256 of its value, never the value: keys are
 * long random strings (or, for basic-auth users, user names paired with a password), so a fast
 * hash is enough to make a stolen store useless as credentials. Passwords are stored with scrypt
 * (Node's built-in, no native addon), and every comparison is constant-time.
 */
import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The stored ID of a key (or basic-auth user name): hex SHA-256 of its value. */
export function keyIdOf(raw: string): string {
  // crypto.hash: one call, no Hash object per request (it is on every authenticated request).
  return hash('sha256', raw, 'hex');
}

/** A new random key for an organisation: its ID, then 32 hex characters. */
export function generateKey(orgId: string | undefined): string {
  return `${orgId ?? ''}${randomBytes(16).toString('hex')}`;
}

export { hashPassword, isPasswordHash, verifyPassword } from '../../lib/password.ts';

/** Constant-time equality of two strings (their SHA-256, so lengths don't leak either). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(
    createHash('sha256').update(a, 'utf8').digest(),
    createHash('sha256').update(b, 'utf8').digest(),
  );
}
