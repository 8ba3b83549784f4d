/**
 * What the request path keeps across requests: a value made once per key (a session's
 * allowance, a gateway's JWKS caches) and resources its holders share until the last one lets
 * go (a gateway's response cache, an upstream's connection pool).
 */

/** A map or a weak map, as `keptFor` uses it. */
interface Keeps<K, V> {
  get(key: K): V | undefined;
  set(key: K, value: V): unknown;
}

/** The value `map` keeps for `key`, made by `make` and kept at the first ask. */
export function keptFor<K, V>(map: Keeps<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

/**
 * One more holder of a shared resource (`held.users` counts them): the returned release lets go
 * once (again: nothing), and the last holder's runs `last` (which frees the resource).
 */
export function holdShared(held: { users: number }, last: () => Promise<void>): () => Promise<void> {
  held.users++;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    held.users--;
    if (held.users > 0) return;
    await last();
  };
}
