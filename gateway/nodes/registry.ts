/**
 * The registry of gateway processes sharing a store: each process registers, says which
 * revision of each API it serves after every reload (and of each policy it applies, once it has
 * forgotten what it cached of the one before), and sends a heartbeat; one whose heartbeat stops
 * for longer than the timeout is dropped from the set. The operator reads it through any
 * gateway's management API (`GET /svc/nodes/apis/{id}`, `GET /svc/nodes/policies/{id}`) to know
 * when every gateway serves an object's current revision.
 *
 * On Redis a process is `<prefix>node:<id>` (what it is), `<prefix>node:<id>:apis` and
 * `<prefix>node:<id>:policies` (hashes: ID -> revision), all expiring after the timeout unless
 * a heartbeat renews them: Redis's own clock drops a silent process, whatever the clocks of the
 * gateways say. `<prefix>nodes` lists the IDs, so a reader finds the expired ones and removes
 * them. A store that is not shared has one process in its registry: the one asked.
 */
import type { Redis } from 'ioredis';
import { TransientError, errorMessage } from '../../lib/errors.ts';

/** The documents whose revisions a process reports: the APIs it serves, the policies it applies. */
export const APPLIED_KINDS = ['apis', 'policies'] as const;
/** One of {@link APPLIED_KINDS}. */
export type AppliedKind = (typeof APPLIED_KINDS)[number];
/** The field of a {@link NodeEntry} holding the revision of the document asked for. */
export const ENTRY_FIELD = { apis: 'api', policies: 'policy' } as const satisfies Record<AppliedKind, string>;

/** One document (API or policy) as a process serves it. */
export interface AppliedRevision {
  /** sha256 of the canonical JSON of the stored document. */
  revision: string;
  /** When the route table serving this revision was swapped in (ISO 8601, milliseconds). */
  applied_at: string;
}

/** What the registry reads of the revisions a process serves (applied.ts keeps them). */
export interface AppliedView {
  get(kind: AppliedKind, id: string): AppliedRevision | undefined;
  all(kind: AppliedKind): Record<string, AppliedRevision>;
  /** The APIs stored but left out of the routes by the last reload, and why (absent: none known). */
  leftOut?(): Readonly<Record<string, string>>;
}

/** One document asked about: its kind and ID. */
export interface AppliedOf {
  kind: AppliedKind;
  id: string;
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

/** One process as the registry lists it, with the revision of one API or policy when asked for. */
export interface NodeEntry extends NodeInfo {
  api?: AppliedRevision;
  policy?: AppliedRevision;
}

/** `entry` with the revision of `of` it serves, when it serves one. */
function withRevision(
  info: NodeInfo,
  of: AppliedOf | undefined,
  revision: AppliedRevision | undefined,
): NodeEntry {
  return of === undefined || revision === undefined ? info : { ...info, [ENTRY_FIELD[of.kind]]: revision };
}

/** The registry, as a gateway process uses it. */
export interface NodeRegistry {
  /** Writes what this process serves now (after each reload that swapped its table). */
  publish(info: NodeInfo, applied: AppliedView): Promise<void>;
  /** Keeps this process in the set; publishes again when it was dropped meanwhile. */
  heartbeat(info: NodeInfo, applied: AppliedView): Promise<void>;
  /** Every live process, with the revision each serves of `of` when given. */
  list(of?: AppliedOf): Promise<NodeEntry[]>;
  /** Leaves the set (a clean stop). */
  leave(info: NodeInfo): Promise<void>;
}

/** The registry of a store nobody else shares: the process itself. */
export function localRegistry(self: () => { info: NodeInfo; applied: AppliedView }): NodeRegistry {
  return {
    publish: () => Promise.resolve(),
    heartbeat: () => Promise.resolve(),
    list: (of) => {
      const { info, applied } = self();
      return Promise.resolve([
        withRevision(info, of, of === undefined ? undefined : applied.get(of.kind, of.id)),
      ]);
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
  const docs = (id: string, kind: AppliedKind): string => `${opts.prefix}node:${id}:${kind}`;
  const allDocs = (id: string): string[] => APPLIED_KINDS.map((k) => docs(id, k));
  /** What this process last wrote of each kind, so a write sends only what changed. */
  let written = new Map<AppliedKind, Map<string, string>>();
  /** Writes run one after another: each one's difference is from the one before. */
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => undefined);
    return next;
  };
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
    const m = redis.multi();
    const now = new Map<AppliedKind, Map<string, string>>();
    for (const kind of APPLIED_KINDS) {
      const current = new Map(Object.entries(applied.all(kind)).map(([id, a]) => [id, encode(a)]));
      now.set(kind, current);
      const before = written.get(kind) ?? new Map<string, string>();
      const key = docs(info.id, kind);
      if (full) m.del(key);
      const changed: string[] = [];
      for (const [id, text] of current) if (full || before.get(id) !== text) changed.push(id, text);
      const gone = full ? [] : [...before.keys()].filter((id) => !current.has(id));
      if (changed.length > 0) m.hset(key, ...changed);
      if (gone.length > 0) m.hdel(key, ...gone);
      m.pexpire(key, opts.timeoutMs);
    }
    // An empty hash does not exist: the process's own key says it is alive.
    m.set(meta(info.id), JSON.stringify(info), 'PX', opts.timeoutMs);
    m.sadd(set, info.id);
    const results = await run('node publish', () => m.exec());
    const failed = results?.find(([err]) => err !== null);
    if (failed?.[0])
      throw new TransientError('GW_ERR_STORE_UNAVAILABLE', `redis node publish: ${errorMessage(failed[0])}`);
    written = now;
  };
  return {
    publish: (info, applied) =>
      serial(async () => {
        // Written in full the first time, and when the entry is gone (Redis restarted empty, or
        // this process silent past the timeout): what it held of the unchanged ones went with it.
        const present =
          written.size > 0 && (await run('node publish', () => redis.exists(meta(info.id)))) === 1;
        await publish(info, applied, !present);
      }),
    heartbeat: (info, applied) =>
      serial(async () => {
        const alive = await run('node heartbeat', () => redis.pexpire(meta(info.id), opts.timeoutMs));
        // Dropped meanwhile (Redis restarted, or this process was silent past the timeout):
        // everything is written again.
        if (alive === 0) {
          await publish(info, applied, true);
          return;
        }
        const p = redis.pipeline();
        for (const key of allDocs(info.id)) p.pexpire(key, opts.timeoutMs);
        await run('node heartbeat', () => p.exec());
      }),
    list: async (of) => {
      const ids = (await run('node list', () => redis.smembers(set))).sort();
      if (ids.length === 0) return [];
      const p = redis.pipeline();
      for (const id of ids) {
        p.get(meta(id));
        if (of !== undefined) p.hget(docs(id, of.kind), of.id);
      }
      const results = (await run('node list', () => p.exec())) ?? [];
      const step = of === undefined ? 1 : 2;
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
        const revision =
          of === undefined ? undefined : decode((results[i * step + 1]?.[1] as string | null) ?? null);
        out.push(withRevision(info, of, revision));
      });
      // Expired: gone from the set too (any reader may do it; doing it twice is harmless).
      if (dropped.length > 0) {
        await run('node list', () => redis.srem(set, ...dropped));
        await run('node list', () => redis.del(...dropped.flatMap(allDocs)));
      }
      return out;
    },
    leave: async (info) => {
      await run('node leave', () =>
        redis
          .multi()
          .srem(set, info.id)
          .del(meta(info.id), ...allDocs(info.id))
          .exec(),
      );
    },
  };
}
