/**
 * The part of the Reflect metadata API that tsyringe (a dependency of @peculiar/x509) checks for
 * when it loads and uses to resolve x509's algorithm providers, so no polyfill package is needed.
 * Import this module before `@peculiar/x509`. It only adds functions Reflect lacks.
 */
type Key = unknown;
const metadata = new WeakMap<object, Map<string | symbol | undefined, Map<Key, unknown>>>();

function own(
  target: object,
  property: string | symbol | undefined,
  create: boolean,
): Map<Key, unknown> | undefined {
  let byProperty = metadata.get(target);
  if (byProperty === undefined) {
    if (!create) return undefined;
    byProperty = new Map();
    metadata.set(target, byProperty);
  }
  let values = byProperty.get(property);
  if (values === undefined && create) {
    values = new Map();
    byProperty.set(property, values);
  }
  return values;
}

function getOwnMetadata(key: Key, target: object, property?: string | symbol): unknown {
  return own(target, property, false)?.get(key);
}

function getMetadata(key: Key, target: object, property?: string | symbol): unknown {
  for (let t: object | null = target; t !== null; t = Object.getPrototypeOf(t) as object | null) {
    const values = own(t, property, false);
    if (values?.has(key) === true) return values.get(key);
  }
  return undefined;
}

const api = {
  defineMetadata: (key: Key, value: unknown, target: object, property?: string | symbol): void => {
    own(target, property, true)?.set(key, value);
  },
  getOwnMetadata,
  getMetadata,
  hasOwnMetadata: (key: Key, target: object, property?: string | symbol): boolean =>
    own(target, property, false)?.has(key) === true,
  hasMetadata: (key: Key, target: object, property?: string | symbol): boolean =>
    getMetadata(key, target, property) !== undefined,
  metadata:
    (key: Key, value: unknown) =>
    (target: object, property?: string | symbol): void => {
      own(target, property, true)?.set(key, value);
    },
};

const reflect = Reflect as unknown as Record<string, unknown>;
for (const [name, fn] of Object.entries(api)) reflect[name] ??= fn;
