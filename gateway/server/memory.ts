/**
 * Gives back to the system the memory a load of the routes held and no longer needs. V8 keeps
 * the pages a collection frees in a pool of its own, still resident, and a worker that loaded
 * 10,000 APIs (their files, parsed definitions, checks and compiled routes: far more at once
 * than what the table keeps) held them for good. A last-resort collection also empties the pool:
 * a worker of 2 on the files store, 160-167 MiB resident with 10,000 APIs, then 120-124 MiB; with
 * one API, 122 then 88-91 MiB (issue 33 item 4). It took 160 to 530 ms on a busy machine. Run
 * once, when the process starts serving: a reload changes a few APIs and allocates little.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * A full collection that returns the freed pages to the system (V8's `last-resort` flavour, as
 * on memory pressure). Blocks the process while it runs (tens to hundreds of milliseconds).
 */
export function releaseMemory(): void {
  // V8's collector as a function, without `--expose-gc` for the whole process: a new context
  // gets `gc` while the flag is on (as Jest's leak detection does).
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as NodeJS.GCFunction;
  setFlagsFromString('--no-expose-gc');
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
