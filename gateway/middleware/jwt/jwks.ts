/**
 * JSON Web Key Sets fetched for JWT authentication (GATEWAY-BEHAVIOUR §3). One cache per URL and
 * per gateway, shared by every API naming the URL and kept across reloads: a set is used for
 * `jwks_cache_ttl_s` (default 240 s) and fetched again on the first request after that; a token
 * whose `kid` the set lacks makes it fetch at once, so a rotated key works with the next token.
 * Fetches of one URL are at most one every 10 s, whatever asks for them, so clients sending
 * made-up `kid`s can't hammer the key server; a failed fetch keeps the set it had.
 */
import {
  createLocalJWKSet,
  errors,
  type CryptoKey,
  type JSONWebKeySet,
  type JWSHeaderParameters,
} from 'jose';
import { request } from 'undici';
import { errorMessage } from '../../../lib/errors.ts';
import { redactUrl, type Logger } from '../../../lib/log.ts';
import { keptFor } from '../../pipeline/keep.ts';

/** The least time between two fetches of one URL. */
export const REFETCH_MIN_MS = 10_000;
const FETCH_TIMEOUT_MS = 5_000;
const MAX_JWKS_BYTES = 1024 * 1024;

type KeyOf = (header: JWSHeaderParameters) => Promise<CryptoKey>;

/** What a JWKS cache needs: the gateway clock and a logger. */
export interface JwksDeps {
  now: () => number;
  log: Logger;
}

/** The key set of one URL. */
export class Jwks {
  readonly #url: string;
  readonly #deps: JwksDeps;
  #keyOf: KeyOf | undefined;
  #fetchedAt = -Infinity;
  #triedAt = -Infinity;
  #inflight: Promise<void> | undefined;
  /** How many times the URL was fetched (for tests). */
  fetches = 0;

  constructor(url: string, deps: JwksDeps) {
    this.#url = url;
    this.#deps = deps;
  }

  /**
   * The key that verifies a token with `header`: from the set while it is younger than `maxAgeMs`,
   * fetched again when it is older or lacks the token's key (see the module comment). Throws
   * jose's errors (`JWKSNoMatchingKey`, `JWKSMultipleMatchingKeys`) when no single key fits.
   */
  async key(header: JWSHeaderParameters, maxAgeMs: number): Promise<CryptoKey> {
    if (this.#keyOf === undefined || this.#deps.now() - this.#fetchedAt >= maxAgeMs) await this.#refresh();
    const keyOf = this.#keyOf;
    if (keyOf === undefined) throw new errors.JWKSNoMatchingKey('the JWKS could not be fetched');
    try {
      return await keyOf(header);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
      await this.#refresh();
      if (this.#keyOf === keyOf) throw err;
      return (this.#keyOf ?? keyOf)(header);
    }
  }

  /** Fetches the set unless a fetch ran less than REFETCH_MIN_MS ago; concurrent calls share one. */
  #refresh(): Promise<void> {
    if (this.#inflight !== undefined) return this.#inflight;
    const now = this.#deps.now();
    if (now - this.#triedAt < REFETCH_MIN_MS) return Promise.resolve();
    this.#triedAt = now;
    this.#inflight = this.#fetch().finally(() => {
      this.#inflight = undefined;
    });
    return this.#inflight;
  }

  async #fetch(): Promise<void> {
    this.fetches++;
    try {
      const res = await request(this.#url, {
        method: 'GET',
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > MAX_JWKS_BYTES) {
          res.body.destroy();
          throw new Error(`the JWKS is larger than ${MAX_JWKS_BYTES} bytes`);
        }
        chunks.push(chunk);
      }
      if (res.statusCode !== 200) throw new Error(`the JWKS URL answered ${res.statusCode}`);
      const set = JSON.parse(Buffer.concat(chunks).toString('utf8')) as JSONWebKeySet;
      this.#keyOf = createLocalJWKSet(set);
      this.#fetchedAt = this.#deps.now();
    } catch (err) {
      // Every query value redacted: any of them may be an access key.
      this.#deps.log.error('jwks fetch failed', {
        url: redactUrl(this.#url, { allParams: true }),
        error: errorMessage(err),
      });
    }
  }
}

const perGateway = new WeakMap<object, Map<string, Jwks>>();

/**
 * The cache of `url` for the gateway `owner` stands for (any object that lives as long as the
 * gateway and no longer: its session cache), created on first use.
 */
export function jwksFor(owner: object, url: string, deps: JwksDeps): Jwks {
  const byUrl = keptFor(perGateway, owner, () => new Map<string, Jwks>());
  return keptFor(byUrl, url, () => new Jwks(url, deps));
}
