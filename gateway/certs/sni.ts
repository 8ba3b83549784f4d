/**
 * Per-API certificates on HTTPS listeners: each served API's `certificates` (IDs of stored
 * certificates with private keys) answer TLS handshakes whose SNI is the API's `domain`, and those
 * of an API without a domain every other name on its port (`listen_port`: a Gateway API listener
 * without a hostname); other names get the gateway's own certificate (`tls_cert_file`), or, on a
 * gateway without one, are refused at the handshake (schemas/rules/https.ts). Built at every reload from the new
 * route table and swapped with it, so a certificate added, changed or removed takes effect at the
 * next reload while open connections go on (`SNICallback` reads the current table per handshake).
 */
import { createSecureContext, type SecureContext } from 'node:tls';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { wildcardCovers } from '../../schemas/rules/api-definition.ts';
import { normalizeHost } from '../pipeline/router.ts';
import type { Store } from '../store/store.ts';
import { loadCertMaterial } from './certs.ts';

/**
 * Host name -> TLS context; `*.example.com` entries cover deeper names, those named in
 * `oneLabel` (APIs with `domain_wildcard_one_label`) names exactly one label deeper, as the
 * router matches them.
 */
export class SniTable {
  readonly #exact: ReadonlyMap<string, SecureContext>;
  /** Wildcards, the longest first and, of one name, the one-label entry first. */
  readonly #wildcards: readonly { name: string; oneLabel: boolean; ctx: SecureContext }[];

  /** Port -> the certificate of the domainless HTTPS APIs on it. */
  readonly #ports: ReadonlyMap<number, SecureContext>;

  constructor(
    entries: ReadonlyMap<string, SecureContext> = new Map(),
    oneLabel: ReadonlyMap<string, SecureContext> = new Map(),
    ports: ReadonlyMap<number, SecureContext> = new Map(),
  ) {
    this.#ports = ports;
    const exact = new Map<string, SecureContext>();
    const wild: { name: string; oneLabel: boolean; ctx: SecureContext }[] = [];
    for (const [name, ctx] of entries) {
      if (name.startsWith('*.')) wild.push({ name, oneLabel: false, ctx });
      else exact.set(name, ctx);
    }
    for (const [name, ctx] of oneLabel) if (name.startsWith('*.')) wild.push({ name, oneLabel: true, ctx });
    this.#exact = exact;
    this.#wildcards = wild.sort(
      (a, b) => b.name.length - a.name.length || Number(b.oneLabel) - Number(a.oneLabel),
    );
  }

  /**
   * The context for a client's SNI name on a listener's port: the API certificate of the name,
   * else the one of the port's domainless APIs, else undefined (the gateway's own certificate,
   * or a refused handshake where it has none).
   */
  lookup(servername: string, port?: number): SecureContext | undefined {
    const name = normalizeHost(servername);
    const hit = this.#exact.get(name);
    if (hit !== undefined) return hit;
    for (const w of this.#wildcards) if (wildcardCovers(w.name, w.oneLabel, name)) return w.ctx;
    return port === undefined ? undefined : this.#ports.get(port);
  }
}

/**
 * The SNI table of the APIs served: the first of an API's `certificates` that is stored with its
 * private key serves its domain (without a domain: its port). One that is missing or has no key is logged and skipped (the
 * default certificate answers), so a deleted certificate never blocks a reload.
 */
export async function buildSniTable(
  apis: readonly GatewayApiDefinition[],
  store: Store,
  gatewaySecret: string,
  log: Logger,
): Promise<SniTable> {
  const anyDepth = new Map<string, SecureContext>();
  const oneLabel = new Map<string, SecureContext>();
  const ports = new Map<number, SecureContext>();
  for (const api of apis) {
    const domain = normalizeHost(api.domain ?? '');
    const ids = api.certificates ?? [];
    const port = api.listen_port ?? 0;
    if (api.protocol !== 'https' || ids.length === 0) continue;
    const byName = api.domain_wildcard_one_label === true && domain.startsWith('*.') ? oneLabel : anyDepth;
    if (domain === '' ? ports.has(port) : byName.has(domain)) continue;
    const set = (ctx: SecureContext): void => {
      if (domain === '') ports.set(port, ctx);
      else byName.set(domain, ctx);
    };
    for (const id of ids) {
      const material = await loadCertMaterial(store, id, gatewaySecret);
      if (material?.key === undefined) {
        log.warn('api certificate not usable', {
          api_id: api.api_id,
          cert_id: id,
          reason: material === undefined ? 'not found' : 'no private key',
        });
        continue;
      }
      try {
        set(createSecureContext({ cert: material.cert, key: material.key }));
        break;
      } catch (err) {
        log.warn('api certificate not usable', {
          api_id: api.api_id,
          cert_id: id,
          reason: errorMessage(err),
        });
      }
    }
  }
  return new SniTable(anyDepth, oneLabel, ports);
}
