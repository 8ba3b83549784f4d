/**
 * Rules shared by the two OAS-based kinds (SvcOasApiDefinition and SvcStreamsApiDefinition):
 * the document their ConfigMap holds, and the listen path it claims.
 */
import { listenPathProblem, reservedPathProblem } from '../schemas/rules/api-definition.ts';
import { asObject, asString, configmapRefOf, metaOf } from './access.ts';
import { model } from '../schemas/rules/read.ts';
import { fe, mergeErrors } from './field-error.ts';
import type { FieldError, Verdict } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { loadDocument } from './oas-document.ts';
import { clone, defaultContextRef, defaultRefNamespace } from './defaults.ts';
import { contextRefWarnings, deleteVerdict, policiesCovering } from './references.ts';
import { conflictMessage, documentClaim, documentRefField, findConflict } from './routes.ts';
import { schemaErrors } from './schema.ts';
import { certificateSecretRefs } from '../schemas/rules/secret-refs.ts';
import { oasSecretRefProblems, type OasCertificateSpec } from '../schemas/oas/secret-refs.ts';

/** One of the two OAS-based kinds. */
export type DocumentKind = keyof typeof documentRefField;

/** Validates an OAS-based API on create or update. */
export async function validateDocumentApi(
  kind: DocumentKind,
  obj: unknown,
  lookups: Lookups,
): Promise<Verdict> {
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  const { namespace } = metaOf(obj);
  const refPath = `spec.${documentRefField[kind]}.configmapRef`;
  const ref = configmapRefOf(kind, obj);
  const name = asString(ref?.name);
  const keyName = asString(ref?.keyName);
  const fromSchema = schemaErrors(kind, obj);
  // A reference the schema refuses (a malformed name) is not looked up.
  const refOk = !fromSchema.some((e) => e.path.startsWith(refPath));
  let document: unknown;
  if (refOk && name !== undefined && keyName !== undefined) {
    const result = await loadDocument(lookups, {
      refPath,
      namespace: asString(ref?.namespace) ?? namespace,
      name,
      keyName,
      streams: kind === 'SvcStreamsApiDefinition',
    });
    errors.push(...result.errors);
    warnings.push(...result.warnings);
    document = result.doc;
    const claim = result.doc === undefined ? undefined : documentClaim(kind, obj, result.doc);
    // A listen path without its leading "/" is reported by the document's schema.
    if (claim?.listenPath.startsWith('/') === true) {
      // The same rule as a classic API's listen path; OAS APIs are served on the gateway port.
      // The document check of an SvcOasApiDefinition may have reported it already.
      const problem = listenPathProblem(claim.listenPath) ?? reservedPathProblem(claim.listenPath);
      const other = problem === undefined ? await findConflict(claim, lookups) : undefined;
      if (problem !== undefined) {
        const e = fe.invalid(
          `${refPath}.keyName`,
          `in the document at x-svc-api-gateway.server.listenPath.value: ${problem}`,
        );
        if (!errors.some((x) => x.path === e.path && x.message === e.message)) errors.push(e);
      } else if (other !== undefined) {
        errors.push(fe.invalid(`${refPath}.keyName`, conflictMessage(claim, other)));
      }
    }
  }
  if (kind === 'SvcOasApiDefinition') {
    const found = await certificateRefVerdict(obj, document, lookups);
    errors.push(...found.errors);
    warnings.push(...found.warnings);
  }
  warnings.push(...(await contextRefWarnings(obj, lookups)));
  return { errors: mergeErrors(fromSchema, errors), warnings };
}

/**
 * Certificates named by Secret (`spec.clientCertificate`, `spec.mutualTLS`,
 * `spec.certificatePinning`, `spec.customDomain`): a mapped domain that is not an upstream host,
 * or that the document maps a certificate to as well, refused at its path; Secrets that do not
 * exist yet, and the gateway's HTTPS port that static mutual TLS and a custom domain's
 * certificates need, warned of.
 */
async function certificateRefVerdict(obj: unknown, doc: unknown, lookups: Lookups): Promise<Verdict> {
  const spec = model<OasCertificateSpec>(model<{ spec?: unknown }>(obj)?.spec) ?? {};
  const client = model<{ enabled?: unknown }>(spec.clientCertificate);
  const { namespace } = metaOf(obj);
  const errors = oasSecretRefProblems(spec, doc).map((p) => ({ ...p }));
  const warnings: string[] = [];
  for (const { path, name } of certificateSecretRefs(spec)) {
    if ((await lookups.secretKeys(namespace, name)) === undefined) {
      warnings.push(
        `${path}: Secret ${namespace}/${name} does not exist yet: the API is not served until it does`,
      );
    }
  }
  if (client?.enabled === true) {
    warnings.push(
      "spec.clientCertificate: static mutual TLS is served on the gateway's HTTPS port (https_port) only, where clients can present certificates; a gateway without one refuses the API",
    );
  }
  const domain = model<{ enabled?: unknown; certificatesRef?: unknown }>(spec.customDomain);
  if (
    domain?.enabled === true &&
    Array.isArray(domain.certificatesRef) &&
    domain.certificatesRef.length > 0
  ) {
    warnings.push(
      "spec.customDomain.certificatesRef: an API with certificates for its domain is served on the gateway's HTTPS port (https_port) only, over HTTPS; a gateway without one refuses the API",
    );
  }
  return { errors, warnings };
}

/** Refuses the DELETE of an OAS-based API that SecurityPolicies still cover. */
export async function validateDocumentApiDelete(
  kind: DocumentKind,
  old: unknown,
  lookups: Lookups,
): Promise<Verdict> {
  const { namespace, name } = metaOf(old);
  return deleteVerdict(
    `${kind} ${namespace}/${name}`,
    await policiesCovering(lookups, kind, namespace, name),
    'remove it from the access_rights_array of these policies (or delete them) first',
  );
}

/** Defaults `configmapRef.namespace` and `contextRef.namespace` to the resource's namespace. */
export function defaultDocumentApi(kind: DocumentKind, obj: unknown): unknown {
  const out = asObject(clone(obj));
  if (out === undefined) return obj;
  defaultContextRef(out);
  defaultRefNamespace(configmapRefOf(kind, out), metaOf(out).namespace);
  return out;
}
