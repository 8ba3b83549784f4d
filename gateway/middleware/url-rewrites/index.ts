/**
 * `extended_paths.url_rewrites` of the request's version, as the reference gateway rewrites:
 * - the first entry matching the request's method and path (`path`, `method`) applies;
 * - its `match_pattern` (a regular expression, unanchored) is matched against the path after the
 *   listen path with the query (`/books/42?x=1`), and again percent-decoded when the raw form
 *   does not match; no match, no rewrite;
 * - then its `triggers` are checked in order: the first that holds rewrites to its own
 *   `rewrite_to`, else the entry's `rewrite_to` applies. A trigger's options (`header_matches`,
 *   `query_val_matches`, `path_part_matches`, `session_meta_matches`, `request_context_matches`,
 *   `payload_matches`) each hold when their regular expressions match (`reverse`: when they do
 *   not); `on: any` needs one of them, `on: all` every one; what they matched is kept as
 *   `$tyk_context.trigger-<n>-<name>-<i>` (and `-<group>` for their groups);
 * - in the target, `$0`, `$1`... are the groups of `match_pattern`, then `$tyk_context.` and
 *   `$tyk_meta.` variables are replaced (query-escaped unless they start with `http`);
 * - the result is the path sent upstream after the target's path (the listen path strip no longer
 *   applies); a `?` part replaces the request's query. An `http(s)://host/...` result sends the
 *   request to that host instead, with that path; an `svc://<api_id>/...` result (or
 *   `rewrite_to_internal`, which wins over `rewrite_to`) sends it through that API of the gateway
 *   (gateway/upstream/internal.ts).
 * A payload trigger reads the body, so such an API is served by node:http only.
 */
import type {
  GatewayApiDefinition,
  RoutingTrigger,
  StringRegexMap,
  VersionInfo,
} from '../../../schemas/generated/models.ts';
import { isTargetProblem, parseTarget, type Target } from '../../../schemas/rules/target.ts';
import { absoluteRewrite } from '../../../schemas/rules/endpoints.ts';
import { INTERNAL_SCHEME, internalUrl, parseInternalTarget } from '../../../schemas/rules/internal-target.ts';
import { reject } from '../../pipeline/compose.ts';
import { around, before } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { MAX_READ_BODY, type RequestContext } from '../../pipeline/context.ts';
import {
  compileEndpointEntries,
  endpointPath,
  matchingEntry,
  perVersion,
  servingVersions,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { compileValue, contextValue, valueOf, type Value } from '../../pipeline/variables.ts';

/** A regular expression of a trigger option. */
interface Matcher {
  rx: RegExp;
  reverse: boolean;
}

/** One option list of a trigger: each name with its matcher. */
type Options = { name: string; matcher: Matcher }[];

/** A rewrite target, compiled: the `$n` groups, then the variables. */
interface RewriteTarget {
  /** Another host, when the target names one. */
  host: Target | undefined;
  /** The rest (path and query), with its variables compiled; `$n` is replaced first. */
  rest: Value;
  hasGroups: boolean;
}

interface CompiledTrigger {
  any: boolean;
  headers: Options;
  query: Options;
  pathParts: Options;
  session: Options;
  context: Options;
  payload: Matcher | undefined;
  target: RewriteTarget;
}

interface CompiledRewrite {
  endpoint: CompiledEndpoint;
  pattern: RegExp;
  target: RewriteTarget;
  triggers: CompiledTrigger[];
}

/** `x-tier` as the reference names headers in trigger variables: `X-Tier`. */
function canonicalHeader(name: string): string {
  return name
    .toLowerCase()
    .split('-')
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join('-');
}

function matcher(m: StringRegexMap | undefined): Matcher | undefined {
  const rx = m?.match_rx;
  if (rx === undefined || rx === '') return undefined;
  return { rx: new RegExp(rx), reverse: m?.reverse === true };
}

function options(map: Readonly<Record<string, StringRegexMap>> | undefined): Options {
  const out: Options = [];
  for (const [name, m] of Object.entries(map ?? {})) {
    const c = matcher(m);
    if (c !== undefined) out.push({ name, matcher: c });
  }
  return out;
}

/** The host part of an absolute rewrite target: another host, or another API (`svc://`). */
function hostOf(abs: { scheme: string; host: string }): ReturnType<typeof parseTarget> {
  return abs.scheme === INTERNAL_SCHEME
    ? parseInternalTarget(`svc://${abs.host}`)
    : parseTarget(`${abs.scheme}://${abs.host}`);
}

/** The target of an entry or trigger: `rewrite_to_internal` (an API ID here), else `rewrite_to`. */
function rewriteTo(e: { rewrite_to?: string; rewrite_to_internal?: object }): string {
  return internalUrl(e.rewrite_to_internal) ?? e.rewrite_to ?? '';
}

/** Compiles a rewrite target (checked at write time: schemas/rules/endpoints.ts). */
function compileTarget(raw: string, contextVars: boolean): RewriteTarget {
  const abs = absoluteRewrite(raw);
  let host: Target | undefined;
  let rest = raw.trim();
  if (abs !== undefined) {
    const t = hostOf(abs);
    if (isTargetProblem(t)) throw new Error(`url_rewrites: ${t.message}`);
    host = t;
    rest = abs.rest;
  }
  return {
    host,
    rest: compileValue(rest, { context: contextVars, as: 'url' }),
    hasGroups: /\$\d/.test(rest),
  };
}

function compileTrigger(t: RoutingTrigger, contextVars: boolean): CompiledTrigger {
  const o = t.options ?? {};
  return {
    any: t.on === 'any',
    headers: options(o.header_matches).map(({ name, matcher: m }) => ({
      name: name.toLowerCase(),
      matcher: m,
    })),
    query: options(o.query_val_matches),
    pathParts: options(o.path_part_matches),
    session: options(o.session_meta_matches),
    context: options(o.request_context_matches),
    payload: matcher(o.payload_matches),
    target: compileTarget(rewriteTo(t), contextVars),
  };
}

/** The URL rewrites of a version, compiled; undefined when it has none. */
export function compileRewrites(v: VersionInfo, contextVars: boolean): CompiledRewrite[] | undefined {
  return compileEndpointEntries(v, v.extended_paths?.url_rewrites, (e) =>
    e.match_pattern === undefined
      ? undefined
      : {
          pattern: new RegExp(e.match_pattern),
          target: compileTarget(rewriteTo(e), contextVars),
          triggers: (e.triggers ?? []).map((t) => compileTrigger(t, contextVars)),
        },
  );
}

/** What a matcher says of one value: the match (full, then groups), or undefined. */
function test(m: Matcher, value: string): string[] | undefined {
  const found = m.rx.exec(value);
  if (m.reverse) return found === null ? [value] : undefined;
  return found === null ? undefined : found.map((g: string | undefined) => g ?? '');
}

/** Notes a match as the reference names it: `key` is the whole match, `key-<g>` its groups. */
function note(vars: Record<string, string>, key: string, match: string[]): void {
  vars[key] = match[0] ?? '';
  for (let g = 1; g < match.length; g++) vars[`${key}-${String(g - 1)}`] = match[g] ?? '';
}

/** Whether one option list holds (`any`: one match; else every name matched). */
function holds(
  list: Options,
  any: boolean,
  values: (name: string) => string[],
  key: (name: string, i: number) => string,
  vars: Record<string, string>,
): boolean {
  let names = 0;
  for (const { name, matcher: m } of list) {
    let hit = false;
    for (const [i, v] of values(name).entries()) {
      const match = test(m, v);
      if (match !== undefined) {
        note(vars, key(name, i), match);
        hit = true;
      }
    }
    if (hit) names++;
  }
  return any ? names > 0 : names === list.length;
}

function headerValues(ctx: RequestContext, name: string): string[] {
  const v = ctx.headers[name];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

/** Whether trigger `n` holds for the request; its matches are noted in `vars`. */
async function triggerHolds(
  ctx: RequestContext,
  t: CompiledTrigger,
  n: number,
  vars: Record<string, string>,
  contextVars: boolean,
): Promise<boolean | GatewayError> {
  const prefix = `trigger-${String(n)}-`;
  const results: boolean[] = [];
  if (t.headers.length > 0) {
    results.push(
      holds(
        t.headers,
        t.any,
        (name) => headerValues(ctx, name),
        (name, i) => `${prefix}${canonicalHeader(name)}-${String(i)}`,
        vars,
      ),
    );
  }
  if (t.query.length > 0) {
    const params = new URLSearchParams(ctx.query);
    results.push(
      holds(
        t.query,
        t.any,
        (name) => params.getAll(name),
        (name, i) => `${prefix}${name}-${String(i)}`,
        vars,
      ),
    );
  }
  if (t.pathParts.length > 0) {
    const parts = ctx.path.split('/');
    let count = 0;
    results.push(
      holds(
        t.pathParts,
        t.any,
        () => parts,
        (name) => `${prefix}${name}-${String(count++)}`,
        vars,
      ),
    );
  }
  if (t.session.length > 0 && ctx.session !== undefined) {
    const meta = ctx.session.meta_data ?? {};
    results.push(
      holds(
        t.session,
        t.any,
        (name) => (typeof meta[name] === 'string' ? [meta[name]] : []),
        (name) => `${prefix}${name}`,
        vars,
      ),
    );
  } else if (t.session.length > 0) results.push(false);
  if (t.context.length > 0) {
    results.push(
      holds(
        t.context,
        t.any,
        (name) => {
          const v = contextValue(ctx, name, contextVars);
          return v === '' ? [] : [v];
        },
        (name) => `${prefix}${name}`,
        vars,
      ),
    );
  }
  if (t.payload !== undefined) {
    const body = await ctx.readBody(MAX_READ_BODY);
    if (body === undefined) return GatewayError.bodyTooLarge();
    const text = body.toString('utf8');
    let hit = false;
    if (t.payload.reverse) {
      hit = !t.payload.rx.test(text);
    } else {
      const all = new RegExp(
        t.payload.rx.source,
        t.payload.rx.flags.includes('g') ? t.payload.rx.flags : `${t.payload.rx.flags}g`,
      );
      let i = 0;
      for (const m of text.matchAll(all)) {
        if (i === 0) vars[`${prefix}payload`] = m[0];
        note(
          vars,
          `${prefix}payload-${String(i)}`,
          m.map((g: string | undefined) => g ?? ''),
        );
        i++;
        hit = true;
        if (m[0] === '') break;
      }
    }
    results.push(hit);
  }
  if (results.length === 0) return false;
  return t.any ? results.includes(true) : results.every(Boolean);
}

/** Characters not allowed in a request target are percent-encoded. */
function safeTarget(s: string): string {
  return s.replace(/[^\x21-\x7e]|#/gu, (c) => encodeURIComponent(c));
}

/** Applies a rewrite target to the request. */
function apply(ctx: RequestContext, target: RewriteTarget, groups: readonly string[]): void {
  let out = valueOf(target.rest, ctx);
  if (target.hasGroups) out = out.replace(/\$(\d+)/g, (_all, d: string) => groups[Number(d)] ?? '');
  if (target.host !== undefined) ctx.upstream.target = target.host;
  const q = out.indexOf('?');
  const path = q === -1 ? out : out.slice(0, q);
  ctx.upstream.path = safeTarget(path.startsWith('/') ? path : `/${path}`);
  if (q !== -1) {
    const query = out.slice(q + 1);
    ctx.query = query === '' ? '' : `?${safeTarget(query)}`;
  }
}

function decoded(s: string): string | undefined {
  try {
    const d = decodeURIComponent(s);
    return d === s ? undefined : d;
  } catch {
    return undefined;
  }
}

/** Whether an API's rewrites read the body (a payload trigger). */
function readsPayload(api: GatewayApiDefinition): boolean {
  return servingVersions(api).some((v) =>
    (v.extended_paths?.url_rewrites ?? []).some(
      (e) =>
        e.disabled !== true &&
        (e.triggers ?? []).some((t) => (t.options?.payload_matches?.match_rx ?? '') !== ''),
    ),
  );
}

/** The hosts (and other APIs) an API's rewrites may send requests to (for the fast-path rule). */
export function rewriteTargets(api: GatewayApiDefinition): Target[] {
  const out: Target[] = [];
  const add = (raw: string): void => {
    const abs = absoluteRewrite(raw);
    if (abs === undefined) return;
    const t = hostOf(abs);
    if (!isTargetProblem(t)) out.push(t);
  };
  for (const v of servingVersions(api)) {
    for (const e of v.extended_paths?.url_rewrites ?? []) {
      if (e.disabled === true) continue;
      add(rewriteTo(e));
      for (const t of e.triggers ?? []) add(rewriteTo(t));
    }
  }
  return out;
}

/** See the module comment. */
export const urlRewrites: GatewayMiddleware = {
  name: 'url-rewrites',
  enabled: (api) => perVersion(api, (v) => compileRewrites(v, false)) !== undefined,
  readsBody: readsPayload,
  create: (api) => {
    const contextVars = api.enable_context_vars === true;
    const of = perVersion(api, (v) => compileRewrites(v, contextVars));
    if (of === undefined) throw new Error('url-rewrites: compiled for an API without them');
    /** The rewrite matching the request, with the pattern's groups; undefined when none does. */
    const matching = (ctx: RequestContext) => {
      const found = matchingEntry(of(ctx), ctx);
      if (found === undefined) return undefined;
      const subject = endpointPath(ctx) + ctx.query;
      let m = found.pattern.exec(subject);
      if (m === null) {
        const d = decoded(subject);
        if (d !== undefined) m = found.pattern.exec(d);
      }
      return m === null ? undefined : { found, groups: m.map((g: string | undefined) => g ?? '') };
    };
    const triggered = servingVersions(api).some((v) =>
      (v.extended_paths?.url_rewrites ?? []).some(
        (e) => e.disabled !== true && (e.triggers?.length ?? 0) > 0,
      ),
    );
    // Without triggers nothing waits: a synchronous step.
    if (!triggered) {
      return before((ctx) => {
        const r = matching(ctx);
        if (r !== undefined) apply(ctx, r.found.target, r.groups);
        return undefined;
      });
    }
    return around(async (ctx, next) => {
      const r = matching(ctx);
      if (r !== undefined) {
        let target = r.found.target;
        if (r.found.triggers.length > 0) {
          const vars = (ctx.state.vars ??= {});
          for (const [n, t] of r.found.triggers.entries()) {
            const ok = await triggerHolds(ctx, t, n, vars, contextVars);
            if (ok instanceof GatewayError) return reject(ctx, ok);
            if (ok) {
              target = t.target;
              break;
            }
          }
        }
        apply(ctx, target, r.groups);
      }
      await next();
      return undefined;
    });
  },
};
