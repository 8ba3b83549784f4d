/**
 * The listeners of their own (`listen_port`) that stored APIs claim, and with which protocol:
 * what the protocol-clash check of an API write compares with (a port has one protocol). Read
 * from the store once, then kept current by this gateway's own writes of APIs of either kind,
 * so that a write is checked without reading every stored API. A store shared with other
 * gateways (redis) is written by them too, and so is the files store of a gateway with several
 * workers (`--workers`: each worker process writes it, and API writes send no message to the
 * others): there the check reads the store each time. A kept index in a worker missed the APIs
 * the other worker wrote, so a tcp API on an HTTP API's port was stored (200) and left out at
 * the next reload.
 */
import cluster from 'node:cluster';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import {
  claimedProtocols,
  classicOf,
  isServed,
  listenerOf,
  protocolConflict,
  portProtocolOf,
  type CompileEnv,
} from '../routes/check.ts';
import type { Store } from '../store/store.ts';

/** One stored API's claim: its own listen port and the protocol served there. */
interface Claim {
  port: number;
  protocol: string;
}

export class ListenerIndex {
  readonly #store: Store;
  readonly #env: CompileEnv;
  #loaded: Promise<void> | undefined;
  readonly #byId = new Map<string, Claim>();
  /** Port -> the APIs claiming it (ID -> protocol), in the order they claimed it. */
  readonly #byPort = new Map<number, Map<string, string>>();

  constructor(store: Store, env: CompileEnv) {
    this.#store = store;
    this.#env = env;
  }

  /** Whether other processes write the store's APIs too, so a kept index would go stale. */
  #othersWrite(): boolean {
    return this.#store.shared || cluster.isWorker;
  }

  #load(): Promise<void> {
    this.#loaded ??= this.#store.list('apis').then(
      (entries) => {
        for (const e of entries) if ('value' in e) this.#set(e.id, classicOrNothing(e.value));
      },
      (err: unknown) => {
        // The next check reads the store again.
        this.#loaded = undefined;
        throw err;
      },
    );
    return this.#loaded;
  }

  #claimOf(api: GatewayApiDefinition | undefined): Claim | undefined {
    if (api === undefined || !isServed(api)) return undefined;
    const listener = listenerOf(api, this.#env);
    return listener === 'main' ? undefined : { port: listener, protocol: portProtocolOf(api) };
  }

  #set(id: string, api: GatewayApiDefinition | undefined): void {
    const old = this.#byId.get(id);
    if (old !== undefined) {
      this.#byId.delete(id);
      const claimers = this.#byPort.get(old.port);
      claimers?.delete(id);
      if (claimers?.size === 0) this.#byPort.delete(old.port);
    }
    const claim = this.#claimOf(api);
    if (claim === undefined) return;
    this.#byId.set(id, claim);
    let claimers = this.#byPort.get(claim.port);
    if (claimers === undefined) {
      claimers = new Map();
      this.#byPort.set(claim.port, claimers);
    }
    claimers.set(id, claim.protocol);
  }

  /**
   * Why `api`, written as `id`, clashes with the protocol another stored API serves on its port
   * (the first that claimed it), or undefined.
   */
  async conflict(id: string, api: GatewayApiDefinition): Promise<string | undefined> {
    const claim = this.#claimOf(api);
    if (claim === undefined) return undefined;
    if (this.#othersWrite()) {
      const others = (await this.#store.list('apis')).flatMap((e) =>
        'value' in e && e.id !== id && isServed(classicOf(e.value))
          ? [{ id: e.id, api: classicOf(e.value) }]
          : [],
      );
      return protocolConflict(api, claimedProtocols(others, this.#env), this.#env);
    }
    await this.#load();
    for (const [by, protocol] of this.#byPort.get(claim.port) ?? []) {
      if (by === id) continue;
      return protocolConflict(api, new Map([[claim.port, { protocol, by }]]), this.#env);
    }
    return undefined;
  }

  /** `id` was written (`value`, a classic definition or an OAS document) or deleted (undefined). */
  async stored(id: string, value: unknown): Promise<void> {
    if (this.#othersWrite() || this.#loaded === undefined) return;
    try {
      await this.#load();
    } catch {
      return;
    }
    this.#set(id, value === undefined ? undefined : classicOrNothing(value));
  }

  /** How many APIs claim a port of their own (for tests). */
  get size(): number {
    return this.#byId.size;
  }
}

/** The classic form of a stored API; undefined for one that does not convert (it claims nothing). */
function classicOrNothing(value: unknown): GatewayApiDefinition | undefined {
  try {
    return classicOf(value);
  } catch {
    return undefined;
  }
}

const indexes = new WeakMap<Store, ListenerIndex>();

/** The index of `store`'s APIs, made at first use. */
export function listenerIndex(store: Store, env: CompileEnv): ListenerIndex {
  let index = indexes.get(store);
  if (index === undefined) {
    index = new ListenerIndex(store, env);
    indexes.set(store, index);
  }
  return index;
}
