/**
 * The embedded store: every document is one JSON file, `<data_dir>/<collection>/<id>.json`,
 * written atomically (temporary file, fsync, rename, fsync of the directory), so a crash leaves
 * the old file or the new one, never half of one. `get` keeps what it read in memory (bounded),
 * so a warm lookup never touches the disk; a write by another process of the node (`--workers`)
 * reaches this one as a `changed` message, and `forget` drops the copy. API documents are not
 * kept: only the management API reads them one at a time (routes load through `list`), and it
 * must answer with what another process just wrote, not a copy from before. `list` always looks
 * at the disk: it reads each file again unless its inode, size and times are those it saw last
 * time (so a reload of thousands of unchanged APIs stats them rather than reading them), and
 * refreshes the copies of what it read. A collection listed once is watched (inotify): the next
 * list stats only the files changed since (a reload of one change among 10,000 APIs stats one
 * file, not 10,000), and every file when the watcher is gone or lost count. A document whose
 * text is unchanged is parsed only when its value is read.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import { link, mkdir, open, readFile, readdir, realpath, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError, SvcError, errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { COLLECTIONS, parsedLater, type Collection } from './store.ts';
import type { GroupMessage, PutMode, PutOutcome, Store, StoreHealth, StoredEntry } from './store.ts';

/** Longest encoded file name, so that `<name>.json` fits the usual 255-byte limit. */
const MAX_NAME_BYTES = 240;
/** Temporary files older than this are leftovers of a crash and removed at open. */
const STALE_TEMP_MS = 3_600_000;
const TEMP_PREFIX = '.tmp-';
/** Files read at once by list(). */
const LIST_CONCURRENCY = 64;
/** Documents kept in memory by get(); the oldest are dropped beyond this. */
const CACHE_MAX = 100_000;
/** A cached "no such document". */
const ABSENT = Symbol('absent');
/**
 * Collections `get` reads from the disk every time. API and certificate writes send no `changed`
 * message (a reload makes them take effect), so a copy kept by another worker answered a read
 * right after a write with the version from before it, or 404 after a create; for certificates
 * that worker's reload also kept allowing a deleted client certificate (mutual TLS, upstream and
 * listener certificates are looked up with `get`). Both are read only by the management API and
 * when routes compile, never per request (docs/design/gateway.md).
 */
const UNKEPT: ReadonlySet<Collection> = new Set<Collection>(['apis', 'certs']);

/** A file as `list` last read it: its stamp (inode, size, change times) and its text. */
interface Listed {
  /** The ID the file name stands for. */
  id: string;
  stamp: string;
  text: string;
  /** Whether the text parsed (a list then reads its value only when asked). */
  parsed: boolean;
}

/**
 * The files of a collection changed since its last list, as a watcher on its directory reports
 * them; `all` when it can't tell which (the watcher failed, or the kernel's queue overflowed).
 */
interface Changes {
  watcher: FSWatcher | undefined;
  names: Set<string>;
  all: boolean;
  /** Marker files this process wrote, and who waits for their event (`#settled`). */
  markers: Map<string, () => void>;
}

/** How long a list waits for the event of its marker file before it looks at every file. */
const MARKER_TIMEOUT_MS = 2_000;

/** Group messages between stores on one data directory in this process. */
const buses = new Map<string, EventEmitter>();

/** Turns an ID into a file name: unreserved URL characters stay, the rest is %-encoded. */
export function fileNameOf(id: string): string {
  if (id === '') throw new InputError('GW_ERR_ID_INVALID', 'ID must not be empty');
  let name = '';
  for (const ch of id) {
    name +=
      /^[A-Za-z0-9_~-]$/.test(ch) || (ch === '.' && name !== '')
        ? ch
        : encodeURIComponent(ch).replace(/[!'()*.]/g, hex);
  }
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) {
    throw new InputError(
      'GW_ERR_ID_INVALID',
      `ID too long for the files store (at most ${MAX_NAME_BYTES} bytes once encoded)`,
    );
  }
  return `${name}.json`;
}

function safeFileNameOf(id: string): string | undefined {
  try {
    return fileNameOf(id);
  } catch {
    return undefined;
  }
}

function hex(ch: string): string {
  return `%${ch.charCodeAt(0).toString(16).toUpperCase()}`;
}

/** The ID a file name stands for, or undefined for files that aren't documents. */
export function idOf(fileName: string): string | undefined {
  if (!fileName.endsWith('.json') || fileName.startsWith('.')) return undefined;
  try {
    return decodeURIComponent(fileName.slice(0, -'.json'.length));
  } catch {
    return undefined;
  }
}

function isErrno(err: unknown, code: string): boolean {
  return err instanceof Error && (err as NodeJS.ErrnoException).code === code;
}

/** The embedded store. */
export class FilesStore implements Store {
  readonly kind = 'files';
  readonly shared = false;
  readonly #dir: string;
  readonly #bus: EventEmitter;
  /** `<collection>/<id>` -> the file's text (parsed at each get, so callers may mutate). */
  readonly #cache = new Map<string, string | typeof ABSENT>();
  /** What the last `list` of each collection read, by file name, with the file's stamp. */
  readonly #listed = new Map<Collection, ReadonlyMap<string, Listed>>();
  /** The file names the last `list` of each collection read, in ID order. */
  readonly #order = new Map<Collection, string[]>();
  /** Collections whose last `list` reported a problem for a file it did not read (its name). */
  readonly #unread = new Set<Collection>();
  /** The files changed since the last `list` of each collection listed so far. */
  readonly #changes = new Map<Collection, Changes>();
  /** Bumped by every write and forget: a read that spans one doesn't cache what it read. */
  #writes = 0;
  readonly #unsubscribers = new Set<() => void>();

  private constructor(dir: string) {
    this.#dir = dir;
    let bus = buses.get(dir);
    if (bus === undefined) {
      bus = new EventEmitter();
      bus.setMaxListeners(0);
      buses.set(dir, bus);
    }
    this.#bus = bus;
  }

  /** Opens (and creates) the data directory and removes leftovers of interrupted writes. */
  static async open(dir: string, log: Logger): Promise<FilesStore> {
    await mkdir(dir, { recursive: true });
    const real = await realpath(dir);
    for (const c of COLLECTIONS) {
      const cdir = join(real, c);
      await mkdir(cdir, { recursive: true });
      for (const name of await readdir(cdir)) {
        if (!name.startsWith(TEMP_PREFIX)) continue;
        const path = join(cdir, name);
        try {
          if (Date.now() - (await stat(path)).mtimeMs > STALE_TEMP_MS) {
            await unlink(path);
            log.warn('removed leftover temporary file', { path });
          }
        } catch {
          // Another process removed or renamed it meanwhile.
        }
      }
    }
    return new FilesStore(real);
  }

  /** The data directory (resolved). */
  get dir(): string {
    return this.#dir;
  }

  /** The changes to `collection` from now on, watched from the first call. */
  #changesOf(collection: Collection): Changes {
    let changes = this.#changes.get(collection);
    if (changes !== undefined) return changes;
    const c: Changes = { watcher: undefined, names: new Set(), all: true, markers: new Map() };
    try {
      c.watcher = watch(join(this.#dir, collection), { persistent: false }, (_event, name) => {
        if (typeof name !== 'string' || name === '') c.all = true;
        else if (c.markers.has(name)) c.markers.get(name)?.();
        else c.names.add(name);
      });
      c.watcher.on('error', () => {
        // Every file is looked at again, until a new watcher is started by the next list.
        c.all = true;
        c.watcher?.close();
        c.watcher = undefined;
        if (this.#changes.get(collection) === c) this.#changes.delete(collection);
      });
    } catch {
      // No watcher (no inotify, or its limits reached): every list looks at every file.
      c.watcher = undefined;
    }
    changes = c;
    this.#changes.set(collection, changes);
    return changes;
  }

  /**
   * Whether every change made to the collection's directory before this call has been reported
   * to its watcher: the kernel reports a directory's events in order, and the watcher's callback
   * sees them in that order, but not before the completion of a read started after them (a file
   * edited and listed at once). So a marker file is created and removed, and its event awaited:
   * what was queued before it has been seen. False when that fails (a read-only directory).
   */
  async #settled(changes: Changes, cdir: string): Promise<boolean> {
    if (changes.watcher === undefined) return false;
    const name = `${TEMP_PREFIX}list-${String(process.pid)}-${randomBytes(6).toString('hex')}`;
    let timer: NodeJS.Timeout | undefined;
    const seen = new Promise<boolean>((resolve) => {
      changes.markers.set(name, () => {
        resolve(true);
      });
      timer = setTimeout(() => {
        resolve(false);
      }, MARKER_TIMEOUT_MS);
    });
    try {
      const fh = await open(join(cdir, name), 'wx', 0o600);
      await fh.close();
      await unlink(join(cdir, name));
      return await seen;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      changes.markers.delete(name);
    }
  }

  async list(collection: Collection): Promise<StoredEntry[]> {
    const cdir = join(this.#dir, collection);
    // Watched from the first list: the next ones look only at the files changed since.
    const changes = this.#changesOf(collection);
    const settled = await this.#settled(changes, cdir);
    const before = this.#listed.get(collection);
    // The changes this list looks at; those reported from here on are for the next one.
    const changed = !settled || changes.all || before === undefined ? undefined : changes.names;
    changes.names = new Set();
    changes.all = false;
    // With every change since the last list known, the directory holds the files that list
    // read and those changed since (added, replaced or removed: each is looked at below): no
    // readdir, which made 10,000 names into strings at every reload (issue 33 item 4). Unless
    // that list also named files it did not read (their names are wrong): the directory says
    // whether they are still there.
    const names =
      changed === undefined || this.#unread.has(collection)
        ? await readdir(cdir)
        : [
            ...(this.#order.get(collection) ?? []),
            ...[...changed].filter((name) => before?.has(name) !== true),
          ];
    const seen = new Map<string, Listed>();
    const read = async (name: string): Promise<StoredEntry | undefined> => {
      const id = idOf(name);
      if (id === undefined) return undefined;
      if (safeFileNameOf(id) !== name) {
        return {
          id,
          problem: `${join(collection, name)}: not the file name of its ID; name it ${safeFileNameOf(id) ?? '(ID too long)'}`,
        };
      }
      const path = join(cdir, name);
      const known = before?.get(name);
      try {
        const gen = this.#writes;
        // A file whose inode, size and times are those of the last list holds the text read
        // then: one stat instead of open, read and close. Stat before read, so that a file
        // replaced in between is read again next time.
        const st = await stat(path, { bigint: true });
        const stamp = `${String(st.ino)}:${String(st.size)}:${String(st.mtimeNs)}:${String(st.ctimeNs)}`;
        if (known?.stamp === stamp && known.parsed) {
          seen.set(name, known);
          return parsedLater(id, known.text);
        }
        const text = known?.stamp === stamp ? known.text : await readFile(path, 'utf8');
        const listed: Listed = { id, stamp, text, parsed: false };
        seen.set(name, listed);
        if (gen === this.#writes) this.#remember(collection, id, text);
        const value = JSON.parse(text) as unknown;
        listed.parsed = true;
        return { id, value, text };
      } catch (err) {
        // Deleted between readdir and the read: it is simply gone.
        if (isErrno(err, 'ENOENT')) return undefined;
        return { id, problem: `${join(collection, name)}: ${errorMessage(err)}` };
      }
    };
    // Files are read LIST_CONCURRENCY at a time: one after another, a thousand APIs took a third
    // of a second, on every write (its conflict check) and every reload. Unchanged ones at once.
    // The same files as the last list (none added or removed): in its order, sorted by ID, so
    // that the entries need no sort.
    const previous = this.#order.get(collection);
    const sameFiles =
      previous !== undefined &&
      before !== undefined &&
      previous.length === names.length &&
      before.size === names.length &&
      names.every((name) => before.has(name));
    const order = sameFiles ? previous : names;
    const slots: (StoredEntry | undefined)[] = [];
    const pending: number[] = [];
    for (const name of order) {
      const known = before?.get(name);
      // Unchanged since the last list, which parsed it: no stat, no read, parsed when used.
      if (known?.parsed === true && changed !== undefined && !changed.has(name)) {
        seen.set(name, known);
        slots.push(parsedLater(known.id, known.text));
      } else {
        pending.push(slots.length);
        slots.push(undefined);
      }
    }
    for (let i = 0; i < pending.length; i += LIST_CONCURRENCY) {
      const batch = pending.slice(i, i + LIST_CONCURRENCY);
      const read1 = await Promise.all(batch.map((slot) => read(order[slot] ?? '')));
      batch.forEach((slot, k) => (slots[slot] = read1[k]));
    }
    // Each entry with its file name, in ID order; the names of the listed files kept for the next
    // list (a file with a problem is not one of them).
    const listed: { e: StoredEntry; name: string }[] = [];
    slots.forEach((e, k) => {
      if (e !== undefined) listed.push({ e, name: order[k] ?? '' });
    });
    if (!sameFiles) listed.sort((a, b) => (a.e.id < b.e.id ? -1 : a.e.id > b.e.id ? 1 : 0));
    this.#listed.set(collection, seen);
    this.#order.set(
      collection,
      listed.filter((x) => seen.has(x.name)).map((x) => x.name),
    );
    if (listed.some((x) => !seen.has(x.name))) this.#unread.add(collection);
    else this.#unread.delete(collection);
    return listed.map((x) => x.e);
  }

  async get(collection: Collection, id: string): Promise<unknown> {
    const path = join(this.#dir, collection, fileNameOf(id));
    let text = this.#cache.get(`${collection}/${id}`);
    if (text === ABSENT) return undefined;
    if (text === undefined) {
      // A write that lands while the disk is read must not be covered by the older copy.
      const gen = this.#writes;
      try {
        text = await readFile(path, 'utf8');
      } catch (err) {
        if (isErrno(err, 'ENOENT')) {
          if (gen === this.#writes) this.#remember(collection, id, ABSENT);
          return undefined;
        }
        throw err;
      }
      if (gen === this.#writes) this.#remember(collection, id, text);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw new SvcError(
        'GW_ERR_STORE_CORRUPT',
        `${join(collection, fileNameOf(id))}: ${errorMessage(err)}`,
        {
          cause: err,
        },
      );
    }
  }

  async put(collection: Collection, id: string, value: unknown, mode?: PutMode): Promise<PutOutcome> {
    const cdir = join(this.#dir, collection);
    const path = join(cdir, fileNameOf(id));
    const temp = join(cdir, `${TEMP_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`);
    const fh = await open(temp, 'wx', 0o600);
    const text = `${JSON.stringify(value, null, 2)}\n`;
    this.forget(collection, id);
    try {
      try {
        await fh.writeFile(text);
        await fh.sync();
      } finally {
        await fh.close();
      }
      let outcome: PutOutcome;
      if (mode === 'create') {
        // link() refuses an existing target: create-if-absent without a race.
        try {
          await link(temp, path);
          outcome = 'added';
        } catch (err) {
          if (!isErrno(err, 'EEXIST')) throw err;
          outcome = 'exists';
        }
      } else {
        const existed = await exists(path);
        if (mode === 'update' && !existed) {
          outcome = 'missing';
        } else {
          await rename(temp, path);
          outcome = existed ? 'modified' : 'added';
        }
      }
      if (outcome === 'added' || outcome === 'modified') {
        await syncDir(cdir);
        this.#remember(collection, id, text);
      }
      return outcome;
    } finally {
      await unlink(temp).catch(() => undefined);
    }
  }

  async delete(collection: Collection, id: string): Promise<boolean> {
    const cdir = join(this.#dir, collection);
    this.forget(collection, id);
    try {
      await unlink(join(cdir, fileNameOf(id)));
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return false;
      throw err;
    }
    await syncDir(cdir);
    return true;
  }

  forget(collection: Collection, id: string): void {
    this.#writes++;
    this.#cache.delete(`${collection}/${id}`);
  }

  #remember(collection: Collection, id: string, text: string | typeof ABSENT): void {
    const key = `${collection}/${id}`;
    this.#cache.delete(key);
    if (UNKEPT.has(collection)) return;
    if (this.#cache.size >= CACHE_MAX) {
      const oldest = this.#cache.keys().next();
      if (oldest.done !== true) this.#cache.delete(oldest.value);
    }
    this.#cache.set(key, text);
  }

  publish(message: GroupMessage): Promise<void> {
    this.#bus.emit('message', message);
    return Promise.resolve();
  }

  subscribe(handler: (message: GroupMessage) => void): () => void {
    this.#bus.on('message', handler);
    const off = (): void => {
      this.#bus.off('message', handler);
      this.#unsubscribers.delete(off);
    };
    this.#unsubscribers.add(off);
    return off;
  }

  subscribed(): Promise<void> {
    return Promise.resolve();
  }

  async health(): Promise<StoreHealth> {
    try {
      await stat(join(this.#dir, 'apis'));
      return { ok: true };
    } catch (err) {
      return { ok: false, message: errorMessage(err) };
    }
  }

  close(): Promise<void> {
    for (const off of [...this.#unsubscribers]) off();
    for (const c of this.#changes.values()) c.watcher?.close();
    this.#changes.clear();
    this.#cache.clear();
    return Promise.resolve();
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return false;
    throw err;
  }
}

/** Makes a rename or unlink durable. */
async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
