/**
 * Per-API certificates on HTTPS listeners: each served API's `certificates` (IDs of stored
 * certificates with private keys) answer TLS handshakes whose SNI is the API's `domain`; other
 * names get the gateway's own certificate (`tls_cert_file`). Built at every reload from the new
 * route table and swapped with it, so a certificate added, changed or removed takes effect at the
 * next reload while open connections go on (`SNICallback` reads the current table per handshake).
 */
import { createSecureContext, type SecureContext } from 'node:tls';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { normalizeHost } from '../pipeline/router.ts';
import type { Store } from '../store/store.ts';
import { loadCertMaterial } from './certs.ts';

/** Host name -> TLS context; `*.example.com` entries cover deeper names. */
export class SniTable {
  readonly #exact: ReadonlyMap<string, SecureContext>;
  /** Suffixes (`.example.com`), longest first. */
  readonly #wildcards: readonly [string, SecureContext][];

  constructor(entries: ReadonlyMap<string, SecureContext> = new Map()) {
    const exact = new Map<string, SecureContext>();
    const wild: [string, SecureContext][] = [];
    for (const [name, ctx] of entries) {
      if (name.startsWith('*.')) wild.push([name.slice(1), ctx]);
      else exact.set(name, ctx);
    }
    this.#exact = exact;
    this.#wildcards = wild.sort((a, b) => b[0].length - a[0].length);
  }

  /** The context for a client's SNI name, or undefined (the listener's default certificate). */
  lookup(servername: string): SecureContext | undefined {
    const name = normalizeHost(servername);
    const hit = this.#exact.get(name);
    if (hit !== undefined) return hit;
    for (const [suffix, ctx] of this.#wildcards) if (name.endsWith(suffix)) return ctx;
    return undefined;
  }
}

/**
 * The SNI table of the APIs served: the first of an API's `certificates` that is stored with its
 * private key serves its domain. One that is missing or has no key is logged and skipped (the
 * default certificate answers), so a deleted certificate never blocks a reload.
 */
export async function buildSniTable(
  apis: readonly GatewayApiDefinition[],
  store: Store,
  gatewaySecret: string,
  log: Logger,
): Promise<SniTable> {
  const entries = new Map<string, SecureContext>();
  for (const api of apis) {
    const domain = normalizeHost(api.domain ?? '');
    const ids = api.certificates ?? [];
    if (api.protocol !== 'https' || domain === '' || ids.length === 0 || entries.has(domain)) continue;
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
        entries.set(domain, createSecureContext({ cert: material.cert, key: material.key }));
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
  return new SniTable(entries);
}
