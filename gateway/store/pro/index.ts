/**
 * Mode pro (`--dashboard URL --node-secret ...`): the APIs and policies of the gateway's
 * organisations come from the dashboard, read-only; everything else (keys written through the
 * gateway, organisations' sessions, certificates, group messages) stays in the local store
 * (files or Redis), as do all counters (limits/).
 *
 * - Start: register as a node (`POST /system/nodes`), then read `/system/config` (every API and
 *   policy, with a revision). The last good answer is kept in `<data_dir>/dashboard-snapshot.json`,
 *   so a gateway restarted while the dashboard is down serves what it served before.
 * - Changes: a server-sent-event stream (`/system/notifications`) names each committed write;
 *   a change of an API or policy re-reads the configuration and, if its revision moved, sends a
 *   `reload` group message to this process; a key's change sends `changed` (the session cache
 *   forgets it); a key's quota reset (`quota-resets`) ends its quota periods in this gateway's
 *   counters (given as `counters`). While the stream is down, the configuration is polled every
 *   `dashboard_poll_interval_ms`; a reconnect re-reads it (changes may have been missed).
 * - Keys: fetched from the dashboard on a miss (`/system/keys/{hash}`), the session cache on
 *   top; a key the dashboard doesn't have is looked up in the local store; while the dashboard
 *   is unreachable the last copy fetched is used.
 * - Certificates: read from the dashboard on a miss (`/system/certs/{id}`): the PEM, and the
 *   private key sealed under the node secret, opened here and sealed again under the gateway
 *   secret as /svc/certs stores it (certs/certs.ts), so TLS listeners and upstream mTLS use
 *   certificates managed in the dashboard. Kept until a change names them (or the stream
 *   reconnects); the last copy serves while the dashboard is unreachable; one the dashboard
 *   doesn't have is looked up in the local store.
 * - OAuth clients: read from the dashboard on a miss (`/system/oauth-clients/{id}`), by the ID
 *   both sides compute (schemas/rules/oauth2.ts), so `{listen_path}oauth/token` authenticates the
 *   clients registered in the dashboard; the last copy serves while the dashboard is unreachable;
 *   one the dashboard doesn't have is looked up in the local store. They are written and listed
 *   in the dashboard only: the management API's client writes and lists are refused (403). The
 *   access tokens the gateway issues are keys of the local store. A change naming a client the
 *   dashboard no longer has (deleted, or its API deleted) deletes the tokens issued to it, and
 *   every one of this process's cached sessions of them is forgotten; so does a reconnect, for
 *   the changes it may have missed.
 * - OAuth access tokens: each one issued here is reported to the dashboard (tokens.ts),
 *   which lists them; a change naming one (`oauth-tokens`, its hash) makes this store report it
 *   again, and the dashboard's answer says whether it is revoked: then it is deleted, and every
 *   cached session of it forgotten. A reconnect reports every local token (issued, or revoked,
 *   while the stream was down).
 * - Unreachable dashboard: the last good configuration keeps serving; nothing is dropped.
 *
 * The registration, the calls and the notification stream (with polling while it is down) are
 * connection.ts, the configuration and its snapshot file config.ts, the certificates certs.ts,
 * the access tokens' reports tokens.ts; what each notification changes here is `#opened` and
 * `#changed`.
 */
import { randomUUID } from 'node:crypto';
import { SvcError, errorMessage } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/log.ts';
import { oauthClientDocId } from '../../../schemas/rules/oauth2.ts';
import type { GatewaySession } from '../../../schemas/generated/models.ts';
import { CERTS } from '../../certs/certs.ts';
import { counterIdOf, type Counters } from '../../limits/counters.ts';
import { dashboardRegistry } from '../../nodes/dashboard-registry.ts';
import type { NodeRegistry } from '../../nodes/registry.ts';
import type {
  Collection,
  GroupMessage,
  PutMode,
  PutOutcome,
  Store,
  StoreHealth,
  StoredEntry,
} from '../store.ts';
import { syncTokens, tokenRecordOf, tokensGone, type TokenRecord, type TokenSyncDeps } from './tokens.ts';
import { DashboardConnection, type DashboardChange, type DashboardConnectionOptions } from './connection.ts';
import { DashboardCerts } from './certs.ts';
import { DashboardConfig, type Snapshot } from './config.ts';

const LAST_KNOWN_KEYS = 10_000;
const KEY_ID = /^[0-9a-f]{64}$/;
/** Collections the dashboard owns: writing them through the gateway is refused. */
const MANAGED: readonly Collection[] = ['apis', 'policies', 'oauth-clients'];
/** Collections served from the configuration snapshot. */
const SNAPSHOT: readonly Collection[] = ['apis', 'policies'];
/** The store collection of OAuth clients (gateway/oauth2/clients.ts). */
const OAUTH_CLIENTS = 'oauth-clients' satisfies Collection;
/** The dashboard's kind of access-token records (a change names one it revoked). */
const OAUTH_TOKENS = 'oauth-tokens';
/** The dashboard's kind of quota-reset records (a change names a key whose quota was reset). */
const QUOTA_RESETS = 'quota-resets';

/** Options of a DashboardStore. */
export interface DashboardStoreOptions extends DashboardConnectionOptions {
  /** The gateway secret: certificates' keys are sealed under it once here. */
  gatewaySecret: string;
  /** Directory of the snapshot file. */
  dataDir: string;
  /** Where this gateway counts quotas: a key's quota reset in the dashboard ends its periods there. */
  counters?: Counters;
  log: Logger;
}

/** A write the dashboard owns, refused with what to do instead. */
export class ManagedByDashboardError extends SvcError {
  constructor(collection: Collection, url: string) {
    super(
      'GW_ERR_MANAGED_BY_DASHBOARD',
      `this gateway runs in mode pro: ${collection} are managed in the dashboard (${url}), read-only here; write them there (or through the operator)`,
      { status: 403 },
    );
  }
}

/** Keeps `value` as the last copy of `id` read, the oldest copy dropped beyond LAST_KNOWN_KEYS. */
function keepLast(known: Map<string, unknown>, id: string, value: unknown): void {
  if (known.size >= LAST_KNOWN_KEYS) {
    const first = known.keys().next().value;
    if (first !== undefined) known.delete(first);
  }
  known.set(id, value);
}

/** The store of a gateway in mode pro (see the file comment). */
export class DashboardStore implements Store {
  readonly #local: Store;
  readonly #opts: DashboardStoreOptions;
  readonly #log: Logger;
  readonly #handlers = new Set<(m: GroupMessage) => void>();
  readonly #lastKnownKeys = new Map<string, unknown>();
  /** OAuth clients last read from the dashboard, for while it is unreachable. */
  readonly #lastKnownClients = new Map<string, unknown>();
  readonly #origin = `dashboard:${randomUUID()}`;
  readonly #connection: DashboardConnection;
  readonly #config: DashboardConfig;
  readonly #certs: DashboardCerts;
  #lastError: string | undefined;
  /** Token revocations run one after another (a reconnect's sweep and a change's may overlap). */
  #revoking: Promise<void> = Promise.resolve();

  constructor(local: Store, opts: DashboardStoreOptions) {
    this.#local = local;
    this.#opts = { ...opts, url: opts.url.replace(/\/+$/, '') };
    this.#log = opts.log.child({ dashboard: this.#opts.url });
    this.#connection = new DashboardConnection(this.#opts, this.#log, {
      opened: () => {
        this.#opened();
      },
      changed: (c) => {
        this.#changed(c);
      },
      poll: () => this.#check('poll'),
      failed: (err) => {
        this.#failed(err);
      },
    });
    const call = (method: string, path: string): Promise<Response> => this.#connection.call(method, path);
    this.#config = new DashboardConfig({
      call,
      read: () => {
        this.#lastError = undefined;
      },
      dataDir: opts.dataDir,
      log: this.#log,
    });
    this.#certs = new DashboardCerts({
      call,
      failed: (err) => {
        this.#failed(err);
      },
      nodeSecret: this.#opts.nodeSecret,
      gatewaySecret: opts.gatewaySecret,
      log: this.#log,
    });
    this.#connection.start();
  }

  get kind(): Store['kind'] {
    return this.#local.kind;
  }

  get shared(): boolean {
    return this.#local.shared;
  }

  /** Whether the notification stream is open (for tests and `/hello`). */
  get streaming(): boolean {
    return this.#connection.streaming;
  }

  async list(collection: Collection): Promise<StoredEntry[]> {
    if (collection === OAUTH_CLIENTS) {
      // The local store has none of the dashboard's: an empty list would say there are none.
      throw new SvcError(
        'GW_ERR_MANAGED_BY_DASHBOARD',
        `this gateway runs in mode pro: OAuth clients are managed in the dashboard (${this.#opts.url}): list them there (GET /api/apis/oauth/{apiId})`,
        { status: 403 },
      );
    }
    if (!SNAPSHOT.includes(collection)) return this.#local.list(collection);
    const s = await this.#config.current();
    return collection === 'apis' ? s.apis : s.policies;
  }

  async get(collection: Collection, id: string): Promise<unknown> {
    if (collection === 'keys') return this.#key(id);
    if (collection === OAUTH_CLIENTS) return this.#client(id);
    if (collection === CERTS) return (await this.#certs.get(id)) ?? this.#local.get(collection, id);
    if (!SNAPSHOT.includes(collection)) return this.#local.get(collection, id);
    const s = this.#config.last ?? (await this.#config.current());
    const e = (collection === 'apis' ? s.apis : s.policies).find((x) => x.id === id);
    return e !== undefined && 'value' in e ? e.value : undefined;
  }

  async put(collection: Collection, id: string, value: unknown, mode?: PutMode): Promise<PutOutcome> {
    if (MANAGED.includes(collection)) throw new ManagedByDashboardError(collection, this.#opts.url);
    const outcome = await this.#local.put(collection, id, value, mode);
    // An access token issued here: the dashboard lists it and may revoke it.
    const record = collection === 'keys' && outcome !== 'exists' ? tokenRecordOf(id, value) : undefined;
    if (record !== undefined) this.#reportInBackground([record]);
    return outcome;
  }

  async delete(collection: Collection, id: string): Promise<boolean> {
    if (MANAGED.includes(collection)) throw new ManagedByDashboardError(collection, this.#opts.url);
    const token = collection === 'keys' ? tokenRecordOf(id, await this.#local.get('keys', id)) : undefined;
    const gone = await this.#local.delete(collection, id);
    // An access token revoked here (/svc/oauth/revoke): the dashboard lists it no more. (An
    // expired one it lists no more anyway: the sweep of expired tokens costs no calls.)
    const live = token !== undefined && (token.expires <= 0 || token.expires * 1000 > Date.now());
    if (gone && live)
      this.#queue('reporting oauth tokens to the dashboard failed', () =>
        tokensGone(this.#tokenDeps(), [id]),
      );
    return gone;
  }

  forget(collection: Collection, id: string): void {
    if (collection === 'keys') this.#lastKnownKeys.delete(id);
    if (collection === OAUTH_CLIENTS) this.#lastKnownClients.delete(id);
    if (collection === CERTS) this.#certs.delete(id);
    this.#local.forget(collection, id);
  }

  publish(message: GroupMessage): Promise<void> {
    return this.#local.publish(message);
  }

  subscribe(handler: (message: GroupMessage) => void): () => void {
    this.#handlers.add(handler);
    const off = this.#local.subscribe(handler);
    return () => {
      this.#handlers.delete(handler);
      off();
    };
  }

  subscribed(): Promise<void> {
    return this.#local.subscribed();
  }

  /** The gateways of an organisation are those connected to the dashboard: its registry. */
  nodeRegistry(): NodeRegistry {
    return dashboardRegistry(this.#connection);
  }

  async health(): Promise<StoreHealth> {
    const local = await this.#local.health();
    if (!local.ok) return local;
    return this.#lastError === undefined
      ? local
      : { ok: true, message: `dashboard unreachable, serving the last configuration: ${this.#lastError}` };
  }

  async close(): Promise<void> {
    this.#connection.close();
    await this.#local.close();
  }

  // --- configuration ---------------------------------------------------------------------

  /** Re-reads the configuration; when it moved, tells this process to reload. */
  async #check(reason: string): Promise<void> {
    // A read already under way may have started before the change was committed.
    await this.#config.settled();
    const before = this.#config.last;
    let after: Snapshot;
    try {
      after = await this.#config.refresh();
    } catch (err) {
      this.#failed(err);
      return;
    }
    if (before?.revision === after.revision) return;
    // Policies whose text changed: cached sessions applying them are dropped.
    const old = new Map((before?.policies ?? []).map((e) => [e.id, 'text' in e ? e.text : undefined]));
    for (const e of after.policies) {
      if (old.get(e.id) !== ('text' in e ? e.text : undefined)) this.#emitChanged('policies', e.id);
      old.delete(e.id);
    }
    for (const id of old.keys()) this.#emitChanged('policies', id);
    this.#log.info('dashboard configuration changed', { reason, revision: after.revision });
    this.#emit({ type: 'reload', origin: this.#origin });
  }

  /** Forgets the certificates read (they are read again when next asked for). */
  #forgetCerts(): void {
    if (this.#certs.clear()) this.#emit({ type: 'reload', origin: this.#origin });
  }

  #emit(m: GroupMessage): void {
    for (const h of this.#handlers) h(m);
  }

  #emitChanged(collection: Collection, id: string): void {
    this.#emit({ type: 'changed', origin: this.#origin, collection, id });
  }

  #failed(err: unknown): void {
    const message = errorMessage(err);
    if (this.#lastError !== message)
      this.#log.warn('dashboard unreachable, the last configuration keeps serving', { error: message });
    this.#lastError = message;
  }

  // --- keys ------------------------------------------------------------------------------

  async #key(id: string): Promise<unknown> {
    if (!KEY_ID.test(id)) return this.#local.get('keys', id);
    try {
      const res = await this.#connection.call('GET', `/system/keys/${id}`);
      if (res.status === 200) {
        const key = await res.json();
        keepLast(this.#lastKnownKeys, id, key);
        return key;
      }
      await res.body?.cancel();
      if (res.status !== 404) throw new Error(`GET /system/keys answered ${res.status}`);
      this.#lastKnownKeys.delete(id);
    } catch (err) {
      this.#failed(err);
      const known = this.#lastKnownKeys.get(id);
      if (known !== undefined) return known;
    }
    return this.#local.get('keys', id);
  }

  /**
   * A quota reset in the dashboard: the key's periods end here (every scope, as
   * `POST /svc/keys/{key}/reset` does). Each gateway told does it; on a shared Redis the second
   * reset finds the periods already ended. A key gone from the dashboard has nothing to reset.
   */
  #resetQuotaInBackground(id: string): void {
    const counters = this.#opts.counters;
    if (counters === undefined) return;
    this.#queue('a quota reset from the dashboard failed', async () => {
      const key = (await this.#key(id)) as GatewaySession | undefined;
      if (key === undefined) return;
      await counters.resetGroup(counterIdOf(id, key));
      this.#log.info('key quota reset by the dashboard', { key_hash: id });
    });
  }

  // --- OAuth clients ---------------------------------------------------------------------

  /** The dashboard's client `id`, null when it has none; throws when it can't be asked. */
  async #fetchClient(id: string): Promise<unknown> {
    const res = await this.#connection.call('GET', `/system/oauth-clients/${id}`);
    if (res.status === 200) {
      const client: unknown = await res.json();
      keepLast(this.#lastKnownClients, id, client);
      return client;
    }
    await res.body?.cancel();
    if (res.status !== 404) throw new Error(`GET /system/oauth-clients answered ${res.status}`);
    this.#lastKnownClients.delete(id);
    return null;
  }

  async #client(id: string): Promise<unknown> {
    if (!KEY_ID.test(id)) return this.#local.get(OAUTH_CLIENTS, id);
    try {
      const found = await this.#fetchClient(id);
      if (found !== null) return found;
    } catch (err) {
      this.#failed(err);
      const known = this.#lastKnownClients.get(id);
      if (known !== undefined) return known;
    }
    return this.#local.get(OAUTH_CLIENTS, id);
  }

  /**
   * Deletes the local access tokens issued to the clients `ids` (stored IDs) that neither the
   * dashboard nor the local store has; every cached session of them is forgotten. With `ids`
   * undefined, every client that tokens name is checked (after a reconnect). A client the
   * dashboard can't be asked about keeps its tokens. The deletion is spread to every process
   * that may cache a token (`spread`): each process of the node, and each gateway sharing the
   * store, sweeps on its own, and the first to delete a token is the only one to see it.
   */
  async #revokeTokensOfGone(ids: ReadonlySet<string> | undefined): Promise<void> {
    const byClient = new Map<string, string[]>();
    for (const e of await this.#local.list('keys')) {
      if (!('value' in e)) continue;
      const key = e.value as GatewaySession | undefined;
      if (key?.oauth_client_id === undefined || key.oauth_api_id === undefined) continue;
      const clientId = oauthClientDocId(key.oauth_api_id, key.oauth_client_id);
      if (ids !== undefined && !ids.has(clientId)) continue;
      byClient.set(clientId, [...(byClient.get(clientId) ?? []), e.id]);
    }
    for (const [clientId, tokens] of byClient) {
      if ((await this.#local.get(OAUTH_CLIENTS, clientId)) !== undefined) continue;
      try {
        if ((await this.#fetchClient(clientId)) !== null) continue;
      } catch (err) {
        this.#failed(err);
        continue;
      }
      const deleted = await this.#deleteTokens(tokens);
      this.#log.info('oauth tokens of a client gone from the dashboard deleted', {
        client: clientId,
        tokens: deleted,
      });
    }
  }

  /**
   * Deletes the local access tokens `ids` and forgets every cached session of them; answers how
   * many this process deleted. The process that deletes a token tells the others (the node's
   * workers, the gateways sharing the store): one that lists the tokens after it finds none to
   * forget.
   */
  async #deleteTokens(ids: readonly string[]): Promise<number> {
    let deleted = 0;
    for (const id of ids) {
      const gone = await this.#local.delete('keys', id);
      if (gone) deleted++;
      this.#lastKnownKeys.delete(id);
      this.#local.forget('keys', id);
      this.#emit({
        type: 'changed',
        origin: this.#origin,
        collection: 'keys',
        id,
        ...(gone ? { spread: true } : {}),
      });
    }
    return deleted;
  }

  /** Runs `job` after the token jobs queued before it (a reconnect's and a change's overlap). */
  #queue(failure: string, job: () => Promise<void>): void {
    this.#revoking = this.#revoking.then(job).catch((err: unknown) => {
      this.#log.warn(failure, { error: errorMessage(err) });
    });
  }

  /** Reports tokens (syncTokens: records, stored IDs, or all when undefined); the revoked ones go. */
  #reportInBackground(records: readonly (TokenRecord | string)[] | undefined): void {
    this.#queue('reporting oauth tokens to the dashboard failed', () =>
      syncTokens(this.#tokenDeps(), records),
    );
  }

  #tokenDeps(): TokenSyncDeps {
    return {
      call: (m, p, b) => this.#connection.call(m, p, b),
      local: this.#local,
      deleteTokens: (ids) => this.#deleteTokens(ids),
      failed: (err) => {
        this.#failed(err);
      },
      log: this.#log,
    };
  }

  #revokeInBackground(ids: ReadonlySet<string> | undefined): void {
    this.#queue('deleting the oauth tokens of a deleted client failed', () => this.#revokeTokensOfGone(ids));
  }

  // --- notifications ---------------------------------------------------------------------

  /** The notification stream is open: what changed while it was down is read again. */
  #opened(): void {
    // Changes to certificates may have been missed while the stream was down.
    this.#forgetCerts();
    void this.#check('connected');
    // Clients deleted while the stream was down: their tokens go now; so do tokens revoked
    // meanwhile, and the dashboard hears of those issued meanwhile.
    this.#revokeInBackground(undefined);
    this.#reportInBackground(undefined);
  }

  /** A change the dashboard names: what this store keeps of it is forgotten or read again. */
  #changed(c: DashboardChange): void {
    if (c.kind === 'certs' && typeof c.id === 'string') {
      // TLS listeners and upstream certificates are built at reload: read it again there.
      this.#certs.delete(c.id);
      this.#emitChanged(CERTS, c.id);
      this.#emit({ type: 'reload', origin: this.#origin });
    } else if (c.kind === OAUTH_CLIENTS && typeof c.id === 'string') {
      this.#lastKnownClients.delete(c.id);
      this.#emitChanged(OAUTH_CLIENTS, c.id);
      this.#revokeInBackground(new Set([c.id]));
    } else if (c.kind === OAUTH_TOKENS && typeof c.id === 'string') {
      // A revocation: this token (when this store has it) is reported again, to learn so.
      this.#reportInBackground([c.id]);
    } else if (c.kind === 'keys' && typeof c.id === 'string') {
      this.#lastKnownKeys.delete(c.id);
      this.#emitChanged('keys', c.id);
    } else if (c.kind === QUOTA_RESETS && typeof c.id === 'string' && KEY_ID.test(c.id)) {
      this.#resetQuotaInBackground(c.id);
    } else if (c.kind === 'apis' || c.kind === 'policies' || c.kind === 'organisations') {
      void this.#check(`${c.kind} changed`);
    }
  }
}
