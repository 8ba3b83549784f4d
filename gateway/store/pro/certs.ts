/**
 * Certificates of a gateway in mode pro read from the dashboard on a miss (`/system/certs/{id}`):
 * the PEM, and the private key sealed under the node secret, opened here and sealed again under
 * the gateway secret as /svc/certs stores it (certs/certs.ts), so TLS listeners and upstream mTLS
 * use certificates managed in the dashboard. Kept until a change names them (or the stream
 * reconnects); one the dashboard doesn't have is remembered as such.
 */
import { errorMessage } from '../../../lib/errors.ts';
import type { Logger } from '../../../lib/log.ts';
import { CERT_KEY_TO_NODE, unseal } from '../../../lib/seal.ts';
import { parseUpload, type StoredCert } from '../../certs/certs.ts';

/** What DashboardCerts needs. */
export interface DashboardCertsOptions {
  call: (method: string, path: string) => Promise<Response>;
  /** Told when the dashboard can't be asked. */
  failed: (err: unknown) => void;
  nodeSecret: string;
  gatewaySecret: string;
  log: Logger;
}

/** The certificates read from the dashboard, by ID. */
export class DashboardCerts {
  /** By ID; undefined: the dashboard has none of that ID. */
  readonly #certs = new Map<string, StoredCert | undefined>();
  readonly #opts: DashboardCertsOptions;

  constructor(opts: DashboardCertsOptions) {
    this.#opts = opts;
  }

  /** The certificate `id` as the dashboard has it, undefined when it has none (or can't be read). */
  async get(id: string): Promise<StoredCert | undefined> {
    if (this.#certs.has(id)) return this.#certs.get(id);
    let answer: { id: string; org_id: string; pem: string; private_key?: string } | undefined;
    try {
      const res = await this.#opts.call('GET', `/system/certs/${encodeURIComponent(id)}`);
      if (res.status === 200) answer = (await res.json()) as typeof answer;
      else {
        await res.body?.cancel();
        if (res.status !== 404) throw new Error(`GET /system/certs answered ${res.status}`);
      }
    } catch (err) {
      // Unreachable: nothing known yet is a miss (the local store answers), not a failure to cache.
      this.#opts.failed(err);
      return undefined;
    }
    let found: StoredCert | undefined;
    try {
      found = answer === undefined ? undefined : await this.#storedCert(answer);
    } catch (err) {
      this.#opts.log.warn('certificate from the dashboard not usable', {
        cert_id: id,
        error: errorMessage(err),
      });
    }
    this.#certs.set(id, found);
    return found;
  }

  /** Forgets the certificate `id` (it is read again when next asked for). */
  delete(id: string): void {
    this.#certs.delete(id);
  }

  /** Forgets every certificate read; answers whether there were any. */
  clear(): boolean {
    if (this.#certs.size === 0) return false;
    this.#certs.clear();
    return true;
  }

  /** A certificate from the dashboard as /svc/certs stores it: its key sealed under the gateway secret. */
  async #storedCert(c: {
    id: string;
    org_id: string;
    pem: string;
    private_key?: string;
  }): Promise<StoredCert> {
    let key = '';
    if (c.private_key !== undefined) {
      const opened = unseal(c.private_key, this.#opts.nodeSecret, CERT_KEY_TO_NODE);
      // Never the key itself in a log: only that it could not be opened.
      if (opened === undefined)
        this.#opts.log.warn('certificate key from the dashboard not readable', { cert_id: c.id });
      else key = `\n${opened}`;
    }
    const stored = await parseUpload(`${c.pem}${key}`, c.org_id, this.#opts.gatewaySecret, Date.now());
    if (stored.id !== c.id)
      this.#opts.log.warn('certificate from the dashboard under another ID', {
        cert_id: c.id,
        id: stored.id,
      });
    return stored;
  }
}
