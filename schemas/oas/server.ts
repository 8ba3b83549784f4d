/**
 * `info` and `upstream` (the API's identity and its upstream address) and `server` (listen path,
 * custom domain) of the extension, and the certificates of both (client, upstream, pinned keys).
 */
import { quote } from '../rules/field-problem.ts';
import { list } from '../rules/read.ts';
import { EXT, nonEmpty, obj, type Conversion, type Part } from './document.ts';

/**
 * `info`: ID, organisation, name and state; `upstream.url`: the classic `proxy.target_url`;
 * `upstream.preserveTrailingSlash`: `proxy.disable_strip_slash`.
 */
export function readInfo(c: Conversion): void {
  const id = c.take([EXT, 'info', 'id']);
  c.set('api_id', id === '' ? undefined : id, [EXT, 'info', 'id']);
  c.copy('org_id', [EXT, 'info', 'orgId']);
  c.copy('name', [EXT, 'info', 'name']);
  c.copy('active', [EXT, 'info', 'state', 'active']);
  c.copy('internal', [EXT, 'info', 'state', 'internal']);
  c.copy('proxy.target_url', [EXT, 'upstream', 'url']);
  // The reference's form of the classic `proxy.disable_strip_slash`.
  const slash = [EXT, 'upstream', 'preserveTrailingSlash'];
  if (c.enabled(slash)) c.set('proxy.disable_strip_slash', true, [...slash, 'enabled']);
}

/**
 * `server`: the listen path and whether it is stripped, the custom domain and the certificates
 * served for it (`certificates`: such an API is served over HTTPS, gateway/routes/check.ts).
 */
export function readServer(c: Conversion): void {
  const server = [EXT, 'server'];
  c.copy('proxy.listen_path', [...server, 'listenPath', 'value']);
  c.copy('proxy.strip_listen_path', [...server, 'listenPath', 'strip']);
  const domain = [...server, 'customDomain'];
  if (c.enabled(domain)) {
    const name = c.take([...domain, 'name']);
    if (name === undefined || name === '') {
      c.problem(
        [...domain, 'name'],
        'Required',
        'the custom domain is enabled: set its name, such as api.example.com, or set enabled to false',
      );
    }
    c.set('domain', name, [...domain, 'name']);
    const certificates = c.take([...domain, 'certificates']);
    if (Array.isArray(certificates) && certificates.length > 0) {
      c.set('certificates', certificates, [...domain, 'certificates']);
    }
  }
  // Accepted and kept in the document: tracing is not done yet, and does not change an answer.
  c.take([...server, 'detailedTracing']);
}

/**
 * Certificates: `server.clientCertificates` (static mutual TLS: `use_mutual_tls_auth` and the
 * `allowlist` of certificate IDs as `client_certificates`), `upstream.mutualTLS` (its
 * `domainToCertificateMapping` as `upstream_certificates`) and `upstream.certificatePinning` (its
 * `domainToPublicKeysMapping` as `pinned_public_keys`, the keys of a domain joined by commas), as
 * the reference's extension writes them. The classic rules then check the IDs, hosts and pins.
 */
export function readCertificates(c: Conversion): void {
  const client = [EXT, 'server', 'clientCertificates'];
  if (c.enabled(client)) {
    c.set('use_mutual_tls_auth', true, [...client, 'enabled']);
    const allowlist = c.take([...client, 'allowlist']);
    c.set('client_certificates', allowlist ?? [], [...client, 'allowlist']);
  }
  readDomainMap(
    c,
    [EXT, 'upstream', 'mutualTLS'],
    'domainToCertificateMapping',
    'certificate',
    'upstream_certificates',
  );
  readDomainMap(
    c,
    [EXT, 'upstream', 'certificatePinning'],
    'domainToPublicKeysMapping',
    'publicKeys',
    'pinned_public_keys',
  );
}

/** A list of `{domain, <valueField>}` as the classic map of host -> value (lists joined by commas). */
function readDomainMap(
  c: Conversion,
  at: readonly Part[],
  listField: string,
  valueField: string,
  classic: 'upstream_certificates' | 'pinned_public_keys',
): void {
  if (!c.enabled(at)) return;
  const from = [...at, listField];
  const entries = list(c.take(from));
  const map: Record<string, string> = {};
  entries.forEach((entry, i) => {
    const e = obj(entry) ?? {};
    const domain = nonEmpty(e.domain);
    const raw = e[valueField];
    const value = Array.isArray(raw) ? raw.map((v) => String(v)).join(',') : nonEmpty(raw);
    if (domain === undefined) {
      c.problem(
        [...from, i, 'domain'],
        'Required',
        'set the upstream host: a name or IP, *.example.com, or *',
      );
    } else if (value === undefined || value === '') {
      c.problem([...from, i, valueField], 'Required', `set ${valueField} for ${quote(domain)}`);
    } else if (domain in map) {
      c.problem([...from, i, 'domain'], 'Invalid', `${quote(domain)} is mapped more than once: map it once`);
    } else map[domain] = value;
  });
  if (entries.length === 0) {
    c.problem(
      from,
      'Required',
      `${at.at(-1) as string} is enabled: map at least one domain, or set enabled to false`,
    );
  }
  c.set(classic, map, from);
}
