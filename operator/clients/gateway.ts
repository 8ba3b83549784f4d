import type { GatewayApiDefinition, GatewayPolicy, GatewaySession } from '../../schemas/generated/models.ts';
import {
  appliedList,
  type AppliedBy,
  type AppliedOf,
  type Connection,
  type KeyOps,
  type ManagementClient,
  type OasDocument,
} from './management.ts';
import { ManagementTransport, type CallResult, type Method } from './transport.ts';

/** Options of {@link GatewayClient}. */
export interface GatewayClientOptions {
  /** Quiet time that ends a burst of reload requests. */
  reloadQuietMs?: number;
  /** Longest a reload request waits for its burst to end. */
  reloadMaxWaitMs?: number;
  /** Time-out of each call. */
  timeoutMs?: number;
}

/** The gateway's management API (`/svc/...`), mode ce. */
export class GatewayClient implements ManagementClient {
  readonly url: string;
  readonly #http: ManagementTransport;
  readonly #opts: Required<GatewayClientOptions>;
  readonly #reloads: ReloadBatcher;

  constructor(conn: Connection, opts: GatewayClientOptions = {}) {
    this.#opts = { reloadQuietMs: 50, reloadMaxWaitMs: 500, timeoutMs: 10_000, ...opts };
    this.#http = new ManagementTransport({
      peer: 'gateway',
      url: conn.url,
      auth: { header: 'x-svc-authorization', value: conn.auth },
      insecureSkipVerify: conn.insecureSkipVerify,
      timeoutMs: this.#opts.timeoutMs,
      textType: 'application/x-pem-file',
    });
    this.url = this.#http.url;
    this.#reloads = new ReloadBatcher(
      async () => {
        await this.#call('GET', '/svc/reload/group');
      },
      this.#opts.reloadQuietMs,
      this.#opts.reloadMaxWaitMs,
    );
  }

  getApi(id: string): Promise<GatewayApiDefinition | undefined> {
    return this.#get<GatewayApiDefinition>('apis', id);
  }

  async createApi(def: GatewayApiDefinition): Promise<void> {
    await this.#call('POST', '/svc/apis', def);
  }

  async updateApi(id: string, def: GatewayApiDefinition): Promise<void> {
    await this.#call('PUT', `/svc/apis/${encodeURIComponent(id)}`, def);
  }

  updateApiIfExists(id: string, def: GatewayApiDefinition): Promise<boolean> {
    return this.#putIfExists(`/svc/apis/${encodeURIComponent(id)}`, def);
  }

  /** PUT that answers 404 when the gateway has nothing at `path`: false then, nothing written. */
  async #putIfExists(path: string, body: unknown): Promise<boolean> {
    const res = await this.#call('PUT', path, body, [404]);
    return res.status !== 404;
  }

  deleteApi(id: string): Promise<boolean> {
    return this.#delete('apis', id);
  }

  getOasApi(id: string): Promise<OasDocument | undefined> {
    return this.#get<OasDocument>('apis/oas', id);
  }

  async createOasApi(doc: OasDocument): Promise<void> {
    await this.#call('POST', '/svc/apis/oas', doc);
  }

  async updateOasApi(id: string, doc: OasDocument): Promise<void> {
    await this.#call('PUT', `/svc/apis/oas/${encodeURIComponent(id)}`, doc);
  }

  updateOasApiIfExists(id: string, doc: OasDocument): Promise<boolean> {
    return this.#putIfExists(`/svc/apis/oas/${encodeURIComponent(id)}`, doc);
  }

  deleteOasApi(id: string): Promise<boolean> {
    return this.#delete('apis/oas', id);
  }

  getPolicy(id: string): Promise<GatewayPolicy | undefined> {
    return this.#get<GatewayPolicy>('policies', id);
  }

  async createPolicy(policy: GatewayPolicy): Promise<void> {
    await this.#call('POST', '/svc/policies', policy);
  }

  async updatePolicy(id: string, policy: GatewayPolicy): Promise<void> {
    await this.#call('PUT', `/svc/policies/${encodeURIComponent(id)}`, policy);
  }

  updatePolicyIfExists(id: string, policy: GatewayPolicy): Promise<boolean> {
    return this.#putIfExists(`/svc/policies/${encodeURIComponent(id)}`, policy);
  }

  deletePolicy(id: string): Promise<boolean> {
    return this.#delete('policies', id);
  }

  /**
   * `/svc/keys`: created by value (a certificate-bound key by its certificate, `/svc/keys/create`),
   * then named by hash (`?hashed=true`); updates keep counters.
   */
  readonly keys: KeyOps = {
    get: async (keyHash) => {
      const path = `/svc/keys/${encodeURIComponent(keyHash)}?hashed=true`;
      const res = await this.#call('GET', path, undefined, [404]);
      return res.status === 404 ? undefined : (res.body as GatewaySession);
    },
    create: async (raw, session, opts) => {
      const keep = opts?.keepCounters === true ? '?suppress_reset=1' : '';
      // A key bound to a certificate (dynamic mTLS) is created from it: the gateway derives its
      // ID from the organisation and the certificate (`raw` is that ID, not sent).
      const path =
        (session.certificate ?? '') === '' ? `/svc/keys/${encodeURIComponent(raw)}` : '/svc/keys/create';
      await this.#call('POST', `${path}${keep}`, session);
    },
    update: async (keyHash, session) => {
      const path = `/svc/keys/${encodeURIComponent(keyHash)}?hashed=true&suppress_reset=1`;
      await this.#call('PUT', path, session);
    },
    delete: async (keyHash) => {
      const path = `/svc/keys/${encodeURIComponent(keyHash)}?hashed=true`;
      const res = await this.#call('DELETE', path, undefined, [404]);
      return res.status !== 404;
    },
  };

  async addCert(pem: string, orgId: string): Promise<boolean> {
    const path = `/svc/certs?org_id=${encodeURIComponent(orgId)}`;
    const res = await this.#call('POST', path, pem, [409]);
    return res.status !== 409;
  }

  async deleteCert(id: string): Promise<boolean> {
    const res = await this.#call('DELETE', `/svc/certs/${encodeURIComponent(id)}`, undefined, [404]);
    return res.status !== 404;
  }

  reload(): Promise<void> {
    return this.#reloads.request();
  }

  /** `GET /svc/nodes/{apis|policies}/{id}`; undefined on 404 (a gateway that does not report). */
  async appliedBy(of: AppliedOf): Promise<AppliedBy[] | undefined> {
    const path = `/svc/nodes/${of.kind}/${encodeURIComponent(of.id)}`;
    const res = await this.#call('GET', path, undefined, [404]);
    if (res.status === 404) return undefined;
    return appliedList(res.body, of.kind === 'apis' ? 'api' : 'policy');
  }

  async close(): Promise<void> {
    await this.#http.close();
  }

  /** A document of a collection, or undefined on 404. */
  async #get<T>(collection: 'apis' | 'apis/oas' | 'policies', id: string): Promise<T | undefined> {
    const res = await this.#call('GET', `/svc/${collection}/${encodeURIComponent(id)}`, undefined, [404]);
    return res.status === 404 ? undefined : (res.body as T);
  }

  /** Deletes a document of a collection; false when there was none. */
  async #delete(collection: 'apis' | 'apis/oas' | 'policies', id: string): Promise<boolean> {
    const res = await this.#call('DELETE', `/svc/${collection}/${encodeURIComponent(id)}`, undefined, [404]);
    return res.status !== 404;
  }

  #call(method: Method, path: string, body?: unknown, allowed: number[] = []): Promise<CallResult> {
    return this.#http.call(method, path, body, allowed);
  }
}

/**
 * Coalesces reload requests: the first request of a burst starts a timer; each further request
 * pushes it back by `quietMs`, never past `maxWaitMs` from the first. Requests arriving while a
 * reload runs join the next one, so every caller's write is covered by a reload that started
 * after it. A request that comes after at least as long without a reload as the last reload
 * took (IDLE_MIN_MS at least, `quietMs` at most) is no burst: its reload starts at once (with the
 * requests of the same moment), so that one change is served without waiting the quiet time
 * (issue 33 item 2), and reloads still keep the gateway busy half the time at most; the requests
 * that come while it runs wait as before.
 */
/** The shortest time without a reload after which a request is no burst, ms. */
const IDLE_MIN_MS = 10;

export class ReloadBatcher {
  readonly #run: () => Promise<void>;
  readonly #quietMs: number;
  readonly #maxWaitMs: number;
  #waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  #timer: NodeJS.Timeout | undefined;
  #firstAt = 0;
  #running = false;
  /** When the last reload ended (0: none yet), and how long it took. */
  #lastEndAt = 0;
  #lastTookMs = 0;
  /** Whether the pending timer starts a reload at once (no burst before it). */
  #immediate = false;

  constructor(run: () => Promise<void>, quietMs: number, maxWaitMs: number) {
    this.#run = run;
    this.#quietMs = quietMs;
    this.#maxWaitMs = maxWaitMs;
  }

  /** Resolves when a reload that started after this call has finished. */
  request(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
      this.#arm();
    });
  }

  #arm(): void {
    if (this.#running) return;
    const now = Date.now();
    if (this.#timer === undefined) {
      this.#firstAt = now;
      // No reload for as long as the last one took: no burst to wait for.
      const idleMs = Math.min(this.#quietMs, Math.max(IDLE_MIN_MS, this.#lastTookMs));
      this.#immediate = now - this.#lastEndAt >= idleMs;
    } else if (this.#immediate) {
      return; // It starts at once, with this request.
    } else clearTimeout(this.#timer);
    const delay = this.#immediate
      ? 0
      : Math.max(0, Math.min(this.#quietMs, this.#firstAt + this.#maxWaitMs - now));
    this.#timer = setTimeout(() => void this.#fire(), delay);
  }

  async #fire(): Promise<void> {
    this.#timer = undefined;
    const batch = this.#waiters;
    this.#waiters = [];
    this.#running = true;
    const startedAt = Date.now();
    try {
      await this.#run();
      for (const w of batch) w.resolve();
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      this.#running = false;
      this.#lastEndAt = Date.now();
      this.#lastTookMs = this.#lastEndAt - startedAt;
      if (this.#waiters.length > 0) this.#arm();
    }
  }
}
