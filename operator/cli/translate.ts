/**
 * `kubectl svc translate`: what the operator would send to the gateway for the resources in some
 * manifest files, offline. The same pure translators (operator/translate/) and the same IDs
 * (operator/ids.ts) as the reconcilers; what the reconciler reads from the cluster (a referenced
 * resource's explicit ID, a ConfigMap) is taken from the files given, else derived as the
 * reconciler derives it for an object not yet created.
 */
import { parseAllDocuments } from 'yaml';
import type {
  ApiDefinitionSpec,
  ApiResourceRef,
  NamespacedRef,
  SecurityPolicySpec,
} from '../../schemas/generated/kinds.ts';
import { API_VERSION } from '../../schemas/common.ts';
import { apiDefinitionKind } from '../../schemas/kinds/api-definition.ts';
import { oasApiDefinitionKind } from '../../schemas/kinds/oas-api-definition.ts';
import { securityPolicyKind } from '../../schemas/kinds/security-policy.ts';
import { streamsApiDefinitionKind } from '../../schemas/kinds/streams-api-definition.ts';
import { compile, resourceSchema, type SchemaCheck } from '../../schemas/validate.ts';
import { isPlainObject } from '../../lib/plain-object.ts';
import { isTemplate } from '../../schemas/templates.ts';
import { derivedId } from '../ids.ts';
import { translateApiDefinition } from '../translate/api-definition.ts';
import { translateOasApiDefinition, type ConfigMapContent } from '../translate/oas-api-definition.ts';
import { translateSecurityPolicy } from '../translate/security-policy.ts';

/** A manifest file: its name (as given on the command line) and its text. */
export interface ManifestFile {
  path: string;
  text: string;
}

/** One object the operator would write to the gateway, and where it comes from. */
export interface TranslatedObject {
  /** `file.yaml: document 2 (ApiDefinition default/httpbin)`. */
  source: string;
  kind: string;
  namespace: string;
  name: string;
  /** The management call the operator makes (it creates when the GET answers 404). */
  call: string;
  id: string;
  body: unknown;
}

/** What `translate` answers: the objects, or every problem found (each naming file, document, field). */
export interface TranslateResult {
  objects: TranslatedObject[];
  errors: string[];
}

/** Options of the command. */
export interface TranslateOptions {
  /** The organization of the connection (the operator's SVC_ORG or the OperatorContext's `env.org`). */
  org: string;
  /** Namespace of objects that name none (`-n`); `default` otherwise. */
  namespace: string;
}

interface Doc {
  source: string;
  kind: string;
  namespace: string;
  name: string;
  value: Record<string, unknown>;
}

const checks: Record<string, SchemaCheck> = {
  ApiDefinition: compile(resourceSchema(apiDefinitionKind)),
  SvcOasApiDefinition: compile(resourceSchema(oasApiDefinitionKind)),
  SvcStreamsApiDefinition: compile(resourceSchema(streamsApiDefinitionKind)),
  SecurityPolicy: compile(resourceSchema(securityPolicyKind)),
};

const key = (namespace: string, name: string): string => `${namespace}/${name}`;

/** Reads every document of the files; problems name the file and the document (1-based). */
function readDocs(files: readonly ManifestFile[], opts: TranslateOptions, errors: string[]): Doc[] {
  const docs: Doc[] = [];
  for (const file of files) {
    parseAllDocuments(file.text).forEach((d, i) => {
      const where = `${file.path}: document ${i + 1}`;
      if (d.errors.length > 0) {
        errors.push(`${where}: not YAML: ${d.errors.map((e) => e.message).join('; ')}`);
        return;
      }
      const value: unknown = d.toJS();
      if (value === null || value === undefined) return;
      if (!isPlainObject(value)) {
        errors.push(`${where}: (root): must be a Kubernetes object (a mapping with kind and metadata)`);
        return;
      }
      const kind = typeof value.kind === 'string' ? value.kind : '';
      const meta = isPlainObject(value.metadata) ? value.metadata : {};
      const name = typeof meta.name === 'string' ? meta.name : '';
      const namespace =
        typeof meta.namespace === 'string' && meta.namespace !== '' ? meta.namespace : opts.namespace;
      const source = `${where} (${kind === '' ? 'no kind' : kind} ${namespace}/${name})`;
      if (kind === '') {
        errors.push(`${where}: kind: Required value`);
        return;
      }
      if (name === '') {
        errors.push(`${source}: metadata.name: Required value`);
        return;
      }
      docs.push({ source, kind, namespace, name, value });
    });
  }
  return docs;
}

/** Schema problems of a svc resource, each as `source: path: message`. */
function schemaProblems(doc: Doc): string[] {
  const check = checks[doc.kind];
  if (check === undefined) return [];
  return check(doc.value).map((p) => `${doc.source}: ${p.path === '' ? '(root)' : p.path}: ${p.message}`);
}

/**
 * Translates the svc resources of the files (ConfigMaps are read as the documents of
 * SvcOasApiDefinitions; other kinds are ignored). Pure.
 */
export function translateManifests(files: readonly ManifestFile[], opts: TranslateOptions): TranslateResult {
  const errors: string[] = [];
  const docs = readDocs(files, opts, errors);
  const byKind = (kind: string): Doc[] => docs.filter((d) => d.kind === kind);
  const configMaps = new Map(byKind('ConfigMap').map((d) => [key(d.namespace, d.name), d.value]));
  const policyIds = new Map(
    byKind('SecurityPolicy').map((d) => {
      const spec = d.value.spec as SecurityPolicySpec | undefined;
      return [key(d.namespace, d.name), spec?.id ?? derivedId(d.namespace, d.name)];
    }),
  );
  const apiIds = new Map<string, string>();
  const objects: TranslatedObject[] = [];
  const valid = (d: Doc): boolean => {
    const problems = schemaProblems(d);
    errors.push(...problems);
    return problems.length === 0;
  };

  for (const d of byKind('ApiDefinition')) {
    if (!valid(d)) continue;
    const spec = d.value.spec as ApiDefinitionSpec;
    const apiId = spec.api_id ?? derivedId(d.namespace, d.name);
    apiIds.set(`ApiDefinition/${key(d.namespace, d.name)}`, apiId);
    if (isTemplate(d.value)) continue; // a template is never pushed (Ingresses use it)
    const body = translateApiDefinition(
      { metadata: { name: d.name, namespace: d.namespace }, spec },
      {
        apiId,
        orgId: opts.org,
        // Offline there are no Secrets to upload: the ID says which Secret it would come from.
        certificateId: (secret) => `<certificate of Secret ${d.namespace}/${secret}>`,
        publicKeyPin: (secret) => `<public-key pin of Secret ${d.namespace}/${secret}>`,
        internalApiId: (ref: Required<NamespacedRef>) => {
          const other = docs.find(
            (o) => o.kind === 'ApiDefinition' && o.namespace === ref.namespace && o.name === ref.name,
          );
          const id = (other?.value.spec as ApiDefinitionSpec | undefined)?.api_id;
          return id ?? derivedId(ref.namespace, ref.name);
        },
        policyId: (ref) => policyIds.get(key(ref.namespace, ref.name)) ?? derivedId(ref.namespace, ref.name),
      },
    );
    objects.push({ ...describe(d), call: `PUT /svc/apis/${apiId}`, id: apiId, body });
  }

  for (const kind of ['SvcOasApiDefinition', 'SvcStreamsApiDefinition']) {
    for (const d of byKind(kind)) {
      if (!valid(d)) continue;
      const spec = d.value.spec as {
        svcOAS?: { configmapRef: { name: string; namespace?: string; keyName: string } };
        svcStreams?: { configmapRef: { name: string; namespace?: string; keyName: string } };
      };
      const field = kind === 'SvcOasApiDefinition' ? 'svcOAS' : 'svcStreams';
      const r = spec[field]?.configmapRef;
      if (r === undefined) continue;
      const ref = { namespace: r.namespace ?? d.namespace, name: r.name, keyName: r.keyName };
      const cm = configMaps.get(key(ref.namespace, ref.name)) as ConfigMapContent | undefined;
      const out = translateOasApiDefinition({
        namespace: d.namespace,
        name: d.name,
        orgId: opts.org,
        ref,
        configMap: cm,
        streams: kind === 'SvcStreamsApiDefinition',
      });
      if (!out.ok) {
        const hint = out.reason === 'ConfigMapNotFound' ? ' (give the ConfigMap with -f too)' : '';
        errors.push(`${d.source}: spec.${field}.configmapRef: ${out.reason}: ${out.message}${hint}`);
        continue;
      }
      apiIds.set(`${kind}/${key(d.namespace, d.name)}`, out.apiId);
      objects.push({ ...describe(d), call: `PUT /svc/apis/oas/${out.apiId}`, id: out.apiId, body: out.doc });
    }
  }

  for (const d of byKind('SecurityPolicy')) {
    if (!valid(d)) continue;
    const spec = d.value.spec as SecurityPolicySpec;
    const polId = spec.id ?? derivedId(d.namespace, d.name);
    if (spec.state === 'deny') {
      objects.push({ ...describe(d), call: `DELETE /svc/policies/${polId}`, id: polId, body: null });
      continue;
    }
    const body = translateSecurityPolicy(
      { metadata: { name: d.name, namespace: d.namespace }, spec },
      {
        polId,
        orgId: opts.org,
        apiId: (ref: ApiResourceRef) =>
          apiIds.get(`${ref.kind}/${key(ref.namespace, ref.name)}`) ?? derivedId(ref.namespace, ref.name),
      },
    );
    objects.push({ ...describe(d), call: `PUT /svc/policies/${polId}`, id: polId, body });
  }
  if (objects.length === 0 && errors.length === 0) {
    errors.push(
      `${files.map((f) => f.path).join(', ')}: no ${API_VERSION} ApiDefinition, SvcOasApiDefinition, SvcStreamsApiDefinition or SecurityPolicy found`,
    );
  }
  return { objects, errors };
}

function describe(d: Doc): Pick<TranslatedObject, 'source' | 'kind' | 'namespace' | 'name'> {
  return { source: d.source, kind: d.kind, namespace: d.namespace, name: d.name };
}
