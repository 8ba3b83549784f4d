/**
 * The federation kinds, SubGraph and SuperGraph, and the ApiDefinitions that name them in
 * `graphql.graph_ref`: read once here for the webhooks, the operator and its translation.
 *
 * - A SubGraph holds a subgraph's SDL with the federation directives (`spec.sdl`, else
 *   `spec.schema`, the reference's two fields): `subgraphProblems` checks it builds, with the line
 *   and column of the first problem, and that each `@key`, `@requires` and `@provides` names
 *   fields of its type.
 * - A SuperGraph lists SubGraphs (`spec.subgraph_refs`; `subgraphs_refs`, the reference's
 *   earlier spelling, is read too): `composeGraph` composes them (graphql-federation.ts, the
 *   composition the gateway serves) and says, field by field, why they do not.
 * - An API with `graph_ref` (execution mode `subgraph` or `supergraph`) names a SubGraph or a
 *   SuperGraph of its namespace; `inlineGraph` writes what it resolves to in the gateway's inline
 *   form (`graphql.subgraph.sdl`, `graphql.supergraph.subgraphs` and `merged_sdl`).
 */
import {
  GraphQLError,
  Kind,
  isObjectType,
  isInterfaceType,
  parse,
  type DirectiveNode,
  type SelectionSetNode,
} from 'graphql';
import { parseGraphql } from './graphql-schema.ts';
import {
  buildSubgraphSchema,
  composeSupergraph,
  readSubgraph,
  type CompositionError,
} from './graphql-federation.ts';
import { federationProblems } from './graphql-supergraph.ts';
import { problem, text, list, model } from './read.ts';
import { resolveRef, type ResolvedRef } from './references.ts';
import type { FieldProblem } from './field-problem.ts';

/** The SDL a SubGraph gives and the field it is in: `sdl`, else `schema`. */
export function subgraphSdlOf(spec: { sdl?: unknown; schema?: unknown } | undefined): {
  sdl: string;
  field: 'sdl' | 'schema';
} {
  const sdl = text(spec?.sdl) ?? '';
  if (sdl.trim() !== '') return { sdl, field: 'sdl' };
  return { sdl: text(spec?.schema) ?? '', field: 'schema' };
}

/** `line L, column C: message` of a directive argument's problem. */
const at = (node: { loc?: { startToken: { line: number; column: number } } }, message: string): string =>
  node.loc === undefined
    ? message
    : `line ${node.loc.startToken.line}, column ${node.loc.startToken.column}: ${message}`;

/** The fields of a `fields: "..."` argument, or why it does not parse. */
function fieldSet(d: DirectiveNode): SelectionSetNode | string | undefined {
  const arg = d.arguments?.find((a) => a.name.value === 'fields');
  if (arg?.value.kind !== Kind.STRING) return undefined;
  try {
    const op = parse(`{ ${arg.value.value} }`).definitions[0];
    return op?.kind === Kind.OPERATION_DEFINITION ? op.selectionSet : undefined;
  } catch (err) {
    return at(
      arg,
      `@${d.name.value}(fields: ${JSON.stringify(arg.value.value)}) does not parse: ${err instanceof GraphQLError ? err.message : String(err)}`,
    );
  }
}

/**
 * Every problem of one subgraph's SDL, each with the line and column it is at: it must parse and
 * build with the federation definitions, and each `@key` must name fields of its type
 * (`@requires` and `@provides` must parse). Problems are messages; the caller names the field.
 */
export function subgraphSdlProblems(sdl: string): string[] {
  const doc = parseGraphql(sdl);
  if (typeof doc === 'string') return [doc];
  const out: string[] = [];
  for (const def of doc.definitions) {
    if (!('directives' in def)) continue;
    const fieldDirectives = 'fields' in def ? (def.fields ?? []).flatMap((f) => f.directives ?? []) : [];
    for (const d of [...(def.directives ?? []), ...fieldDirectives]) {
      if (!['key', 'requires', 'provides'].includes(d.name.value)) continue;
      const set = fieldSet(d);
      if (typeof set === 'string') out.push(set);
    }
  }
  if (out.length > 0) return out;
  const schema = buildSubgraphSchema(sdl);
  if (typeof schema === 'string') return [schema];
  for (const def of doc.definitions) {
    if (!('directives' in def) || !('name' in def) || def.name === undefined) continue;
    const type = schema.getType(def.name.value);
    for (const d of def.directives ?? []) {
      if (d.name.value !== 'key') continue;
      const set = fieldSet(d);
      if (
        set === undefined ||
        typeof set === 'string' ||
        type === undefined ||
        !(isObjectType(type) || isInterfaceType(type))
      )
        continue;
      const fields = type.getFields();
      for (const s of set.selections) {
        if (s.kind === Kind.FIELD && fields[s.name.value] === undefined)
          out.push(at(d, `@key names ${s.name.value}, which is not a field of ${def.name.value}`));
      }
    }
  }
  return out;
}

/** Problems of a SubGraph's spec (paths relative to `spec`). */
export function subgraphProblems(spec: { sdl?: unknown; schema?: unknown } | undefined): FieldProblem[] {
  const { sdl, field } = subgraphSdlOf(spec);
  if (sdl.trim() === '')
    return [
      problem(
        'sdl',
        'Required',
        "a SubGraph needs its SDL with the federation directives: set spec.sdl (or spec.schema, the reference's field)",
      ),
    ];
  const problems = subgraphSdlProblems(sdl).map((m) => problem(field, 'Invalid', m));
  // The reference's full schema beside the SDL: it must parse too, though the SDL is what is served.
  const schema = text(spec?.schema) ?? '';
  if (field === 'sdl' && schema.trim() !== '') {
    const parsed = parseGraphql(schema);
    if (typeof parsed === 'string') problems.push(problem('schema', 'Invalid', parsed));
  }
  return problems;
}

/** What svc's supergraph planner does not serve of a subgraph: remarks, not refusals, on a SubGraph. */
export function plannerRemarks(sdl: string): string[] {
  const read = readSubgraph(sdl);
  if (typeof read === 'string') return [];
  return [
    ...read.nestedKeys.map((t) => `${t}: a @key with nested fields is not served by a supergraph yet`),
    ...read.keyedInterfaces.map((t) => `${t}: an interface with @key is not served by a supergraph yet`),
  ];
}

/** The SubGraphs a SuperGraph lists, by `subgraph_refs` (or `subgraphs_refs`), with the field of each. */
export function subgraphRefsOf(
  spec: { subgraph_refs?: unknown; subgraphs_refs?: unknown } | undefined,
  namespace: string,
): { path: string; ref: ResolvedRef | undefined }[] {
  const field = spec?.subgraph_refs !== undefined ? 'subgraph_refs' : 'subgraphs_refs';
  return list(spec?.[field]).map((r, i) => ({ path: `${field}[${i}]`, ref: resolveRef(r, namespace) }));
}

/** Problems of a SuperGraph's spec (paths relative to `spec`). */
export function supergraphProblems(
  spec:
    { subgraph_refs?: unknown; subgraphs_refs?: unknown; schema?: unknown; merged_sdl?: unknown } | undefined,
  namespace: string,
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (spec?.subgraph_refs !== undefined && spec.subgraphs_refs !== undefined)
    problems.push(
      problem(
        'subgraphs_refs',
        'Forbidden',
        "the reference's earlier spelling of subgraph_refs: list the SubGraphs in subgraph_refs alone",
      ),
    );
  const refs = subgraphRefsOf(spec, namespace);
  if (refs.length === 0)
    problems.push(problem('subgraph_refs', 'Required', 'a SuperGraph composes SubGraphs: list at least one'));
  const seen = new Map<string, string>();
  for (const { path, ref } of refs) {
    if (ref === undefined) {
      problems.push(
        problem(path, 'Invalid', 'name a SubGraph: "name", "namespace/name" or {name, namespace}'),
      );
      continue;
    }
    const key = `${ref.namespace}/${ref.name}`;
    const first = seen.get(key);
    if (first !== undefined)
      problems.push(problem(path, 'Invalid', `lists SubGraph ${key} again (${first})`));
    else seen.set(key, path);
  }
  for (const field of ['schema', 'merged_sdl'] as const) {
    const sdl = text(spec?.[field]) ?? '';
    if (sdl.trim() === '') continue;
    const parsed = parseGraphql(sdl);
    if (typeof parsed === 'string') problems.push(problem(field, 'Invalid', parsed));
  }
  return problems;
}

/** A subgraph of a composition: the SubGraph's name and namespace and its SDL. */
export interface ComposedSubgraph {
  name: string;
  namespace: string;
  sdl: string;
}

/** Why a composition fails, one entry per problem: the SubGraph it is about and the field (`Type.field`). */
export interface GraphError {
  subgraph?: string;
  field?: string;
  message: string;
}

/**
 * Composes a SuperGraph from its SubGraphs: the schema served (`given`: the SuperGraph's own
 * `schema` or `merged_sdl`, else the composition), or every reason it can't be, field by field:
 * subgraphs that do not compose (a field typed two ways), and what the gateway's supergraph would
 * refuse (a root field no subgraph resolves, a `@key` of nested fields).
 */
export function composeGraph(
  subgraphs: readonly ComposedSubgraph[],
  given: string,
): { schema: string } | { errors: GraphError[] } {
  const named = subgraphs.map((s) => ({ name: s.name, sdl: s.sdl }));
  const composed = composeSupergraph(named);
  if ('errors' in composed) return { errors: composed.errors.map(graphError) };
  const schema = given.trim() !== '' ? given : composed.sdl;
  const problems = federationProblems('supergraph', {
    schema,
    supergraph: { subgraphs: named.map((s) => ({ ...s, url: `http://${s.name}.subgraph.invalid/` })) },
  });
  if (problems.length === 0) return { schema };
  return {
    errors: problems.map((p) => {
      const i = /^graphql\.supergraph\.subgraphs\[(\d+)\]/.exec(p.path)?.[1];
      const sub = i === undefined ? undefined : subgraphs[Number(i)];
      const field = /^([A-Za-z_]\w*\.[A-Za-z_]\w*): /.exec(p.message)?.[1];
      return {
        ...(sub === undefined ? {} : { subgraph: sub.name }),
        ...(field === undefined ? {} : { field }),
        message: p.message,
      };
    }),
  };
}

function graphError(e: CompositionError): GraphError {
  return {
    ...(e.subgraphs.length === 1 && e.subgraphs[0] !== undefined ? { subgraph: e.subgraphs[0] } : {}),
    ...(e.field === undefined ? {} : { field: e.field }),
    message: e.message,
  };
}

/** The graph an API names: `graphql.graph_ref` with its namespace, in execution mode subgraph or supergraph. */
export function graphRefOf(
  value: unknown,
  namespace: string,
): { kind: 'SubGraph' | 'SuperGraph'; ref: ResolvedRef } | undefined {
  const graphql = model<{ graph_ref: unknown; execution_mode: unknown }>(value);
  const name = text(graphql?.graph_ref) ?? '';
  const mode = text(graphql?.execution_mode);
  if (name === '' || (mode !== 'subgraph' && mode !== 'supergraph')) return undefined;
  const ref = resolveRef(name, namespace);
  if (ref === undefined) return undefined;
  return { kind: mode === 'subgraph' ? 'SubGraph' : 'SuperGraph', ref };
}

/** Problems of `graphql.graph_ref` (paths relative to the API's spec). */
export function graphRefProblems(value: unknown): FieldProblem[] {
  const graphql = model<{
    graph_ref: unknown;
    execution_mode: unknown;
    subgraph: unknown;
    supergraph: unknown;
  }>(value);
  const name = text(graphql?.graph_ref) ?? '';
  if (name === '') return [];
  const mode = text(graphql?.execution_mode) ?? 'proxyOnly';
  if (mode !== 'subgraph' && mode !== 'supergraph')
    return [
      problem(
        'graphql.graph_ref',
        'Forbidden',
        `names a SubGraph (execution_mode subgraph) or a SuperGraph (execution_mode supergraph), not a graph of execution_mode ${mode}`,
      ),
    ];
  if (name.includes('/'))
    return [
      problem(
        'graphql.graph_ref',
        'Invalid',
        `names a ${mode === 'subgraph' ? 'SubGraph' : 'SuperGraph'} of the API's namespace by its name alone`,
      ),
    ];
  const inline = mode === 'subgraph' ? 'subgraph' : 'supergraph';
  const own = model<Record<string, unknown>>(graphql?.[inline]);
  const set = Object.entries(own ?? {}).filter(
    ([, v]) => v !== undefined && v !== '' && !(Array.isArray(v) && v.length === 0),
  );
  const fields = mode === 'subgraph' ? set : set.filter(([k]) => k === 'subgraphs' || k === 'merged_sdl');
  return fields.map(([k]) =>
    problem(
      `graphql.${inline}.${k}`,
      'Forbidden',
      `graph_ref names the ${mode === 'subgraph' ? 'SubGraph' : 'SuperGraph'} that gives it: remove graphql.${inline}.${k}, or graph_ref`,
    ),
  );
}

/** What a graph reference resolves to, as the API's translation writes it. */
export type ResolvedGraph =
  | { kind: 'SubGraph'; sdl: string }
  | {
      kind: 'SuperGraph';
      /** The composed (or given) schema, the last good one. */
      schema: string;
      /**
       * Each subgraph with the URL of the subgraph API that serves it (`svc://<api id>/`), and the
       * headers sent to it (`subgraphs_refs[].headers`: subgraph-apis.ts).
       */
      subgraphs: readonly { name: string; url: string; sdl: string; headers?: Record<string, string> }[];
    };

/**
 * `graphql` with `graph_ref` (or `supergraph.subgraphs_refs`, subgraph-apis.ts) replaced by what it
 * resolves to, in the gateway's inline form: a SubGraph's SDL in `subgraph.sdl`; a supergraph's
 * subgraphs in `supergraph.subgraphs` and its schema in `supergraph.merged_sdl` (the supergraph's
 * other settings, its headers, are kept).
 */
export function inlineGraph<G extends { graph_ref?: string; subgraph?: object; supergraph?: object }>(
  graphql: G,
  graph: ResolvedGraph,
): G {
  const { graph_ref: _ref, ...rest } = graphql;
  if (graph.kind === 'SubGraph') return { ...rest, subgraph: { ...rest.subgraph, sdl: graph.sdl } } as G;
  const { subgraphs_refs: _refs, ...supergraph } = (rest.supergraph ?? {}) as Record<string, unknown>;
  return {
    ...rest,
    supergraph: {
      ...supergraph,
      subgraphs: graph.subgraphs.map((s) => ({
        name: s.name,
        url: s.url,
        sdl: s.sdl,
        ...(s.headers === undefined ? {} : { headers: s.headers }),
      })),
      merged_sdl: graph.schema,
    },
  } as G;
}
