/**
 * A federated API's GraphQL settings (`execution_mode` subgraph or supergraph), read once for the
 * webhooks and the gateway: a supergraph's subgraphs as the gateway calls them
 * (`supergraphSubgraphs`), the SDL each mode serves (`supergraphSdl`, `subgraphSdl`), and every
 * problem of the settings (`federationProblems`). Reading an SDL and composing a supergraph is
 * graphql-federation.ts.
 */
import { quote, type FieldProblem } from './field-problem.ts';
import {
  buildSubgraphSchema,
  buildSupergraphSchema,
  composeSupergraph,
  compositionErrorText,
  readSubgraph,
  type SubgraphModel,
} from './graphql-federation.ts';
import { isInternalUrl, parseInternalTarget } from './internal-target.ts';
import { isTargetProblem } from './target.ts';
import { hasContent } from '../support.ts';
import { list, model, problem, text } from './read.ts';

/** The supergraph settings the gateway serves, and those of each subgraph. */
const SUPERGRAPH_FIELDS = [
  'subgraphs',
  'merged_sdl',
  'global_headers',
  'disable_query_batching',
  'updated_at',
];
const SUBGRAPH_FIELDS = ['api_id', 'name', 'url', 'sdl', 'headers', 'subscription_type'];

/**
 * The protocol subscriptions are forwarded to a subgraph with (`subscription_type`; empty means
 * this one): GraphQL over WebSocket as the `graphql-ws` library speaks it.
 */
export const TRANSPORT_WS = 'graphql-transport-ws';

/** A subgraph of a supergraph as the gateway reads it. */
export interface SupergraphSubgraph {
  name: string;
  url: string;
  headers: Record<string, string>;
  model: SubgraphModel;
}

/** A supergraph's settings read (what `federationProblems` admitted). */
export function supergraphSubgraphs(supergraph: unknown): SupergraphSubgraph[] {
  const out: SupergraphSubgraph[] = [];
  const s = model<{ subgraphs: unknown; global_headers: unknown }>(supergraph);
  const global = stringMap(s?.global_headers);
  list(s?.subgraphs).forEach((raw, i) => {
    const g = model<{ name: unknown; api_id: unknown; url: unknown; sdl: unknown; headers: unknown }>(raw);
    const read = readSubgraph(text(g?.sdl) ?? '');
    if (typeof read === 'string') return;
    out.push({
      name: text(g?.name) ?? text(g?.api_id) ?? `subgraphs[${i}]`,
      url: text(g?.url) ?? '',
      headers: { ...global, ...stringMap(g?.headers) },
      model: read,
    });
  });
  return out;
}

function stringMap(v: unknown): Record<string, string> {
  const m = model<Record<string, unknown>>(v) ?? {};
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(m)) if (typeof x === 'string') out[k] = x;
  return out;
}

/**
 * The supergraph's merged SDL: `graphql.schema`, else `supergraph.merged_sdl`, else composed from
 * its subgraphs (`composeSupergraph`; empty when they do not compose).
 */
export function supergraphSdl(graphql: { schema?: unknown; supergraph?: unknown }): string {
  const own = text(graphql.schema) ?? '';
  if (own !== '') return own;
  const merged = text(model<{ merged_sdl: unknown }>(graphql.supergraph)?.merged_sdl) ?? '';
  if (merged !== '') return merged;
  const composed = composeSupergraph(subgraphSdls(graphql.supergraph));
  return 'sdl' in composed ? composed.sdl : '';
}

/** The SDL of each subgraph of a supergraph, by name. */
function subgraphSdls(supergraph: unknown): { name: string; sdl: string }[] {
  return list(model<{ subgraphs: unknown }>(supergraph)?.subgraphs).map((raw, i) => {
    const g = model<{ name: unknown; sdl: unknown }>(raw);
    return { name: text(g?.name) ?? `subgraphs[${i}]`, sdl: text(g?.sdl) ?? '' };
  });
}

/** A subgraph's SDL: `graphql.subgraph.sdl`, else `graphql.schema`. */
export function subgraphSdl(graphql: { schema?: unknown; subgraph?: unknown }): string {
  const own = text(model<{ sdl: unknown }>(graphql.subgraph)?.sdl) ?? '';
  return own !== '' ? own : (text(graphql.schema) ?? '');
}

function urlProblem(url: string): string | undefined {
  if (isInternalUrl(url)) {
    const t = parseInternalTarget(url);
    return isTargetProblem(t) ? t.message : undefined;
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `${quote(url)} is not an absolute URL: write svc://<api>/<path> (a subgraph API of this gateway) or http(s)://host/path`;
  }
  if (u.protocol === 'tyk:')
    return `${quote(url)}: another API of the gateway is written svc://<api>/<path> here (tyk:// is the reference gateway's spelling)`;
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    return `${quote(url)} has the scheme ${quote(u.protocol.slice(0, -1))}: subgraphs are called over http(s) or svc://`;
  return undefined;
}

/** Every problem of a federated API's GraphQL settings (`mode` subgraph or supergraph). */
export function federationProblems(
  mode: string,
  graphql: { schema?: unknown; subgraph?: unknown; supergraph?: unknown },
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  // The other mode's block is accepted when it sets nothing: the reference's dashboard exports
  // write both blocks, the unused one with its zero values (`subgraph: {sdl: ''}`, a supergraph
  // of empty strings and maps), which its gateway ignores, and so does svc.
  if (mode === 'subgraph') {
    if (hasContent(graphql.supergraph))
      problems.push(
        problem('graphql.supergraph', 'Forbidden', 'a subgraph API takes graphql.subgraph, not supergraph'),
      );
    const sdl = subgraphSdl(graphql);
    const at = text(model<{ sdl: unknown }>(graphql.subgraph)?.sdl)
      ? 'graphql.subgraph.sdl'
      : 'graphql.schema';
    if (sdl === '') {
      problems.push(
        problem(
          'graphql.subgraph.sdl',
          'Required',
          "a subgraph API needs its subgraph's SDL: set graphql.subgraph.sdl",
        ),
      );
    } else {
      const built = buildSubgraphSchema(sdl);
      if (typeof built === 'string')
        problems.push(problem(at, 'Invalid', `the subgraph SDL does not build: ${built}`));
    }
    return problems;
  }
  if (hasContent(graphql.subgraph))
    problems.push(
      problem('graphql.subgraph', 'Forbidden', 'a supergraph API takes graphql.supergraph, not subgraph'),
    );
  const s = model<Record<string, unknown>>(graphql.supergraph);
  for (const k of Object.keys(s ?? {})) {
    if (!SUPERGRAPH_FIELDS.includes(k))
      problems.push(
        problem(
          `graphql.supergraph.${k}`,
          'NotSupported',
          `not a supergraph setting svc serves (${SUPERGRAPH_FIELDS.join(', ')})`,
        ),
      );
  }
  const subgraphs = list(s?.subgraphs);
  if (subgraphs.length === 0) {
    problems.push(
      problem(
        'graphql.supergraph.subgraphs',
        'Required',
        'a supergraph API needs its subgraphs: each with url and sdl',
      ),
    );
  }
  const models: SubgraphModel[] = [];
  subgraphs.forEach((raw, i) => {
    const at = `graphql.supergraph.subgraphs[${i}]`;
    const g = model<Record<string, unknown>>(raw) ?? {};
    for (const k of Object.keys(g)) {
      if (!SUBGRAPH_FIELDS.includes(k))
        problems.push(
          problem(
            `${at}.${k}`,
            'NotSupported',
            `not a subgraph setting svc serves (${SUBGRAPH_FIELDS.join(', ')})`,
          ),
        );
    }
    const url = text(g.url) ?? '';
    const bad =
      url === ''
        ? 'each subgraph needs the URL it is called at (svc://<subgraph api> or http(s)://...)'
        : urlProblem(url);
    if (bad !== undefined) problems.push(problem(`${at}.url`, url === '' ? 'Required' : 'Invalid', bad));
    const protocol = text(g.subscription_type) ?? '';
    if (protocol !== '' && protocol !== TRANSPORT_WS)
      problems.push(
        problem(
          `${at}.subscription_type`,
          'NotSupported',
          `subscriptions are sent to subgraphs over WebSocket with ${TRANSPORT_WS} only (${protocol === 'sse' ? 'server-sent events are' : `${quote(protocol)} is`} not supported yet): set ${TRANSPORT_WS} or leave it empty`,
        ),
      );
    const read = readSubgraph(text(g.sdl) ?? '');
    if ((text(g.sdl) ?? '') === '')
      problems.push(problem(`${at}.sdl`, 'Required', "each subgraph needs its SDL (the subgraph's schema)"));
    else if (typeof read === 'string')
      problems.push(problem(`${at}.sdl`, 'Invalid', `the subgraph SDL does not parse: ${read}`));
    else {
      models.push(read);
      if (read.nestedKeys[0] !== undefined)
        problems.push(
          problem(
            `${at}.sdl`,
            'NotSupported',
            `${read.nestedKeys[0]}: a @key with nested fields is not supported yet by svc's supergraph planner`,
          ),
        );
      if (read.keyedInterfaces[0] !== undefined)
        problems.push(
          problem(
            `${at}.sdl`,
            'NotSupported',
            `${read.keyedInterfaces[0]}: an interface with @key (an entity interface) is not supported yet by svc's supergraph planner`,
          ),
        );
    }
  });
  const given =
    (text(graphql.schema) ?? '') !== '' || (text(model<{ merged_sdl: unknown }>(s)?.merged_sdl) ?? '') !== '';
  if (!given && models.length === subgraphs.length && subgraphs.length > 0) {
    const composed = composeSupergraph(subgraphSdls(graphql.supergraph));
    if ('errors' in composed) {
      for (const e of composed.errors)
        problems.push(
          problem(
            'graphql.supergraph.subgraphs',
            'Invalid',
            `the subgraphs do not compose: ${compositionErrorText(e)}`,
          ),
        );
      return problems;
    }
  }
  const sdl = supergraphSdl(graphql);
  const at =
    (text(graphql.schema) ?? '') !== ''
      ? 'graphql.schema'
      : given
        ? 'graphql.supergraph.merged_sdl'
        : 'graphql.supergraph.subgraphs';
  if (sdl === '') {
    problems.push(
      problem(
        'graphql.schema',
        'Required',
        'a supergraph API needs the merged schema (SDL): set graphql.schema, or subgraphs that compose',
      ),
    );
    return problems;
  }
  const schema = buildSupergraphSchema(sdl);
  if (typeof schema === 'string') {
    problems.push(problem(at, 'Invalid', `the merged schema does not build: ${schema}`));
    return problems;
  }
  if (models.length !== subgraphs.length) return problems;
  // Every field a client may ask for is served by a subgraph (a subscription by the subgraph
  // whose socket it is forwarded to).
  for (const root of [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]) {
    if (root === null || root === undefined) continue;
    for (const f of Object.keys(root.getFields())) {
      if (!models.some((m) => m.owns.get(root.name)?.has(f) === true))
        problems.push(problem(at, 'Invalid', `${root.name}.${f}: no subgraph resolves this field`));
    }
  }
  return problems;
}
