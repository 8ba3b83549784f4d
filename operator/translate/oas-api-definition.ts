/**
 * SvcOasApiDefinition -> the OAS document the gateway stores (`/svc/apis/oas`): the text of the
 * ConfigMap key, parsed (JSON or YAML), checked as the gateway and the webhooks check it (the
 * document's schema, then `checkOasDocument`), with the API ID written into
 * `x-svc-api-gateway.info.id` (and the connection's organization in `info.orgId`, unless the
 * document sets one), and the certificates the resource names by Secret written into the
 * extension (schemas/oas/secret-refs.ts). Pure: the reconciler reads the ConfigMap and the
 * Secrets and passes what they hold.
 */
import { parseDocumentText } from '../../schemas/rules/nesting.ts';
import { oasApiDocument } from '../../schemas/models/oas.ts';
import { OAS_EXTENSION, checkOasDocument } from '../../schemas/oas/index.ts';
import { compile } from '../../schemas/validate.ts';
import type { OasDocument } from '../clients/management.ts';
import { derivedId, hashOf } from '../ids.ts';
import { STREAMS_PATH, streamsOf } from '../../schemas/rules/streams.ts';
import { isPlainObject } from '../../lib/plain-object.ts';
import {
  applyOasSecretRefs,
  oasSecretRefProblems,
  type OasCertificateSpec,
  type OasSecretValues,
} from '../../schemas/oas/secret-refs.ts';

/** Largest document an API may have: the ConfigMap limit, and what the gateway accepts. */
export const MAX_DOCUMENT_BYTES = 1024 * 1024;

/** How many problems a message lists before `and N more`. */
const LISTED_PROBLEMS = 5;

/** The part of a ConfigMap translation reads. */
export interface ConfigMapContent {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

/** What translation needs: the resource's name and its reference, resolved, and the ConfigMap. */
export interface OasTranslationInput {
  namespace: string;
  name: string;
  /** The organization of the connection: the document's `info.orgId` when it sets none. */
  orgId: string;
  /** `spec.svcOAS.configmapRef` (`spec.svcStreams.configmapRef`), its namespace filled in. */
  ref: { namespace: string; name: string; keyName: string };
  /**
   * An SvcStreamsApiDefinition: its document must have streams (`x-svc-streaming.streams`), and
   * messages name `spec.svcStreams`.
   */
  streams?: boolean;
  /** The ConfigMap's content; undefined when it does not exist. */
  configMap: ConfigMapContent | undefined;
  /**
   * The certificates the resource names by Secret (`spec.clientCertificate`, `spec.mutualTLS`,
   * `spec.certificatePinning`) and what the Secrets hold, read by the reconciler.
   */
  certificates?: { spec: OasCertificateSpec; values: OasSecretValues };
}

/** Why a document can't be pushed: the `Ready` condition's reason. */
export type OasProblemReason =
  | 'ConfigMapNotFound'
  | 'ConfigMapKeyNotFound'
  | 'DocumentTooLarge'
  | 'DocumentInvalid'
  | 'ExtensionMissing'
  | 'SpecInvalid';

/** A document ready to push, and what the status says about it. */
export interface OasTranslation {
  ok: true;
  apiId: string;
  /** The document with `x-svc-api-gateway.info.id` set. */
  doc: OasDocument;
  listenPath: string;
  targetUrl?: string;
  enabled: boolean;
  /** Hash of the ConfigMap key's text. */
  configMapHash: string;
}

/** A document that can't be pushed. */
export interface OasRefusal {
  ok: false;
  reason: OasProblemReason;
  message: string;
}

const schemaCheck = compile(oasApiDocument);

/** `a; b; c and 2 more`. */
function listed(lines: readonly string[]): string {
  const shown = lines.slice(0, LISTED_PROBLEMS).join('; ');
  return lines.length > LISTED_PROBLEMS ? `${shown}; and ${lines.length - LISTED_PROBLEMS} more` : shown;
}

/**
 * The document an SvcOasApiDefinition describes, or why it can't be pushed. The API ID is the
 * document's `x-svc-api-gateway.info.id` when it sets one, else derived from the namespaced name.
 */
export function translateOasApiDefinition(input: OasTranslationInput): OasTranslation | OasRefusal {
  const { ref } = input;
  const where = `ConfigMap ${ref.namespace}/${ref.name}`;
  const refuse = (reason: OasProblemReason, message: string): OasRefusal => ({ ok: false, reason, message });
  if (!input.configMap) {
    return refuse(
      'ConfigMapNotFound',
      `${where} not found: create it, or point spec.${input.streams === true ? 'svcStreams' : 'svcOAS'}.configmapRef at the ConfigMap that holds the document`,
    );
  }
  const text = input.configMap.data?.[ref.keyName];
  if (text === undefined) {
    const keys = Object.keys(input.configMap.data ?? {});
    const has =
      input.configMap.binaryData?.[ref.keyName] !== undefined
        ? `it holds "${ref.keyName}" in binaryData: put the document under data, as text`
        : keys.length === 0
          ? 'it has no data keys'
          : `it has ${keys.map((k) => `"${k}"`).join(', ')}`;
    return refuse('ConfigMapKeyNotFound', `${where} has no key "${ref.keyName}" (${has})`);
  }
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_DOCUMENT_BYTES) {
    return refuse(
      'DocumentTooLarge',
      `${where} key "${ref.keyName}": the document is ${bytes} bytes, more than 1 MiB (${MAX_DOCUMENT_BYTES} bytes): split the API into smaller APIs`,
    );
  }
  const read = parseDocumentText(text);
  if ('nesting' in read) return refuse('DocumentInvalid', `${where} key "${ref.keyName}": ${read.nesting}`);
  if ('syntax' in read) {
    return refuse(
      'DocumentInvalid',
      `${where} key "${ref.keyName}": the document does not parse as JSON or YAML (${read.syntax}): fix its syntax`,
    );
  }
  const parsed = read.value;
  if (!isPlainObject(parsed)) {
    return refuse(
      'DocumentInvalid',
      `${where} key "${ref.keyName}": the document is not a mapping: it must be an OpenAPI 3.x document with ${OAS_EXTENSION}`,
    );
  }
  if (parsed[OAS_EXTENSION] === undefined) {
    return refuse(
      'ExtensionMissing',
      `${where} key "${ref.keyName}": the document has no ${OAS_EXTENSION} extension: add it with info.name, info.state.active, upstream.url and server.listenPath.value`,
    );
  }

  if (input.streams === true && streamsOf(parsed) === undefined) {
    return refuse(
      'ExtensionMissing',
      `${where} key "${ref.keyName}": the document has no ${STREAMS_PATH}: an SvcStreamsApiDefinition describes its streams there (or use an SvcOasApiDefinition for an API without streams)`,
    );
  }

  const doc = structuredClone(parsed);
  const ext = doc[OAS_EXTENSION];
  const info = isPlainObject(ext) && isPlainObject(ext.info) ? ext.info : undefined;
  const fixed = typeof info?.id === 'string' && info.id !== '' ? info.id : undefined;
  const apiId = fixed ?? derivedId(input.namespace, input.name);
  if (info) {
    info.id = apiId;
    if (typeof info.orgId !== 'string' || info.orgId === '') info.orgId = input.orgId;
  }
  if (input.certificates !== undefined) {
    const specProblems = oasSecretRefProblems(input.certificates.spec, parsed);
    if (specProblems.length > 0) {
      return refuse('SpecInvalid', listed(specProblems.map((p) => `${p.path}: ${p.message}`)));
    }
    applyOasSecretRefs(doc, input.certificates.spec, input.certificates.values);
  }

  const schemaProblems = schemaCheck(doc).map((p) => `${p.path === '' ? '(root)' : p.path}: ${p.message}`);
  // The gateway checks the schema first too: the classic conversion assumes a well-formed document.
  const checked = schemaProblems.length > 0 ? undefined : checkOasDocument(doc);
  const problems = checked?.problems.map((p) => `${p.path}: ${p.message}`) ?? schemaProblems;
  if (!checked || problems.length > 0) {
    return refuse(
      'DocumentInvalid',
      `${where} key "${ref.keyName}": the document is refused: ${listed(problems)}`,
    );
  }
  const { api } = checked;
  return {
    ok: true,
    apiId,
    doc,
    listenPath: api.proxy.listen_path,
    ...(api.proxy.target_url === undefined ? {} : { targetUrl: api.proxy.target_url }),
    enabled: api.active !== false,
    configMapHash: hashOf(text),
  };
}
