/**
 * The registry of gateway processes sharing a store: each process registers, says which
 * revision of each API it serves after every reload, and sends a heartbeat; one whose heartbeat
 * stops for longer than the timeout is dropped from the set. The operator reads it through any
 * gateway's management API (`GET /svc/nodes/apis/{id}`) to know when every gateway serves an
 * API's current revision.
 *
 * On Redis a process is `<prefix>node:<id>` (what it is) and `<prefix>node:<id>:apis` (a hash:
 * API ID -> revision), both expiring after the timeout unless a heartbeat renews them: Redis's
 * own clock drops a silent process, whatever the clocks of the gateways say. `<prefix>nodes`
 * lists the IDs, so a reader finds the expired ones and removes them. A store that is not
 * shared has one process in its registry: the one asked.
 */
import type { Redis } from 'ioredis';
import { TransientError, errorMessage } from '../../lib/errors.ts';

/** One API as a process serves it. */
export interface AppliedRevision {
  /** sha256 of the canonical JSON of the stored document. */
  revision: string;
  /** When the route table serving this revision was swapped in (ISO 8601, milliseconds). */
  applied_at: string;
}

/** What the registry reads of the revisions a process serves (applied.ts keeps them). */
export interface AppliedView {
  get(id: string): AppliedRevision | undefined;
  all(): Record<string, AppliedRevision>;
}

/** What a gateway process says of itself. */
export interface NodeInfo {
  /** Unique per process (its group-message ID). */
  id: string;
  /** `host:port` (and the worker's number with `--workers` > 1): who the operator names. */
  name: string;
  pid: number;
  /** When the process started (ISO 8601). */
  started_at: string;
}

/** One process as the registry lists it, with the revision of one API when asked for. */
export interface NodeEntry extends NodeInfo {
  api?: AppliedRevision;
}

/** The registry, as a gateway process uses it. */
export interface NodeRegistry {
  /** Writes what this process serves now (after each reload that swapped its table). */
  publish(info: NodeInfo, applied: AppliedView): Promise<void>;
  /** Keeps this process in the set; publishes again when it was dropped meanwhile. */
  heartbeat(info: NodeInfo, applied: AppliedView): Promise<void>;
  /** Every live process, with the revision each serves of `apiId` when given. */
  list(apiId?: string): Promise<NodeEntry[]>;
  /** Leaves the set (a clean stop). */
  leave(info: NodeInfo): Promise<void>;
}

/** The registry of a store nobody else shares: the process itself. */
export function localRegistry(self: () => { info: NodeInfo; applied: AppliedView }): NodeRegistry {
  return {
    publish: () => Promise.resolve(),
    heartbeat: () => Promise.resolve(),
    list: (apiId) => {
      const { info, applied } = self();
      const api = apiId === undefined ? undefined : applied.get(apiId);
      return Promise.resolve([{ ...info, ...(api === undefined ? {} : { api }) }]);
    },
    leave: () => Promise.resolve(),
  };
}

/** A revision as a Redis hash field holds it. */
const encode = (a: AppliedRevision): string => `${a.revision} ${a.applied_at}`;
const decode = (text: string | null): AppliedRevision | undefined => {
  if (text === null) return undefined;
  const [revision = '', applied_at = ''] = text.split(' ');
  return { revision, applied_at };
};

/** The registry on Redis (see the top of this file). */
export function redisRegistry(redis: Redis, opts: { prefix: string; timeoutMs: number }): NodeRegistry {
  const set = `${opts.prefix}nodes`;
  const meta = (id: string): string => `${opts.prefix}node:${id}`;
  const apis = (id: string): string => `${opts.prefix}node:${id}:apis`;
  /** What this process last wrote of its APIs, so a reload writes only what changed. */
  let written = new Map<string, string>();
  const run = async <T>(op: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw new TransientError('GW_ERR_STORE_UNAVAILABLE', `redis ${op}: ${errorMessage(err)}`, {
        cause: err,
      });
    }
  };
  const publish = async (info: NodeInfo, applied: AppliedView, full: boolean): Promise<void> => {
    const now = new Map(Object.entries(applied.all()).map(([id, a]) => [id, encode(a)]));
    const m = redis.multi();
    if (full) m.del(apis(info.id));
    const changed: string[] = [];
    for (const [id, text] of now) if (full || written.get(id) !== text) changed.push(id, text);
    const gone = full ? [] : [...written.keys()].filter((id) => !now.has(id));
    if (changed.length > 0) m.hset(apis(info.id), ...changed);
    if (gone.length > 0) m.hdel(apis(info.id), ...gone);
    // An empty hash does not exist: the process's own key says it is alive.
    m.set(meta(info.id), JSON.stringify(info), 'PX', opts.timeoutMs);
    m.pexpire(apis(info.id), opts.timeoutMs);
    m.sadd(set, info.id);
    const results = await run('node publish', () => m.exec());
    const failed = results?.find(([err]) => err !== null);
    if (failed?.[0])
      throw new TransientError('GW_ERR_STORE_UNAVAILABLE', `redis node publish: ${errorMessage(failed[0])}`);
    written = now;
  };
  return {
    publish: async (info, applied) => {
      // Written in full the first time, and when the entry is gone (Redis restarted empty, or
      // this process silent past the timeout): what it held of the unchanged APIs went with it.
      const present =
        written.size > 0 && (await run('node publish', () => redis.exists(meta(info.id)))) === 1;
      await publish(info, applied, !present);
    },
    heartbeat: async (info, applied) => {
      const alive = await run('node heartbeat', () => redis.pexpire(meta(info.id), opts.timeoutMs));
      // Dropped meanwhile (Redis restarted, or this process was silent past the timeout):
      // everything is written again.
      if (alive === 0) await publish(info, applied, true);
      else await run('node heartbeat', () => redis.pexpire(apis(info.id), opts.timeoutMs));
    },
    list: async (apiId) => {
      const ids = (await run('node list', () => redis.smembers(set))).sort();
      if (ids.length === 0) return [];
      const p = redis.pipeline();
      for (const id of ids) {
        p.get(meta(id));
        if (apiId !== undefined) p.hget(apis(id), apiId);
      }
      const results = (await run('node list', () => p.exec())) ?? [];
      const step = apiId === undefined ? 1 : 2;
      const out: NodeEntry[] = [];
      const dropped: string[] = [];
      ids.forEach((id, i) => {
        const text = results[i * step]?.[1];
        if (typeof text !== 'string') {
          dropped.push(id);
          return;
        }
        let info: NodeInfo;
        try {
          info = JSON.parse(text) as NodeInfo;
        } catch {
          dropped.push(id);
          return;
        }
        const api =
          apiId === undefined ? undefined : decode((results[i * step + 1]?.[1] as string | null) ?? null);
        out.push({ ...info, ...(api === undefined ? {} : { api }) });
      });
      // Expired: gone from the set too (any reader may do it; doing it twice is harmless).
      if (dropped.length > 0) {
        await run('node list', () => redis.srem(set, ...dropped));
        await run('node list', () => redis.del(...dropped.map(apis)));
      }
      return out;
    },
    leave: async (info) => {
      await run('node leave', () =>
        redis.multi().srem(set, info.id).del(meta(info.id), apis(info.id)).exec(),
      );
    },
  };
}
