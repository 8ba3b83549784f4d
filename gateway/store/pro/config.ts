/**
 * The configuration a gateway in mode pro serves: every API and policy of its organisations, read
 * from the dashboard's `/system/config` (one read at a time) with its revision. The last good
 * answer is kept in `<data_dir>/dashboard-snapshot.json`, so a gateway restarted while the
 * dashboard is down serves what it served before.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError, errorMessage } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/log.ts';
import type { StoredEntry } from '../store.ts';

/** A configuration read this recent serves `list` without another call (one reload reads twice). */
const FRESH_MS = 1000;

/** `/system/config` as the dashboard answers it. */
interface NodeConfig {
  apis: { id: string; org: string; kind: string; definition: unknown }[];
  policies: { id: string; org: string; policy: unknown }[];
  revision: string | null;
}

/** The configuration, as stored entries. */
export interface Snapshot {
  revision: string | null;
  apis: StoredEntry[];
  policies: StoredEntry[];
  at: number;
}

/** The configuration read from the dashboard, the last good one kept (in memory and on disk). */
export class DashboardConfig {
  readonly #call: (method: string, path: string) => Promise<Response>;
  readonly #read: () => void;
  readonly #log: Logger;
  readonly #dataDir: string;
  readonly #snapshotFile: string;
  #snapshot: Snapshot | undefined;
  #fetching: Promise<Snapshot> | undefined;

  /**
   * `call` asks the dashboard; `read` is told of each good read. The snapshot file of `dataDir`
   * is loaded now.
   */
  constructor(opts: {
    call: (method: string, path: string) => Promise<Response>;
    read: () => void;
    dataDir: string;
    log: Logger;
  }) {
    this.#call = opts.call;
    this.#read = opts.read;
    this.#log = opts.log;
    this.#dataDir = opts.dataDir;
    this.#snapshotFile = join(opts.dataDir, 'dashboard-snapshot.json');
    this.#snapshot = this.#readSnapshotFile();
    if (this.#snapshot !== undefined) {
      this.#log.info('dashboard snapshot loaded', {
        apis: this.#snapshot.apis.length,
        policies: this.#snapshot.policies.length,
      });
    }
  }

  /** The last configuration read (or loaded from the snapshot file), if any. */
  get last(): Snapshot | undefined {
    return this.#snapshot;
  }

  /** Waits for a read already under way (it may have started before a change was committed). */
  async settled(): Promise<void> {
    if (this.#fetching !== undefined) await this.#fetching.catch(() => undefined);
  }

  /** The configuration: read again unless just read; the last good one when the read fails. */
  async current(): Promise<Snapshot> {
    const s = this.#snapshot;
    if (s !== undefined && Date.now() - s.at < FRESH_MS) return s;
    try {
      return await this.refresh();
    } catch (err) {
      if (s !== undefined) return s;
      throw new SvcError('GW_ERR_DASHBOARD_UNAVAILABLE', `dashboard unavailable: ${errorMessage(err)}`, {
        status: 503,
        cause: err,
      });
    }
  }

  /** Reads `/system/config` (one read at a time); keeps and saves it. */
  refresh(): Promise<Snapshot> {
    this.#fetching ??= this.#fetchConfig().finally(() => {
      this.#fetching = undefined;
    });
    return this.#fetching;
  }

  async #fetchConfig(): Promise<Snapshot> {
    const res = await this.#call('GET', '/system/config');
    if (res.status !== 200) throw new Error(`GET /system/config answered ${res.status}: ${await res.text()}`);
    const c = (await res.json()) as NodeConfig;
    const seen = new Set<string>();
    const apis: StoredEntry[] = [];
    for (const a of [...c.apis].sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))) {
      if (seen.has(a.id)) {
        this.#log.warn('api id in two organisations, the first is served', { api_id: a.id, org_id: a.org });
        continue;
      }
      seen.add(a.id);
      apis.push({ id: a.id, value: a.definition, text: JSON.stringify(a.definition) });
    }
    const pseen = new Set<string>();
    const policies: StoredEntry[] = [];
    for (const p of [...c.policies].sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))) {
      if (pseen.has(p.id)) continue;
      pseen.add(p.id);
      policies.push({ id: p.id, value: p.policy, text: JSON.stringify(p.policy) });
    }
    const snap: Snapshot = { revision: c.revision, apis, policies, at: Date.now() };
    const before = this.#snapshot;
    this.#snapshot = snap;
    this.#read();
    if (before?.revision !== snap.revision) this.#saveSnapshot(snap);
    return snap;
  }

  #readSnapshotFile(): Snapshot | undefined {
    try {
      const s = JSON.parse(readFileSync(this.#snapshotFile, 'utf8')) as Omit<Snapshot, 'at'>;
      return { ...s, at: 0 };
    } catch {
      return undefined;
    }
  }

  #saveSnapshot(s: Snapshot): void {
    try {
      mkdirSync(this.#dataDir, { recursive: true });
      const tmp = `${this.#snapshotFile}.${process.pid}.${randomUUID()}.tmp`;
      writeFileSync(tmp, JSON.stringify({ revision: s.revision, apis: s.apis, policies: s.policies }));
      renameSync(tmp, this.#snapshotFile);
    } catch (err) {
      this.#log.warn('dashboard snapshot not saved', { error: errorMessage(err) });
    }
  }
}
