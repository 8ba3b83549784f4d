/**
 * `graphql.supergraph.subgraphs_refs`: the reference operator's earlier form of a supergraph API
 * (its sample `09-federation/supergraph.yaml`), naming the subgraph ApiDefinitions it composes,
 * each `{name, namespace, headers}`, instead of a SuperGraph resource (`graph_ref`). Read once here
 * for the webhooks, the operator and the measure of the reference's samples:
 *
 * - `subgraphApiRefProblems`: what the webhook refuses of the form, by field;
 * - `composeSubgraphApis`: what the operator writes into the API, composed the way a SuperGraph is
 *   (`composeGraph`, graphs.ts): each named API's SDL (its `graphql.subgraph.sdl`, or the SubGraph
 *   its `graph_ref` names), called through the gateway as `svc://<its api_id>/` with the ref's
 *   headers; or why the API waits (an API or SubGraph missing, no SDL, no composition).
 */
import { isPlainObject } from '../../lib/plain-object.ts';
import { composeGraph, graphRefOf, type ResolvedGraph } from './graphs.ts';
import { parseGraphql } from './graphql-schema.ts';
import { list, model, problem, text } from './read.ts';
import { resolveRef, type ResolvedRef } from './references.ts';
import type { FieldProblem } from './field-problem.ts';
import { hasContent } from '../support.ts';

const FIELD = 'graphql.supergraph.subgraphs_refs';
const REF_FIELDS = ['name', 'namespace', 'headers'];

/** One entry of `subgraphs_refs`: the subgraph API it names (undefined: none) and its headers. */
export interface SubgraphApiRef {
  path: string;
  ref: ResolvedRef | undefined;
  headers: Record<string, string>;
}

interface Graphql {
  execution_mode?: unknown;
  graph_ref?: unknown;
  schema?: unknown;
  supergraph?: unknown;
}

/** The subgraph APIs a supergraph API names, or undefined when it names none (the field absent or empty). */
export function subgraphApiRefsOf(graphql: unknown, namespace: string): SubgraphApiRef[] | undefined {
  const g = model<Graphql>(graphql);
  const refs = list(model<{ subgraphs_refs: unknown }>(g?.supergraph)?.subgraphs_refs);
  if (refs.length === 0) return undefined;
  return refs.map((r, i) => ({
    path: `${FIELD}[${i}]`,
    ref: resolveRef(isPlainObject(r) ? { name: r.name, namespace: r.namespace } : undefined, namespace),
    headers: stringMap(model<{ headers: unknown }>(r)?.headers),
  }));
}

function stringMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(model<Record<string, unknown>>(v) ?? {}))
    if (typeof x === 'string') out[k] = x;
  return out;
}

/** Problems of `subgraphs_refs` (paths relative to the API's spec). */
export function subgraphApiRefProblems(graphql: unknown, namespace: string): FieldProblem[] {
  const refs = subgraphApiRefsOf(graphql, namespace);
  if (refs === undefined) return [];
  const g = model<Graphql>(graphql);
  const out: FieldProblem[] = [];
  const mode = text(g?.execution_mode) ?? 'proxyOnly';
  if (mode !== 'supergraph')
    out.push(
      problem(
        FIELD,
        'Forbidden',
        `names the subgraph APIs of a supergraph (execution_mode supergraph), not of ${mode}`,
      ),
    );
  if (text(g?.graph_ref) !== undefined && text(g?.graph_ref) !== '')
    out.push(
      problem(
        FIELD,
        'Forbidden',
        'graph_ref names a SuperGraph that gives the subgraphs: keep one of the two',
      ),
    );
  if (hasContent(model<{ subgraphs: unknown }>(g?.supergraph)?.subgraphs))
    out.push(
      problem(
        'graphql.supergraph.subgraphs',
        'Forbidden',
        'subgraphs_refs gives the subgraphs (the operator writes them from the APIs it names): remove subgraphs, or subgraphs_refs',
      ),
    );
  const raw = list(model<{ subgraphs_refs: unknown }>(g?.supergraph)?.subgraphs_refs);
  const seen = new Map<string, string>();
  refs.forEach(({ path, ref }, i) => {
    const entry = raw[i];
    if (ref === undefined) {
      out.push(problem(path, 'Invalid', 'name a subgraph ApiDefinition as {name, namespace}'));
      return;
    }
    for (const k of Object.keys(model<Record<string, unknown>>(entry) ?? {}))
      if (!REF_FIELDS.includes(k))
        out.push(
          problem(
            `${path}.${k}`,
            'Forbidden',
            `not a field of a subgraph reference (${REF_FIELDS.join(', ')})`,
          ),
        );
    const headers = model<{ headers: unknown }>(entry)?.headers;
    if (
      headers !== undefined &&
      (!isPlainObject(headers) || Object.values(headers).some((v) => typeof v !== 'string'))
    )
      out.push(problem(`${path}.headers`, 'Invalid', 'a map of header names to string values'));
    const key = `${ref.namespace}/${ref.name}`;
    const first = seen.get(key);
    if (first !== undefined)
      out.push(problem(path, 'Invalid', `names ApiDefinition ${key} again (${first})`));
    else seen.set(key, path);
  });
  const schema = text(g?.schema) ?? '';
  if (schema.trim() !== '') {
    const parsed = parseGraphql(schema);
    if (typeof parsed === 'string') out.push(problem('graphql.schema', 'Invalid', parsed));
  }
  return out;
}

/** A subgraph API as the composition reads it. */
export interface SubgraphApi {
  /** Its gateway ID (`api_id`, else derived from its namespaced name). */
  id: string;
  graphql: unknown;
}

/** Why a supergraph API by subgraphs_refs is not composed yet. */
export interface SubgraphApiWait {
  reason: 'SubGraphApiNotFound' | 'SubGraphApiInvalid' | 'SubGraphNotFound' | 'CompositionFailed';
  message: string;
}

/**
 * The supergraph an API with `subgraphs_refs` serves, composed from the APIs it names (the
 * schema the API gives, `graphql.schema` else `supergraph.merged_sdl`, served when it composes),
 * or why it waits; undefined when it names none.
 */
export function composeSubgraphApis(
  graphql: unknown,
  namespace: string,
  lookups: {
    api: (ref: ResolvedRef) => SubgraphApi | undefined;
    /** The SDL of a SubGraph (undefined: it does not exist). */
    subGraphSdl: (ref: ResolvedRef) => string | undefined;
  },
): { graph: ResolvedGraph } | SubgraphApiWait | undefined {
  const refs = subgraphApiRefsOf(graphql, namespace);
  if (refs === undefined) return undefined;
  const subgraphs: {
    name: string;
    namespace: string;
    sdl: string;
    url: string;
    headers: Record<string, string>;
  }[] = [];
  for (const { path, ref, headers } of refs) {
    if (ref === undefined)
      return { reason: 'SubGraphApiInvalid', message: `spec.${path}: names no ApiDefinition` };
    const what = `ApiDefinition ${ref.namespace}/${ref.name}`;
    const api = lookups.api(ref);
    if (api === undefined)
      return {
        reason: 'SubGraphApiNotFound',
        message: `spec.${path}: ${what} does not exist: the supergraph is composed once it does`,
      };
    const g = model<{ execution_mode: unknown; subgraph: unknown }>(api.graphql);
    if (text(g?.execution_mode) !== 'subgraph')
      return {
        reason: 'SubGraphApiInvalid',
        message: `spec.${path}: ${what} is not a subgraph API (graphql.execution_mode subgraph)`,
      };
    const named = graphRefOf(api.graphql, ref.namespace);
    let sdl = text(model<{ sdl: unknown }>(g?.subgraph)?.sdl) ?? '';
    if (named?.kind === 'SubGraph') {
      const fromGraph = lookups.subGraphSdl(named.ref);
      if (fromGraph === undefined)
        return {
          reason: 'SubGraphNotFound',
          message: `spec.${path}: ${what} serves SubGraph ${named.ref.namespace}/${named.ref.name}, which does not exist: the supergraph is composed once it does`,
        };
      sdl = fromGraph;
    }
    if (sdl.trim() === '')
      return {
        reason: 'SubGraphApiInvalid',
        message: `spec.${path}: ${what} gives no SDL (graphql.subgraph.sdl)`,
      };
    subgraphs.push({ name: ref.name, namespace: ref.namespace, sdl, url: `svc://${api.id}/`, headers });
  }
  const g = model<Graphql>(graphql);
  const given =
    [text(g?.schema), text(model<{ merged_sdl: unknown }>(g?.supergraph)?.merged_sdl)].find(
      (v): v is string => v !== undefined && v.trim() !== '',
    ) ?? '';
  const composed = composeGraph(subgraphs, given);
  if ('errors' in composed) {
    const first = composed.errors[0];
    const more = composed.errors.length > 1 ? ` (and ${String(composed.errors.length - 1)} more)` : '';
    return {
      reason: 'CompositionFailed',
      message: `spec.${FIELD}: the subgraph APIs do not compose: ${first === undefined ? '' : `${first.message}${first.subgraph === undefined ? '' : ` (ApiDefinition ${first.subgraph})`}`}${more}`,
    };
  }
  return {
    graph: {
      kind: 'SuperGraph',
      schema: composed.schema,
      subgraphs: subgraphs.map((s) => ({
        name: s.name,
        url: s.url,
        sdl: s.sdl,
        ...(Object.keys(s.headers).length > 0 ? { headers: s.headers } : {}),
      })),
    },
  };
}
