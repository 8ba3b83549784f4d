/**
 * The OAS document an SvcOasApiDefinition or SvcStreamsApiDefinition points at: found in its
 * ConfigMap, at most 1 MiB, JSON or YAML, OpenAPI 3.x with `x-svc-api-gateway` (and
 * `x-svc-streaming` for streams), valid against the document schema of schemas/models/oas.ts;
 * the document of an SvcOasApiDefinition also passes the gateway's check of an OAS API
 * (schemas/oas/: converted to a classic definition, which the classic rules check).
 */
import { parseDocumentText } from '../schemas/rules/nesting.ts';
import { checkOasDocument } from '../schemas/oas/index.ts';
import { asObject, asString } from './access.ts';
import { fe, fromSchemaProblem, quote } from './field-error.ts';
import type { FieldError } from './field-error.ts';
import type { ConfigMapContent, Lookups } from './lookups.ts';
import { oasDocumentProblems } from './schema.ts';

/** Largest document an API may have: the ConfigMap limit, and what the gateway accepts. */
export const MAX_DOCUMENT_BYTES = 1024 * 1024;
/** kubectl's client-side apply copies the object into an annotation limited to this size. */
export const LAST_APPLIED_LIMIT_BYTES = 262_144;

/** Which document, and where the reference sits in the API resource. */
export interface DocumentRef {
  /** `spec.svcOAS.configmapRef` or `spec.svcStreams.configmapRef`. */
  refPath: string;
  namespace: string;
  name: string;
  keyName: string;
  streams: boolean;
}

/** Result of reading and checking a document. `doc` is set when it parsed to an object. */
export interface DocumentResult {
  errors: FieldError[];
  warnings: string[];
  doc?: Record<string, unknown>;
}

/** Looks the document up through `lookups` and checks it. */
export async function loadDocument(lookups: Lookups, ref: DocumentRef): Promise<DocumentResult> {
  const cm = await lookups.configMap(ref.namespace, ref.name);
  if (cm === undefined) {
    return {
      errors: [
        fe.invalid(
          `${ref.refPath}.name`,
          `ConfigMap ${ref.namespace}/${ref.name} not found: create it first, or point configmapRef at the ConfigMap that holds the document`,
        ),
      ],
      warnings: [],
    };
  }
  return checkConfigMapKey(cm, ref);
}

/** Checks the key `ref.keyName` of a ConfigMap's content. */
export function checkConfigMapKey(cm: ConfigMapContent, ref: DocumentRef): DocumentResult {
  const keyPath = `${ref.refPath}.keyName`;
  const text = cm.data?.[ref.keyName];
  if (text === undefined) {
    if (cm.binaryData?.[ref.keyName] !== undefined) {
      return {
        errors: [
          fe.invalid(
            keyPath,
            `ConfigMap ${ref.namespace}/${ref.name} holds ${quote(ref.keyName)} in binaryData: put the document under data, as text`,
          ),
        ],
        warnings: [],
      };
    }
    const keys = Object.keys(cm.data ?? {});
    const has = keys.length === 0 ? 'it has no data keys' : `it has ${keys.map((k) => quote(k)).join(', ')}`;
    return {
      errors: [
        fe.invalid(
          keyPath,
          `ConfigMap ${ref.namespace}/${ref.name} has no key ${quote(ref.keyName)} (${has}): set keyName to the key that holds the document`,
        ),
      ],
      warnings: [],
    };
  }
  return checkDocumentText(text, keyPath, ref.streams);
}

/** Checks the text of a document; errors are reported at `keyPath`. */
export function checkDocumentText(text: string, keyPath: string, streams: boolean): DocumentResult {
  const warnings: string[] = [];
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_DOCUMENT_BYTES) {
    return {
      errors: [
        fe.tooLong(
          keyPath,
          `the document is ${bytes} bytes, more than 1 MiB (${MAX_DOCUMENT_BYTES} bytes): split the API into smaller APIs`,
        ),
      ],
      warnings,
    };
  }
  if (bytes > LAST_APPLIED_LIMIT_BYTES) {
    warnings.push(
      `${keyPath}: the document is ${bytes} bytes; kubectl apply (client-side) copies it into an annotation limited to ${LAST_APPLIED_LIMIT_BYTES} bytes: create or replace its ConfigMap, or use kubectl apply --server-side`,
    );
  }

  const read = parseDocumentText(text);
  if ('nesting' in read) return { errors: [fe.invalid(keyPath, read.nesting)], warnings };
  if ('syntax' in read) {
    return {
      errors: [
        fe.invalid(keyPath, `the document does not parse as JSON or YAML (${read.syntax}): fix its syntax`),
      ],
      warnings,
    };
  }
  const parsed = read.value;
  const doc = asObject(parsed);
  if (doc === undefined) {
    return {
      errors: [
        fe.invalid(
          keyPath,
          `the document is ${parsed === null ? 'empty' : `a ${Array.isArray(parsed) ? 'list' : typeof parsed}`}: it must be an OpenAPI 3.x document (a mapping with openapi, info, paths and x-svc-api-gateway)`,
        ),
      ],
      warnings,
    };
  }

  const errors: FieldError[] = [];
  const reported = new Set<string>();
  const openapi = doc.openapi;
  if (typeof openapi !== 'string' || !openapi.startsWith('3.')) {
    reported.add('openapi');
    errors.push(
      fe.invalid(
        keyPath,
        openapi === undefined
          ? 'the document has no openapi field: it must be an OpenAPI 3.x document (openapi: 3.0.3 or 3.1.0)'
          : `the document's openapi is ${quote(openapi)}: it must be an OpenAPI 3.x document (openapi: 3.0.3 or 3.1.0)`,
      ),
    );
  }
  if (doc['x-svc-api-gateway'] === undefined) {
    reported.add('x-svc-api-gateway');
    errors.push(
      fe.required(
        keyPath,
        'the document has no x-svc-api-gateway extension: add it with info.name, info.state.active, upstream.url and server.listenPath.value',
      ),
    );
  }
  if (streams && doc['x-svc-streaming'] === undefined) {
    reported.add('x-svc-streaming');
    errors.push(
      fe.required(
        keyPath,
        'the document has no x-svc-streaming extension: add streams, each with an input and an output (or use SvcOasApiDefinition for a plain HTTP API)',
      ),
    );
  }
  if (!streams && doc['x-svc-streaming'] !== undefined) {
    warnings.push(
      `${keyPath}: the document has x-svc-streaming, which an SvcOasApiDefinition ignores: use SvcStreamsApiDefinition to serve its streams`,
    );
  }
  const inDocument = (e: FieldError): FieldError => ({
    ...e,
    path: keyPath,
    message: `in the document at ${e.path === '' ? '<root>' : e.path}: ${e.message}`,
  });
  for (const p of oasDocumentProblems(doc)) {
    if (reported.has(p.path)) continue;
    errors.push(inDocument(fromSchemaProblem(p)));
  }
  // The gateway's own check of an OAS API, once the document is one (it checks the schema first
  // too): what the webhooks admit, the gateway serves.
  if (streams) errors.push(...connectorErrors(doc, keyPath));
  else if (errors.length === 0) errors.push(...checkOasDocument(doc).problems.map(inDocument));
  return { errors, warnings, doc };
}

/** Each input and output is an object with exactly one connector key, besides `label`. */
function connectorErrors(doc: Record<string, unknown>, keyPath: string): FieldError[] {
  const errors: FieldError[] = [];
  const streams = asObject(asObject(doc['x-svc-streaming'])?.streams) ?? {};
  for (const [name, stream] of Object.entries(streams)) {
    for (const end of ['input', 'output'] as const) {
      const connector = asObject(asObject(stream)?.[end]);
      if (connector === undefined) continue; // the schema reports it
      const types = Object.keys(connector).filter((k) => k !== 'label');
      if (types.length !== 1) {
        errors.push(
          fe.invalid(
            keyPath,
            `in the document at x-svc-streaming.streams.${name}.${end}: a connector has exactly one type key (http_server, kafka, http_client, broker, ...) besides label; ${types.length === 0 ? 'found none' : `found ${types.join(', ')}`}`,
          ),
        );
      }
    }
  }
  return errors;
}

/** Listen path and custom domain an OAS document claims on its gateway. */
export function documentRoute(
  doc: Record<string, unknown>,
): { listenPath: string; domain: string } | undefined {
  const server = asObject(asObject(doc['x-svc-api-gateway'])?.server);
  const listenPath = asString(asObject(server?.listenPath)?.value);
  if (listenPath === undefined) return undefined;
  const custom = asObject(server?.customDomain);
  const domain = custom?.enabled === true ? (asString(custom.name) ?? '') : '';
  return { listenPath, domain };
}
