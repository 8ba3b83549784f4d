/**
 * The portal's limit on sign-in and sign-up attempts (docs/portal.md), per dashboard process:
 * failed sign-ins and sign-ups of one e-mail from one client address, failed sign-ins of one
 * e-mail from all addresses, and failed sign-ins and sign-ups from one address, each counted in a fixed window that starts at
 * its first attempt. A caller over a limit is refused (429, Retry-After) until that window ends;
 * refused attempts are not counted, so a lock never outlasts its window, and an attacker at one
 * address locks an e-mail for its own address only: the developer signs in from another.
 */

/** The limits: attempts per window. */
export const SIGN_IN_LIMITS = {
  /** Length of a window, from its first counted attempt. */
  window_ms: 15 * 60_000,
  /** Failed sign-ins and sign-ups of one e-mail from one client address. */
  email_and_address: 5,
  /** Failed sign-ins of one e-mail from all addresses (bounds a spread-out guessing). */
  email: 100,
  /** Failed sign-ins and all sign-ups from one client address (an IPv6 /64 counts as one). */
  address: 30,
} as const;

// Beyond this many buckets the expired ones are dropped, then the oldest.
const MAX_BUCKETS = 100_000;

interface Bucket {
  start: number;
  count: number;
}

/** Counts attempts per key in fixed windows. */
export class AttemptCounter {
  readonly #buckets = new Map<string, Bucket>();
  readonly #now: () => number;
  readonly #windowMs: number;

  constructor(now: () => number, windowMs: number) {
    this.#now = now;
    this.#windowMs = windowMs;
  }

  /** Milliseconds until `key` may try again with `limit` attempts per window; 0 when it may now. */
  wait(key: string, limit: number): number {
    const b = this.#buckets.get(key);
    if (b === undefined) return 0;
    const left = b.start + this.#windowMs - this.#now();
    if (left <= 0) {
      this.#buckets.delete(key);
      return 0;
    }
    return b.count >= limit ? left : 0;
  }

  /** Counts one attempt of `key`. */
  hit(key: string): void {
    const now = this.#now();
    const b = this.#buckets.get(key);
    if (b !== undefined && now - b.start < this.#windowMs) {
      b.count++;
      return;
    }
    this.#buckets.delete(key);
    this.#buckets.set(key, { start: now, count: 1 });
    if (this.#buckets.size > MAX_BUCKETS) this.#prune(now);
  }

  /** Forgets `key` (a successful sign-in clears its e-mail's count at its address). */
  clear(key: string): void {
    this.#buckets.delete(key);
  }

  #prune(now: number): void {
    for (const [k, b] of this.#buckets) {
      if (now - b.start >= this.#windowMs) this.#buckets.delete(k);
    }
    // Still full: the oldest windows go first (insertion order is start order).
    for (const k of this.#buckets.keys()) {
      if (this.#buckets.size <= MAX_BUCKETS) break;
      this.#buckets.delete(k);
    }
  }
}

/** The client address a limit counts: IPv4 as is (also when IPv4-mapped), IPv6 by its /64. */
export function addressKey(address: string | undefined): string {
  if (address === undefined || address === '') return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1] ?? address;
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = address.includes('::') && tail !== '' ? tail.split(':') : [];
  const groups = address.includes('::')
    ? [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** The limits of one portal process: what sign-in and sign-up ask before and tell after. */
export class SignInLimits {
  readonly #counter: AttemptCounter;

  constructor(now: () => number) {
    this.#counter = new AttemptCounter(now, SIGN_IN_LIMITS.window_ms);
  }

  /** Milliseconds a sign-in of `email` (its lookup) from `address` must wait; 0 when it may try. */
  signInWait(email: string, address: string): number {
    return Math.max(
      this.#counter.wait(`a\n${address}`, SIGN_IN_LIMITS.address),
      this.#counter.wait(`e\n${email}`, SIGN_IN_LIMITS.email),
      this.#counter.wait(`ea\n${email}\n${address}`, SIGN_IN_LIMITS.email_and_address),
    );
  }

  /** A failed sign-in. */
  failed(email: string, address: string): void {
    this.#counter.hit(`a\n${address}`);
    this.#counter.hit(`e\n${email}`);
    this.#counter.hit(`ea\n${email}\n${address}`);
  }

  /** A successful sign-in: the e-mail's failures at this address are forgotten. */
  succeeded(email: string, address: string): void {
    this.#counter.clear(`ea\n${email}\n${address}`);
  }

  /** Milliseconds a sign-up of `email` (its lookup) from `address` must wait; 0 when it may try. */
  signUpWait(email: string, address: string): number {
    return Math.max(
      this.#counter.wait(`a\n${address}`, SIGN_IN_LIMITS.address),
      this.#counter.wait(`ea\n${email}\n${address}`, SIGN_IN_LIMITS.email_and_address),
    );
  }

  /** A sign-up attempt, made or not (each counts: sign-ups reveal which e-mails are in use). */
  signedUp(email: string, address: string): void {
    this.#counter.hit(`a\n${address}`);
    this.#counter.hit(`ea\n${email}\n${address}`);
  }
}
