/**
 * A bounded least-recently-used map of string keys (checks.ts keeps the parsed and validated
 * documents of each schema in one): at most `maxEntries` entries and `maxChars` characters of
 * keys; a key longer than `maxKeyChars` is never stored. A lookup moves its entry last (a Map
 * keeps insertion order); a store past a bound drops the least recently used entries first.
 */
export class BoundedLru<V> {
  readonly #entries = new Map<string, V>();
  #chars = 0;
  readonly maxEntries: number;
  readonly maxChars: number;
  readonly maxKeyChars: number;

  constructor(maxEntries: number, maxChars: number, maxKeyChars: number) {
    this.maxEntries = maxEntries;
    this.maxChars = maxChars;
    this.maxKeyChars = maxKeyChars;
  }

  /** How many entries, and how many characters of keys, it holds. */
  get size(): number {
    return this.#entries.size;
  }

  get chars(): number {
    return this.#chars;
  }

  get(key: string): V | undefined {
    const v = this.#entries.get(key);
    if (v === undefined) return undefined;
    // Last: the most recently used.
    this.#entries.delete(key);
    this.#entries.set(key, v);
    return v;
  }

  /** Stores `value` under `key` unless the key is too long to keep; false when not stored. */
  set(key: string, value: V): boolean {
    if (key.length > this.maxKeyChars || key.length > this.maxChars || this.maxEntries < 1) return false;
    if (this.#entries.delete(key)) this.#chars -= key.length;
    this.#entries.set(key, value);
    this.#chars += key.length;
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.maxEntries && this.#chars <= this.maxChars) break;
      this.#entries.delete(oldest);
      this.#chars -= oldest.length;
    }
    return true;
  }

  clear(): void {
    this.#entries.clear();
    this.#chars = 0;
  }
}
