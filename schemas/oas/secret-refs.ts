/**
 * What an SvcOasApiDefinition's certificates by Secret (`spec.clientCertificate`,
 * `spec.mutualTLS`, `spec.certificatePinning`, `spec.customDomain`, the reference's
 * TykOasApiDefinition forms) make of
 * its document, as the reference's operator does it: each `enabled` is written over the
 * document's, and the Secrets' certificate IDs and pins are added to what the document lists
 * (`server.clientCertificates.allowlist`, `upstream.mutualTLS.domainToCertificateMapping`,
 * `upstream.certificatePinning.domainToPublicKeysMapping`, `server.customDomain.certificates`). The document names certificates by
 * gateway ID only. Read by the operator (with the uploaded IDs) and the webhook (which checks
 * the spec's entries at their own paths).
 */
import type { SvcOasApiDefinitionSpec } from '../generated/kinds.ts';
import { isUpstreamHost } from '../rules/api-definition.ts';
import { quote, type FieldProblem } from '../rules/field-problem.ts';
import { list } from '../rules/read.ts';
import { EXT, obj, type Json } from './document.ts';

/** The spec fields that name Secrets. */
export type OasCertificateSpec = Pick<
  SvcOasApiDefinitionSpec,
  'clientCertificate' | 'mutualTLS' | 'certificatePinning' | 'customDomain'
>;

/** What the Secrets hold, by Secret name: an uploaded certificate's ID, a public-key pin. */
export interface OasSecretValues {
  certificateId: (secretName: string) => string;
  publicKeyPin: (secretName: string) => string;
}

/** The object at `key` of `parent`, created when absent (a non-object is left alone: the schema refuses it). */
function child(parent: Json, key: string): Json | undefined {
  if (parent[key] === undefined) parent[key] = {};
  return obj(parent[key]);
}

const hostKey = (domain: unknown): string => (typeof domain === 'string' ? domain.trim().toLowerCase() : '');

/**
 * The spec's entries that can't be served as written: a domain that is not an upstream host, a
 * domain the document maps a certificate to as well (one of the two would silently lose).
 * `doc` is the document when known (the webhook may not have it).
 */
export function oasSecretRefProblems(
  spec: Partial<Record<keyof OasCertificateSpec, unknown>> | undefined,
  doc?: unknown,
): FieldProblem[] {
  const out: FieldProblem[] = [];
  const upstream = obj(obj(obj(doc)?.[EXT])?.upstream);
  const documentDomains = new Set(
    list(obj(upstream?.mutualTLS)?.domainToCertificateMapping).map((e) => hostKey(obj(e)?.domain)),
  );
  const hosts = (field: 'mutualTLS' | 'certificatePinning', listField: string, entries: unknown): void => {
    list(entries).forEach((e, i) => {
      const domain = obj(e)?.domain;
      if (typeof domain !== 'string') return;
      const at = `spec.${field}.${listField}[${String(i)}].domain`;
      if (!isUpstreamHost(domain)) {
        out.push({
          path: at,
          type: 'Invalid',
          message: `${quote(domain)} is not an upstream host: write one such as api.example.com, *.example.com for its subdomains, or * for any host (no scheme, no port)`,
        });
      } else if (field === 'mutualTLS' && documentDomains.has(hostKey(domain))) {
        out.push({
          path: at,
          type: 'Invalid',
          message: `${quote(domain)} is mapped in the document too (${EXT}.upstream.mutualTLS.domainToCertificateMapping): a host is presented one certificate; keep one of the two entries`,
        });
      }
    });
  };
  const mutualTLS = obj(spec?.mutualTLS);
  if (mutualTLS?.enabled === true)
    hosts('mutualTLS', 'domainToCertificateMapping', mutualTLS.domainToCertificateMapping);
  const pinning = obj(spec?.certificatePinning);
  if (pinning?.enabled === true)
    hosts('certificatePinning', 'domainToPublicKeysMapping', pinning.domainToPublicKeysMapping);
  return out;
}

/**
 * Writes the spec's certificates into `doc` (changed in place; its extension must be an object,
 * else nothing is written and the document's own check refuses it).
 */
export function applyOasSecretRefs(doc: Json, spec: OasCertificateSpec, values: OasSecretValues): void {
  const ext = obj(doc[EXT]);
  if (ext === undefined) return;
  const { clientCertificate: client, mutualTLS, certificatePinning: pinning } = spec;
  if (client !== undefined) {
    const server = child(ext, 'server');
    const target = server && child(server, 'clientCertificates');
    if (target) {
      target.enabled = client.enabled;
      if (client.enabled) {
        const ids = (client.allowlist ?? []).map((name) => values.certificateId(name));
        target.allowlist = [...new Set([...list(target.allowlist), ...ids])];
      }
    }
  }
  if (spec.customDomain !== undefined) applyCustomDomain(ext, spec.customDomain, values);
  const upstream = (mutualTLS ?? pinning) === undefined ? undefined : child(ext, 'upstream');
  if (mutualTLS !== undefined && upstream) {
    const target = child(upstream, 'mutualTLS');
    if (target) {
      target.enabled = mutualTLS.enabled;
      if (mutualTLS.enabled) {
        target.domainToCertificateMapping = [
          ...list(target.domainToCertificateMapping),
          ...(mutualTLS.domainToCertificateMapping ?? []).map((m) => ({
            domain: m.domain,
            certificate: values.certificateId(m.certificateRef),
          })),
        ];
      }
    }
  }
  if (pinning !== undefined && upstream) {
    const target = child(upstream, 'certificatePinning');
    if (target) {
      target.enabled = pinning.enabled;
      if (pinning.enabled) {
        const entries = list(target.domainToPublicKeysMapping).map((e) => ({ ...obj(e) }));
        for (const m of pinning.domainToPublicKeysMapping ?? []) {
          const pins = m.publicKeyRefs.map((name) => values.publicKeyPin(name));
          // Pins by Secret add to the host's pins written in the document: a host may have several.
          const same = entries.find((e) => hostKey(e.domain) === hostKey(m.domain));
          if (same) same.publicKeys = [...list(same.publicKeys), ...pins];
          else entries.push({ domain: m.domain, publicKeys: pins });
        }
        target.domainToPublicKeysMapping = entries;
      }
    }
  }
}

/**
 * `spec.customDomain`: `enabled` over the document's `server.customDomain.enabled`, `name` (when
 * set) over its name, and the Secrets' certificate IDs added to its `certificates`.
 */
function applyCustomDomain(
  ext: Json,
  domain: NonNullable<OasCertificateSpec['customDomain']>,
  values: OasSecretValues,
): void {
  const server = child(ext, 'server');
  const target = server && child(server, 'customDomain');
  if (!target) return;
  target.enabled = domain.enabled;
  if (!domain.enabled) return;
  if (domain.name !== undefined && domain.name !== '') target.name = domain.name;
  const ids = (domain.certificatesRef ?? []).map((name) => values.certificateId(name));
  if (ids.length > 0) target.certificates = [...new Set([...list(target.certificates), ...ids])];
}
