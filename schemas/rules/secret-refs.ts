/**
 * Certificates an ApiDefinition names by Secret (of its own namespace), and the gateway fields
 * they become: `certificate_secret_names` (served, `certificates`), `client_certificate_refs`
 * (static mutual TLS, `client_certificates`), `upstream_certificate_refs` (presented to an
 * upstream host, `upstream_certificates`) and `pinned_public_keys_refs` (an upstream host's
 * pinned public key, `pinned_public_keys`). Read by the webhook (field-pathed problems, warnings
 * for Secrets that do not exist yet) and the operator (which Secrets to read and watch).
 * An SvcOasApiDefinition names them in the reference's TykOasApiDefinition forms:
 * `clientCertificate.allowlist` (`server.clientCertificates`), `mutualTLS.domainToCertificateMapping`
 * (`upstream.mutualTLS`), `certificatePinning.domainToPublicKeysMapping` (`upstream.certificatePinning`)
 * and `customDomain.certificatesRef` (`server.customDomain.certificates`), each read only while
 * its `enabled` is true.
 */
import { quote, type FieldProblem } from './field-problem.ts';
import { model } from './read.ts';

/** What a Secret's certificate is for. */
export type SecretUse = 'served' | 'client' | 'upstream' | 'pinned';

/**
 * One Secret an API names, where (`spec.` path) and what for; `host` for the per-host maps;
 * `namespace` when it is of another namespace than the API's (`certificate_secret_names` only:
 * `namespace/name`, which the operator serves for an API generated for a Gateway whose listener
 * a ReferenceGrant allows that Secret).
 */
export interface CertificateSecretRef {
  path: string;
  name: string;
  use: SecretUse;
  host?: string;
  namespace?: string;
}

/**
 * How `certificate_secret_names` names a Secret: its name in the API's namespace,
 * `namespace/name` in another.
 */
export function servedSecretName(apiNamespace: string, secret: { namespace: string; name: string }): string {
  return secret.namespace === apiNamespace ? secret.name : `${secret.namespace}/${secret.name}`;
}

/** The form a Secret is written in its field (`namespace/name` for another namespace's). */
export const writtenSecretName = (ref: Pick<CertificateSecretRef, 'name' | 'namespace'>): string =>
  ref.namespace === undefined ? ref.name : `${ref.namespace}/${ref.name}`;

/** The label naming the Gateway an ApiDefinition was generated for (operator/translate/gateway-api/). */
export const GATEWAY_LABEL = 'svc.io/gateway';

/** Why an API no Gateway generated may not name a Secret of another namespace. */
export const OTHER_NAMESPACE_REFUSAL = `only an API generated for a Gateway (label ${GATEWAY_LABEL}) may name a Secret of another namespace`;

/**
 * The `namespace/name` entries of `certificate_secret_names` naming another namespace than the
 * API's, on an API without the Gateway label: refused at admission, as the operator would refuse
 * them at reconcile (an API generated for a Gateway is checked there, against its Gateway's
 * listeners and the ReferenceGrants, which may come in any order). Paths without `spec.`.
 */
export function otherNamespaceProblems(
  spec: RefSpec | undefined,
  namespace: string,
  labels: Readonly<Record<string, unknown>> | undefined,
): FieldProblem[] {
  const label = labels?.[GATEWAY_LABEL];
  if (typeof label === 'string' && label !== '') return [];
  return certificateSecretRefs(spec)
    .filter((r) => r.namespace !== undefined && r.namespace !== namespace)
    .map((r) => ({
      path: r.path.replace(/^spec\./, ''),
      type: 'Forbidden' as const,
      message: `${OTHER_NAMESPACE_REFUSAL}: name a Secret of namespace ${namespace}`,
    }));
}

/** The gateway field each by-Secret field becomes. */
export const SECRET_REF_FIELDS = {
  certificate_secret_names: 'certificates',
  client_certificate_refs: 'client_certificates',
  upstream_certificate_refs: 'upstream_certificates',
  pinned_public_keys_refs: 'pinned_public_keys',
} as const;

/** The spec fields that name Secrets (values unchecked: the webhook reads them before the schema). */
type RefSpec = Partial<
  Record<
    | 'certificate_secret_names'
    | 'client_certificate_refs'
    | 'upstream_certificate_refs'
    | 'pinned_public_keys_refs'
    | 'clientCertificate'
    | 'mutualTLS'
    | 'certificatePinning'
    | 'customDomain',
    unknown
  >
>;

const listOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const mapOf = (v: unknown): Record<string, unknown> => model<Record<string, unknown>>(v) ?? {};

/**
 * Every Secret the spec names for certificates, in field order (a Secret named twice is listed
 * twice: each place is a path of its own). Values that are not names are left out (the schema
 * refuses them).
 */
export function certificateSecretRefs(spec: RefSpec | undefined): CertificateSecretRef[] {
  const out: CertificateSecretRef[] = [];
  const list = (field: 'certificate_secret_names' | 'client_certificate_refs', use: SecretUse): void => {
    listOf(spec?.[field]).forEach((name, i) => {
      if (typeof name !== 'string' || name === '') return;
      const path = `spec.${field}[${i}]`;
      const slash = use === 'served' ? name.indexOf('/') : -1;
      if (slash < 0) out.push({ path, name, use });
      else out.push({ path, name: name.slice(slash + 1), use, namespace: name.slice(0, slash) });
    });
  };
  const map = (field: 'upstream_certificate_refs' | 'pinned_public_keys_refs', use: SecretUse): void => {
    for (const [host, name] of Object.entries(mapOf(spec?.[field]))) {
      if (typeof name === 'string' && name !== '')
        out.push({ path: `spec.${field}[${quote(host)}]`, name, use, host });
    }
  };
  list('certificate_secret_names', 'served');
  list('client_certificate_refs', 'client');
  map('upstream_certificate_refs', 'upstream');
  map('pinned_public_keys_refs', 'pinned');
  out.push(...oasSecretRefs(spec));
  return out;
}

/** The OAS kind's forms (see the module comment), those whose `enabled` is true. */
function oasSecretRefs(spec: RefSpec | undefined): CertificateSecretRef[] {
  const out: CertificateSecretRef[] = [];
  const on = (v: unknown): Record<string, unknown> | undefined => {
    const m = model<Record<string, unknown>>(v);
    return m?.enabled === true ? m : undefined;
  };
  const named = (path: string, name: unknown, use: SecretUse, host?: unknown): void => {
    if (typeof name !== 'string' || name === '') return;
    out.push({ path, name, use, ...(typeof host === 'string' ? { host } : {}) });
  };
  const client = on(spec?.clientCertificate);
  listOf(client?.allowlist).forEach((name, i) => {
    named(`spec.clientCertificate.allowlist[${String(i)}]`, name, 'client');
  });
  const upstream = on(spec?.mutualTLS);
  listOf(upstream?.domainToCertificateMapping).forEach((e, i) => {
    const entry = mapOf(e);
    const at = `spec.mutualTLS.domainToCertificateMapping[${String(i)}].certificateRef`;
    named(at, entry.certificateRef, 'upstream', entry.domain);
  });
  const domain = on(spec?.customDomain);
  listOf(domain?.certificatesRef).forEach((name, i) => {
    named(`spec.customDomain.certificatesRef[${String(i)}]`, name, 'served');
  });
  const pinning = on(spec?.certificatePinning);
  listOf(pinning?.domainToPublicKeysMapping).forEach((e, i) => {
    const entry = mapOf(e);
    listOf(entry.publicKeyRefs).forEach((name, j) => {
      const at = `spec.certificatePinning.domainToPublicKeysMapping[${String(i)}].publicKeyRefs[${String(j)}]`;
      named(at, name, 'pinned', entry.domain);
    });
  });
  return out;
}

/** The Secrets (`namespace/name`) a spec of `namespace` names, without repeats. */
export function certificateSecretKeys(spec: RefSpec | undefined, namespace: string): string[] {
  return [...new Set(certificateSecretRefs(spec).map((r) => `${r.namespace ?? namespace}/${r.name}`))];
}

/**
 * An upstream host given a certificate both by ID (`upstream_certificates`) and by Secret
 * (`upstream_certificate_refs`): one of them would silently lose. (Pins by Secret add to pins
 * written out: a host may have several.)
 */
export function secretRefProblems(
  spec: { upstream_certificates?: unknown; upstream_certificate_refs?: unknown } | undefined,
): FieldProblem[] {
  const byId = new Set(Object.keys(mapOf(spec?.upstream_certificates)).map((h) => h.trim().toLowerCase()));
  return Object.keys(mapOf(spec?.upstream_certificate_refs))
    .filter((host) => byId.has(host.trim().toLowerCase()))
    .map((host) => ({
      path: `upstream_certificate_refs[${quote(host)}]`,
      type: 'Invalid' as const,
      message: `${quote(host)} has a certificate in upstream_certificates too: a host is presented one certificate; keep one of the two entries`,
    }));
}

/** A certificate ID and a pin of the right form, standing for what the operator will upload. */
const PLACEHOLDER_ID = '0'.repeat(64);
const PLACEHOLDER_PIN = `sha256/${'A'.repeat(43)}=`;

/**
 * The spec as the gateway will see it once the operator has read its Secrets: each by-Secret
 * entry stands in its gateway field (with an ID or pin of the right form), so that the gateway's
 * rules (upstream hosts, the target's host, static mutual TLS) check it too. `refPath` maps a
 * problem's path in the gateway field back to the by-Secret field it came from.
 */
export function withSecretRefs<T extends RefSpec>(refSpec: T): { api: T; refPath: (path: string) => string } {
  const spec = refSpec as Record<string, unknown>;
  const clients = listOf(spec.client_certificate_refs);
  const upstream = mapOf(spec.upstream_certificate_refs);
  const pinned = mapOf(spec.pinned_public_keys_refs);
  const api: Record<string, unknown> = { ...spec };
  delete api.client_certificate_refs;
  delete api.upstream_certificate_refs;
  delete api.pinned_public_keys_refs;
  const ownClients = listOf(spec.client_certificates).length;
  if (clients.length > 0) {
    api.client_certificates = [...listOf(spec.client_certificates), ...clients.map(() => PLACEHOLDER_ID)];
  }
  const ownUpstream = mapOf(spec.upstream_certificates);
  if (Object.keys(upstream).length > 0) {
    api.upstream_certificates = {
      ...Object.fromEntries(Object.keys(upstream).map((h) => [h, PLACEHOLDER_ID])),
      ...ownUpstream,
    };
  }
  const ownPins = mapOf(spec.pinned_public_keys);
  if (Object.keys(pinned).length > 0) {
    api.pinned_public_keys = {
      ...ownPins,
      ...Object.fromEntries(
        Object.keys(pinned).map((h) => {
          const own = ownPins[h];
          return [
            h,
            typeof own === 'string' && own.trim() !== '' ? `${own}, ${PLACEHOLDER_PIN}` : PLACEHOLDER_PIN,
          ];
        }),
      ),
    };
  }
  const refPath = (path: string): string => {
    const client = /^client_certificates\[(\d+)\]/.exec(path);
    if (client !== null && Number(client[1]) >= ownClients) {
      return `client_certificate_refs[${String(Number(client[1]) - ownClients)}]${path.slice(client[0].length)}`;
    }
    for (const [field, refs, own] of [
      ['upstream_certificates', upstream, ownUpstream],
      ['pinned_public_keys', pinned, ownPins],
    ] as const) {
      for (const host of Object.keys(refs)) {
        const at = `${field}[${quote(host)}]`;
        if (path.startsWith(at) && !(host in own)) {
          const refField =
            field === 'upstream_certificates' ? 'upstream_certificate_refs' : 'pinned_public_keys_refs';
          return `${refField}[${quote(host)}]${path.slice(at.length)}`;
        }
      }
    }
    return path;
  };
  return { api: api as T, refPath };
}
