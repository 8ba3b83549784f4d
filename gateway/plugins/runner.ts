/**
 * Plugin functions run off the gateway's event loop, each in a worker thread of its own
 * (worker.ts), so that one that loops or never answers cannot stall the requests of other APIs.
 * A call is bounded by its time limit (`plugin_timeout_ms`): past it the call fails (the request
 * gets 500 with an error ID), the worker is stopped, which ends an endless loop, and the next call
 * starts a new one. Calls in flight in a stopped worker fail with it.
 */
import { Worker } from 'node:worker_threads';

/** What a worker runs: a module's exported hook, or a virtual endpoint's script. */
export type PluginWork =
  | { kind: 'module'; url: string; name: string; label: string }
  | { kind: 'script'; source: string; name: string; label: string; timeoutMs: number };

/** A call sent to a worker. */
export interface WorkerCall {
  id: number;
  args: unknown[];
  timeoutMs: number;
}

/** A worker's answer to a call. */
export type WorkerAnswer =
  { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string };

type Loaded = { ready: true } | { loadError: string };

interface Pending {
  resolve: (v: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

const WORKER = new URL('./worker.ts', import.meta.url);
/** Heap of a script's worker: a script that fills memory ends its worker, not the gateway. */
const SCRIPT_HEAP_MB = 64;

/** One plugin function in its worker thread. */
export class PluginRunner {
  readonly #work: PluginWork;
  #worker: Worker | undefined;
  #ready: Promise<Worker> | undefined;
  readonly #pending = new Map<number, Pending>();
  #next = 0;
  #closed = false;

  private constructor(work: PluginWork) {
    this.#work = work;
  }

  /** Starts the worker and waits until it has loaded the function; throws saying why it can't. */
  static async start(work: PluginWork): Promise<PluginRunner> {
    const r = new PluginRunner(work);
    await r.#spawn();
    return r;
  }

  #spawn(): Promise<Worker> {
    const script = this.#work.kind === 'script';
    const worker = new Worker(WORKER, {
      workerData: this.#work,
      // A script from an API definition sees none of the gateway's environment.
      ...(script ? { env: {}, resourceLimits: { maxOldGenerationSizeMb: SCRIPT_HEAP_MB } } : {}),
      stdout: false,
      stderr: false,
    });
    worker.unref();
    const ready = new Promise<Worker>((resolve, reject) => {
      const failed = (err: Error): void => {
        this.#drop(worker, err);
        reject(err);
      };
      worker.once('message', (m: Loaded) => {
        if ('ready' in m) {
          worker.on('message', (a: WorkerAnswer) => {
            this.#answer(a);
          });
          // A 'message' listener refs the worker's port again: a loaded hook must not keep a
          // process alive (the gateway's own servers do that).
          worker.unref();
          resolve(worker);
        } else failed(new Error(m.loadError));
      });
      worker.on('error', (err: unknown) => {
        failed(err instanceof Error ? err : new Error(String(err)));
      });
      worker.on('exit', (code) => {
        failed(new Error(`the plugin worker stopped (exit code ${String(code)})`));
      });
    });
    this.#worker = worker;
    this.#ready = ready;
    return ready;
  }

  #answer(a: WorkerAnswer): void {
    const p = this.#pending.get(a.id);
    if (p === undefined) return;
    this.#pending.delete(a.id);
    clearTimeout(p.timer);
    if (a.ok) p.resolve(a.value);
    else p.reject(new Error(a.message));
  }

  /** Forgets `worker` (stopped or failed): its calls in flight fail with `err`. */
  #drop(worker: Worker, err: Error): void {
    if (this.#worker !== worker) return;
    this.#worker = undefined;
    this.#ready = undefined;
    for (const [id, p] of this.#pending) {
      clearTimeout(p.timer);
      this.#pending.delete(id);
      p.reject(err);
    }
    void worker.terminate();
  }

  /** Calls the function with `args`; rejects when it throws or takes longer than `timeoutMs`. */
  async call(args: unknown[], timeoutMs: number): Promise<unknown> {
    if (this.#closed) throw new Error('the plugin was unloaded');
    const worker = await (this.#ready ?? this.#spawn());
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        // The worker may be looping: stop it, and the calls it holds with it.
        this.#drop(worker, new Error(`no answer within ${String(timeoutMs)} ms`));
      }, timeoutMs);
      timer.unref();
      this.#pending.set(id, { resolve, reject, timer });
      const call: WorkerCall = { id, args, timeoutMs };
      try {
        worker.postMessage(call);
      } catch (err) {
        this.#answer({ id, ok: false, message: err instanceof Error ? err.message : String(err) });
      }
    });
  }

  /** Stops the worker; later calls fail. */
  close(): void {
    this.#closed = true;
    const w = this.#worker;
    if (w !== undefined) this.#drop(w, new Error('the plugin was unloaded'));
  }
}
