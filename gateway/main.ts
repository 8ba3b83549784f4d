/**
 * The gateway's entry: Node's compile cache first, then the process (run.ts), so that every
 * module is compiled into the cache. A worker of `--workers` (and a later start of the gateway)
 * then loads the modules from it: its TypeScript sources are not stripped again, and Node's
 * TypeScript stripper (a WebAssembly module, about 18 MiB resident) is never loaded in it
 * (issue 33 item 4: a worker held 175 MiB with one API, 150 MiB from the cache). The cache is
 * Node's default (`NODE_COMPILE_CACHE`, else `<tmpdir>/node-compile-cache`); where it cannot be
 * written (`NODE_DISABLE_COMPILE_CACHE`, a read-only disk) the gateway runs without it.
 */
import { constants, enableCompileCache } from 'node:module';

const cache = enableCompileCache();
// Children (the workers) start with it from their first module.
if (cache.status === constants.compileCacheStatus.ENABLED && cache.directory !== undefined)
  process.env.NODE_COMPILE_CACHE ??= cache.directory;

await import('./run.ts');
