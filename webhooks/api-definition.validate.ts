/**
 * Admission rules of ApiDefinition (classic APIs), after its full schema. The rules of the classic
 * model are the gateway's own (schemas/rules/api-definition.ts), so a manifest admitted here is
 * one the gateway serves; this file adds what only a cluster has (route claims across resources,
 * references) and the CRD's CEL rules, so that its answer is complete without an API server.
 */
import { checkClassicApi, classicApiWarnings } from '../schemas/rules/api-definition.ts';
import { hasContent } from '../schemas/support.ts';
import type { ApiDefinition } from '../schemas/generated/kinds.ts';
import { asArray, asNumber, asString, metadataOf, metaOf, refOf, specOf } from './access.ts';
import { model } from '../schemas/rules/read.ts';
import { fe, mergeErrors } from './field-error.ts';
import type { FieldError, Validator, Verdict } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { contextRefWarnings, deleteVerdict, policiesCovering } from './references.ts';
import { apiDefinitionClaim, conflictMessage, findConflict } from './routes.ts';
import { schemaErrors } from './schema.ts';
import { isTcpApi } from '../schemas/rules/tcp.ts';
import { EARLIER_CONTEXT, earlierNameProblems } from '../schemas/rules/earlier-names.ts';
import {
  certificateSecretRefs,
  otherNamespaceProblems,
  secretRefProblems,
  withSecretRefs,
} from '../schemas/rules/secret-refs.ts';
import { isTemplate } from '../schemas/templates.ts';
import { templateDeleteVerdict, templateErrors } from './template.ts';
import { graphRefOf, graphRefProblems } from '../schemas/rules/graphs.ts';
import { subgraphApiRefProblems, subgraphApiRefsOf } from '../schemas/rules/subgraph-apis.ts';

/**
 * Fields of the gateway's model that the resource spells differently: the shared rules speak of
 * `certificates`, the resource holds the Secrets that become them.
 */
const specField: Readonly<Record<string, string>> = { certificates: 'certificate_secret_names' };

/** A path of the gateway's model (`certificates[0]`) as a path of the resource (`spec.certificate_secret_names[0]`). */
function specPath(path: string): string {
  const field = /^[A-Za-z_]\w*/.exec(path)?.[0] ?? '';
  const renamed = specField[field];
  return `spec.${renamed === undefined ? path : renamed + path.slice(field.length)}`;
}

/** Validates an ApiDefinition on create or update. */
export const validateApiDefinition: Validator = async (obj, _old, lookups) => {
  const spec = specOf<ApiDefinition>(obj);
  // Certificates named by Secret stand in their gateway fields, so the gateway's rules check them.
  const { api: withRefs, refPath } = withSecretRefs(spec);
  const { graphql, fromGraph } = withoutGraphRef(withRefs.graphql);
  const classic = { ...withRefs, certificates: undefined, graphql };
  const errors: FieldError[] = [
    ...checkClassicApi(classic).filter((p) => !fromGraph(p.path)),
    ...secretRefProblems(spec),
    ...otherNamespaceProblems(
      spec,
      metaOf(obj).namespace,
      model<Record<string, unknown>>(metadataOf(obj).labels),
    ),
    ...graphRefProblems(withRefs.graphql),
    ...subgraphApiRefProblems(withRefs.graphql, metaOf(obj).namespace),
    ...earlierNameProblems(EARLIER_CONTEXT, spec, metaOf(obj).namespace),
  ].map((p) => ({
    ...p,
    path: specPath(refPath(p.path)),
  }));
  const warnings = classicApiWarnings(classic).map((w) => `${specPath(refPath(w.path))}: ${w.message}`);

  // `certificates` of the resource are gateway IDs the shared rules never see (they check the
  // IDs the operator uploads from certificate_secret_names).
  if (hasContent(spec.certificates)) errors.push(fe.notSupportedYet('spec.certificates'));

  // The CRD states these in CEL too; the API server answers them before this webhook is called.
  const port = asNumber(spec.listen_port) ?? 0;
  if (port > 0 && (asString(spec.protocol) ?? '') === '') {
    errors.push(
      fe.required(
        'spec.protocol',
        'listen_port needs a protocol: set protocol to http, https, tcp or tls, or remove listen_port',
      ),
    );
  }

  // A listen path the rules refuse claims nothing.
  const claim = apiDefinitionClaim(obj);
  if (claim !== undefined && !errors.some((e) => e.path === 'spec.proxy.listen_path')) {
    const other = await findConflict(claim, lookups);
    if (other !== undefined)
      errors.push(
        isTcpApi(spec)
          ? fe.invalid(
              'spec.listen_port',
              `${String(claim.port ?? 0)} is already the port of ${other.kind} ${other.namespace}/${other.name} on the same gateway: a tcp or tls API has its port alone`,
            )
          : fe.invalid('spec.proxy.listen_path', conflictMessage(claim, other)),
      );
  }

  warnings.push(...(await contextRefWarnings(obj, lookups)), ...(await referenceWarnings(obj, lookups)));
  const all = mergeErrors(schemaErrors('ApiDefinition', obj), errors);
  // A template's Ingresses supply its listen path and target.
  return { errors: isTemplate(obj) ? templateErrors(all) : all, warnings };
};

/**
 * `graphql` as the shared rules check it when `graph_ref` names a SubGraph or SuperGraph: without
 * `graph_ref` (the gateway's model refuses it: the operator writes what it names inline), and
 * `fromGraph`: the paths the graph fills (its SDL, its subgraphs, the merged schema), whose
 * problems are the graph's own, checked by its webhook and composition.
 */
function withoutGraphRef(graphql: unknown): { graphql: unknown; fromGraph: (path: string) => boolean } {
  const g = graphql as { graph_ref?: unknown; execution_mode?: unknown; supergraph?: unknown } | undefined;
  // The reference's earlier form, subgraph APIs by name (schemas/rules/subgraph-apis.ts): the
  // operator composes the supergraph from them; subgraphApiRefProblems checks the form.
  if (g?.graph_ref === undefined && subgraphApiRefsOf(graphql, '') !== undefined) {
    const { subgraphs_refs: _refs, ...supergraph } = g?.supergraph as Record<string, unknown>;
    return {
      graphql: { ...g, supergraph },
      fromGraph: (path) =>
        path === 'graphql.schema' ||
        path === 'graphql.supergraph.subgraphs' ||
        path.startsWith('graphql.supergraph.subgraphs['),
    };
  }
  if (g?.graph_ref === undefined) return { graphql, fromGraph: () => false };
  // graph_ref's own problems are graphRefProblems'.
  const { graph_ref: _ref, ...rest } = g;
  if (graphRefOf(g, '') === undefined) return { graphql: rest, fromGraph: () => false };
  return {
    graphql: rest,
    fromGraph: (path) =>
      path === 'graphql.schema' ||
      path.startsWith('graphql.subgraph.') ||
      path === 'graphql.subgraph' ||
      path.startsWith('graphql.supergraph'),
  };
}

/** Refuses the DELETE of an API that SecurityPolicies still cover, or of a template Ingresses use. */
export async function validateApiDefinitionDelete(old: unknown, lookups: Lookups): Promise<Verdict> {
  const { namespace, name } = metaOf(old);
  const template = await templateDeleteVerdict(old, lookups);
  if (template.errors.length > 0) return template;
  return deleteVerdict(
    `ApiDefinition ${namespace}/${name}`,
    await policiesCovering(lookups, 'ApiDefinition', namespace, name),
    'remove it from the access_rights_array of these policies (or delete them) first',
  );
}

/** Warnings for Secrets and SecurityPolicies the API names but that don't exist yet. */
async function referenceWarnings(obj: unknown, lookups: Lookups): Promise<string[]> {
  const { namespace } = metaOf(obj);
  const warnings: string[] = [];
  // The operator reads each Secret's certificate (and uploads it to the gateway, `/svc/certs`).
  for (const { path, name, namespace: other } of certificateSecretRefs(specOf<ApiDefinition>(obj))) {
    const ns = other ?? namespace;
    if ((await lookups.secretKeys(ns, name)) === undefined) {
      warnings.push(`${path}: Secret ${ns}/${name} does not exist yet: the API is not served until it does`);
    }
  }
  const graph = graphRefOf(specOf<ApiDefinition>(obj).graphql, namespace);
  if (
    graph !== undefined &&
    (await lookups.get(graph.kind, graph.ref.namespace, graph.ref.name)) === undefined
  ) {
    warnings.push(
      `spec.graphql.graph_ref: ${graph.kind} ${graph.ref.namespace}/${graph.ref.name} does not exist yet: the API is not served until it does`,
    );
  }
  for (const { path, ref } of subgraphApiRefsOf(specOf<ApiDefinition>(obj).graphql, namespace) ?? []) {
    if (ref !== undefined && (await lookups.get('ApiDefinition', ref.namespace, ref.name)) === undefined)
      warnings.push(
        `spec.${path}: ApiDefinition ${ref.namespace}/${ref.name} does not exist yet: the API is not served until it does`,
      );
  }
  const policies = asArray(specOf<ApiDefinition>(obj).jwt_default_policies);
  for (const [i, r] of policies.entries()) {
    const ref = refOf(r, namespace);
    if (ref === undefined) continue;
    if ((await lookups.get('SecurityPolicy', ref.namespace, ref.name)) === undefined) {
      warnings.push(
        `spec.jwt_default_policies[${i}]: SecurityPolicy ${ref.namespace}/${ref.name} does not exist yet: tokens without a policy claim get no policy until it does`,
      );
    }
  }
  return warnings;
}
