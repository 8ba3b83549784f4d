/**
 * The plugin worker: one worker thread runs one plugin function (runner.ts starts it), so a
 * function that loops, or never answers, holds up only its own calls. `workerData` says what it
 * runs: a hook exported by a module of `plugin_dir` (imported here), or a script of a virtual
 * endpoint, the reference's JavaScript contract, evaluated in a context of its own (node:vm) that
 * holds no Node global (`require`, `process`, timers) and no object of this realm: the
 * arguments go in as JSON text and the answer comes out as JSON text. Each call answers
 * `{id, ok, value}` or `{id, ok: false, message}`; loading answers `{ready}` or `{loadError}`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import vm from 'node:vm';
import type { PluginWork, WorkerAnswer, WorkerCall } from './runner.ts';

const port = parentPort;
if (port === null) throw new Error('gateway/plugins/worker.ts runs as a worker thread');
const work = workerData as PluginWork;

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/**
 * The reference's helper, under its name and ours: what the function returns, as the JSON text
 * the gateway reads. `__svc_call` passes the arguments in and the answer out as text.
 */
const prelude = (name: string): string => `
var SvcJsResponse = function (response, sessionMeta) {
  return JSON.stringify({ Response: response, SessionMeta: sessionMeta });
};
var TykJsResponse = SvcJsResponse;
var __svc_call = function (args) {
  var a = JSON.parse(args);
  var r = ${name}(a[0], a[1], a[2]);
  return typeof r === 'string' ? r : JSON.stringify({ Response: r });
};
`;

async function load(): Promise<(args: unknown[], timeoutMs: number) => unknown> {
  if (work.kind === 'module') {
    const mod = (await import(work.url)) as Record<string, unknown>;
    const fn = mod[work.name];
    if (typeof fn !== 'function') throw new Error(`exports no function ${work.name}`);
    return (args) => (fn as (...a: unknown[]) => unknown)(...args.map(deepFreeze));
  }
  const sandbox = vm.createContext(Object.create(null) as object, {
    codeGeneration: { strings: false, wasm: false },
    microtaskMode: 'afterEvaluate',
  });
  vm.runInContext(work.source, sandbox, { timeout: work.timeoutMs, filename: work.label });
  if (vm.runInContext(`typeof ${work.name}`, sandbox) !== 'function') {
    throw new Error(`defines no function ${work.name}`);
  }
  vm.runInContext(prelude(work.name), sandbox);
  return (args, timeoutMs) => {
    (sandbox as { __svc_args?: string }).__svc_args = JSON.stringify(args);
    const out: unknown = vm.runInContext('__svc_call(__svc_args)', sandbox, { timeout: timeoutMs });
    if (typeof out !== 'string') throw new Error('the function answered nothing');
    return out;
  };
}

function answer(a: WorkerAnswer): void {
  try {
    port?.postMessage(a);
  } catch (err) {
    port?.postMessage({ id: a.id, ok: false, message: `the answer can't be sent: ${messageOf(err)}` });
  }
}

try {
  const fn = await load();
  port.on('message', (m: WorkerCall) => {
    Promise.resolve()
      .then(() => fn(m.args, m.timeoutMs))
      .then(
        (value: unknown) => {
          answer({ id: m.id, ok: true, value });
        },
        (err: unknown) => {
          answer({ id: m.id, ok: false, message: messageOf(err) });
        },
      );
  });
  port.postMessage({ ready: true });
} catch (err) {
  port.postMessage({ loadError: messageOf(err) });
}
