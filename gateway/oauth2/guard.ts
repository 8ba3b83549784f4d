/**
 * What an OAuth client authentication may cost the gateway. Each one verifies an scrypt hash
 * (tens of ms of CPU on a libuv thread), and the token and revocation endpoints are open to
 * anyone, so without bounds a caller could load the gateway with requests. Per gateway process
 * and store:
 *
 * - **Failures**: at most FAILURES_PER_CLIENT failed authentications per (client IP, client ID)
 *   and FAILURES_PER_IP per client IP within FAILURE_WINDOW_MS (a sliding window); beyond, the
 *   request is answered 429 with `Retry-After` (seconds until the oldest failure leaves the
 *   window) before any hash is verified. Unknown and known client IDs count alike, so the limiter
 *   tells nothing about which IDs exist.
 * - **Concurrency**: at most MAX_CONCURRENT_VERIFICATIONS verifications run at once and
 *   MAX_QUEUED_VERIFICATIONS wait; a request beyond is answered 503 with `Retry-After: 1`.
 * - **Successes are cached**: a verified (API, client ID, secret) is remembered for
 *   SUCCESS_TTL_MS under an HMAC-SHA256 of the three (a key random per process, so the cache holds
 *   no secret and no unkeyed hash of one) with the secret hash it verified against; a repeated
 *   request of that client is accepted without scrypt while the stored client still has that
 *   hash (a deleted client, or a new secret, is verified again). Only a correct secret can hit the
 *   cache, so unknown and known client IDs with a wrong secret still cost the same scrypt.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Store } from '../store/store.ts';

export const FAILURE_WINDOW_MS = 60_000;
export const FAILURES_PER_CLIENT = 10;
export const FAILURES_PER_IP = 100;
export const MAX_CONCURRENT_VERIFICATIONS = 4;
export const MAX_QUEUED_VERIFICATIONS = 16;
export const SUCCESS_TTL_MS = 60_000;
/** The most successes remembered; the oldest is forgotten first. */
const MAX_CACHED = 10_000;
/** The most addresses and pairs whose failures are tracked; the oldest is forgotten first. */
const MAX_TRACKED = 100_000;

/** A verification could not start: too many running and waiting. */
export const BUSY = Symbol('busy');

/** Failure times (ms) per key, in a sliding window. */
class FailureLog {
  readonly #times = new Map<string, number[]>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  /** Milliseconds until another attempt is allowed for `key`, or 0. */
  wait(key: string, now: number): number {
    const times = this.#live(key, now);
    if (times.length < this.#max) return 0;
    return Math.max(1, (times[0] ?? now) + FAILURE_WINDOW_MS - now);
  }

  add(key: string, now: number): void {
    const times = this.#live(key, now);
    times.push(now);
    this.#times.delete(key);
    this.#times.set(key, times);
    if (this.#times.size > MAX_TRACKED) {
      const oldest = this.#times.keys().next().value;
      if (oldest !== undefined) this.#times.delete(oldest);
    }
  }

  #live(key: string, now: number): number[] {
    const times = (this.#times.get(key) ?? []).filter((t) => t > now - FAILURE_WINDOW_MS);
    if (times.length === 0) this.#times.delete(key);
    return times;
  }
}

/** The bounds of one gateway process and store (see the module comment). */
export class OAuthGuard {
  readonly #byClient = new FailureLog(FAILURES_PER_CLIENT);
  readonly #byIp = new FailureLog(FAILURES_PER_IP);
  readonly #macKey = randomBytes(32);
  readonly #cache = new Map<string, { hash: string; until: number }>();
  #active = 0;
  readonly #queue: (() => void)[] = [];

  /** Seconds the caller at `ip` must wait before authenticating `clientId` again, or 0. */
  retryAfter(ip: string, clientId: string, now: number): number {
    const ms = Math.max(this.#byClient.wait(pair(ip, clientId), now), this.#byIp.wait(ip, now));
    return ms === 0 ? 0 : Math.ceil(ms / 1000);
  }

  /** A failed authentication of `clientId` from `ip`. */
  failed(ip: string, clientId: string, now: number): void {
    this.#byClient.add(pair(ip, clientId), now);
    this.#byIp.add(ip, now);
  }

  /** The cache key of a secret of a client of an API. */
  macOf(apiId: string, clientId: string, secret: string): string {
    return createHmac('sha256', this.#macKey)
      .update(`${String(apiId.length)}:${apiId}${String(clientId.length)}:${clientId}`)
      .update(secret, 'utf8')
      .digest('base64');
  }

  /** Whether `mac` was verified against `hash` less than SUCCESS_TTL_MS ago. */
  cached(mac: string, hash: string, now: number): boolean {
    const hit = this.#cache.get(mac);
    if (hit === undefined) return false;
    if (hit.until <= now || hit.hash !== hash) {
      this.#cache.delete(mac);
      return false;
    }
    return true;
  }

  remember(mac: string, hash: string, now: number): void {
    this.#cache.delete(mac);
    this.#cache.set(mac, { hash, until: now + SUCCESS_TTL_MS });
    if (this.#cache.size > MAX_CACHED) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
  }

  /** Runs a verification within the concurrency bound, or answers BUSY. */
  async verify(f: () => Promise<boolean>): Promise<boolean | typeof BUSY> {
    if (this.#active >= MAX_CONCURRENT_VERIFICATIONS) {
      if (this.#queue.length >= MAX_QUEUED_VERIFICATIONS) return BUSY;
      // The slot is handed over by the verification that ends (#active unchanged).
      await new Promise<void>((resolve) => this.#queue.push(resolve));
    } else {
      this.#active++;
    }
    try {
      return await f();
    } finally {
      const next = this.#queue.shift();
      if (next !== undefined) next();
      else this.#active--;
    }
  }
}

const pair = (ip: string, clientId: string): string => `${String(ip.length)}:${ip}${clientId}`;

const guards = new WeakMap<Store, OAuthGuard>();

/** The guard of this process for `store`. */
export function guardOf(store: Store): OAuthGuard {
  let g = guards.get(store);
  if (g === undefined) {
    g = new OAuthGuard();
    guards.set(store, g);
  }
  return g;
}
