import { Agent, request, type Dispatcher } from 'undici';
import type { GatewayApiDefinition, GatewayPolicy } from '../../schemas/generated/models.ts';
import { InputError, SvcError, TransientError, errorMessage } from '../../lib/errors.ts';
import { certificateHint } from './certificate-hint.ts';
import type { Connection, ManagementClient, OasDocument } from './management.ts';

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
  readonly #auth: string;
  readonly #agent: Dispatcher;
  readonly #opts: Required<GatewayClientOptions>;
  readonly #reloads: ReloadBatcher;

  constructor(conn: Connection, opts: GatewayClientOptions = {}) {
    this.url = conn.url.replace(/\/+$/, '');
    this.#auth = conn.auth;
    this.#opts = { reloadQuietMs: 50, reloadMaxWaitMs: 500, timeoutMs: 10_000, ...opts };
    this.#agent = new Agent({
      connections: 16,
      keepAliveTimeout: 30_000,
      connect: { rejectUnauthorized: !conn.insecureSkipVerify, timeout: this.#opts.timeoutMs },
      headersTimeout: this.#opts.timeoutMs,
      bodyTimeout: this.#opts.timeoutMs,
    });
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

  deletePolicy(id: string): Promise<boolean> {
    return this.#delete('policies', id);
  }

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

  async close(): Promise<void> {
    await this.#agent.close();
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

  async #call(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body?: unknown,
    allowed: number[] = [],
  ): Promise<{ status: number; body: unknown }> {
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${this.url}${path}`, {
        method,
        dispatcher: this.#agent,
        headers: {
          'x-svc-authorization': this.#auth,
          ...(body === undefined
            ? {}
            : { 'content-type': typeof body === 'string' ? 'application/x-pem-file' : 'application/json' }),
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
    } catch (err) {
      throw new TransientError(
        'OP_ERR_GATEWAY_UNREACHABLE',
        `gateway ${this.url} unreachable: ${errorMessage(err)}${certificateHint(err)}`,
        {
          cause: err,
        },
      );
    }
    const text = await res.body.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      // Not JSON: keep the text for the message.
    }
    const status = res.statusCode;
    if ((status >= 200 && status < 300) || allowed.includes(status)) return { status, body: parsed };
    const message = messageOf(parsed) ?? text.slice(0, 200);
    const what = `gateway ${method} ${path}: ${status} ${message}`;
    if (status === 429 || status >= 500)
      throw new TransientError('OP_ERR_GATEWAY_UNAVAILABLE', what, { status });
    if (status === 401 || status === 403) throw new SvcError('OP_ERR_GATEWAY_UNAUTHORIZED', what, { status });
    if (status === 409) throw new TransientError('OP_ERR_GATEWAY_CONFLICT', what, { status });
    throw new InputError('OP_ERR_GATEWAY_REJECTED', what, { status });
  }
}

function messageOf(body: unknown): string | undefined {
  if (body !== null && typeof body === 'object' && 'message' in body && typeof body.message === 'string') {
    return body.message;
  }
  return undefined;
}

/**
 * Coalesces reload requests: the first request of a burst starts a timer; each further request
 * pushes it back by `quietMs`, never past `maxWaitMs` from the first. Requests arriving while a
 * reload runs join the next one, so every caller's write is covered by a reload that started
 * after it.
 */
export class ReloadBatcher {
  readonly #run: () => Promise<void>;
  readonly #quietMs: number;
  readonly #maxWaitMs: number;
  #waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  #timer: NodeJS.Timeout | undefined;
  #firstAt = 0;
  #running = false;

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
    if (this.#timer) clearTimeout(this.#timer);
    else this.#firstAt = now;
    const delay = Math.max(0, Math.min(this.#quietMs, this.#firstAt + this.#maxWaitMs - now));
    this.#timer = setTimeout(() => void this.#fire(), delay);
  }

  async #fire(): Promise<void> {
    this.#timer = undefined;
    const batch = this.#waiters;
    this.#waiters = [];
    this.#running = true;
    try {
      await this.#run();
      for (const w of batch) w.resolve();
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      this.#running = false;
      if (this.#waiters.length > 0) this.#arm();
    }
  }
}
