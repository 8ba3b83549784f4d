/**
 * Modules loaded at their first use rather than with their importer. Every gateway worker loads
 * what its chain and rules import at start, so a library that only some APIs need (graphql-js for
 * GraphQL APIs) is loaded by the first definition that needs it, not by every worker (issue 33
 * item 4). Where the code that needs it runs asynchronously, a dynamic `import()` does this;
 * `lazyModule` is for synchronous paths (definition rules, a middleware's `enabled`).
 */
import { createRequire } from 'node:module';

/**
 * The module `specifier` (resolved as `parent`, an importer's `import.meta.url`, would resolve
 * it), loaded at the first call, then the same module each call. ES modules and TypeScript load
 * through Node's `require` of ES modules (one without top-level `await`); the caller names the
 * module's type with `import type * as M` and passes `typeof M`.
 */
// T is the module's type as the caller imports it (`typeof M`): `require` itself is untyped.
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters
export function lazyModule<T>(parent: string, specifier: string): () => T {
  const load = createRequire(parent);
  let loaded: T | undefined;
  return () => (loaded ??= load(specifier) as T);
}
