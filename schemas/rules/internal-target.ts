/**
 * Internal targets: another API of the same gateway as the upstream of a request, written
 * `svc://<api>/<path>?<query>` (the reference gateway writes `tyk://`), where `<api>` is `self`
 * (the API the request is on), an API ID, or an API's name (`resolveInternalTarget`). The gateway's model
 * takes the URL in `proxy.target_url` and in `url_rewrites[].rewrite_to` (and a trigger's), or the
 * object form (`proxy.target_internal`, `rewrite_to_internal`) with the API's ID as `target`; the
 * ApiDefinition resource names the API by reference, which the operator resolves to its ID.
 */
import type { FieldProblem } from './field-problem.ts';
import { ID_RULE, isValidId } from './ids.ts';
import { quote } from './field-problem.ts';
import type { Target, TargetProblem } from './target.ts';
import { list, model, problem, text } from './read.ts';
import { fieldPath } from '../validate.ts';

/** The scheme of internal targets. */
export const INTERNAL_SCHEME = 'svc';

/** The host of an internal target that names the API the request is on (`svc://self/...`). */
export const SELF = 'self';

/**
 * An API's name as an internal target writes it (as the reference gateway's looping names): a
 * ` #category` suffix left out, every run of characters other than letters and digits one `-`,
 * and case does not matter (`Orders API v2` is `svc://orders-api-v2/...`, `Catalogue.V2 #shop` is
 * `svc://catalogue-v2/...`). A host is read by the same rule, so `svc://catalogue.v2/...` names
 * that API too.
 */
export function internalTargetName(name: string): string {
  return name
    .replace(/\s*#.*$/s, '')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .toLowerCase();
}

/**
 * The one rule for which API an internal target's host names, given the APIs of the gateway:
 * `self` is the API the request is on; else the API with that ID; else the one API whose name,
 * written as `internalTargetName` says, is the host read the same way. A name that several APIs
 * share names none of them: `ambiguous` lists their IDs; no API at all: `missing`. Both are
 * conditions of the gateway's set of APIs, which changes after a definition is written: the
 * definition stays loaded and the gateway answers its requests to that target with 502 until one
 * API has the name (gateway/upstream/internal.ts).
 */
export function resolveInternalTarget(
  host: string,
  selfId: string,
  apis: Iterable<{ id: string; name?: string | undefined }>,
): { id: string } | { ambiguous: string[] } | { missing: true } {
  if (host.toLowerCase() === SELF) return { id: selfId };
  const wanted = internalTargetName(host);
  const byName: string[] = [];
  for (const a of apis) {
    if (a.id === host) return { id: a.id };
    if (a.name !== undefined && a.name !== '' && internalTargetName(a.name) === wanted) byName.push(a.id);
  }
  if (byName.length === 1 && byName[0] !== undefined) return { id: byName[0] };
  return byName.length > 1 ? { ambiguous: byName.sort() } : { missing: true };
}

/** The problem of an internal target whose host is an API name several APIs share. */
export function ambiguousTargetMessage(host: string, ids: readonly string[]): string {
  return `svc://${host}: ${String(ids.length)} APIs have the name ${quote(host)} (${ids.join(', ')}): write the API ID of the one meant (svc://<api_id>/...), or give the APIs different names`;
}

const EXAMPLE =
  'svc://<api_id>/<path>?<query> (or svc://self/... for the same API, or svc://<api-name>/...), such as svc://orders-internal/items?check_limits=true';

/** Whether a target URL names another API of the gateway (`svc://...`). */
export function isInternalUrl(raw: string): boolean {
  return /^svc:\/\//i.test(raw.trim());
}

/** Whether a parsed target is another API of the gateway. */
export function isInternalTarget(t: Pick<Target, 'origin'>): boolean {
  return t.origin.startsWith('svc://');
}

/**
 * Parses `svc://<api_id>[/<path>][?<query>]`: the origin is `svc://<api_id>` and the host the API
 * ID; the path and query work as those of an http target (the request's path follows the path).
 * The path may hold variables of a rewrite (`$1`); the API ID may not.
 */
export function parseInternalTarget(raw: string): Target | TargetProblem {
  const m = /^svc:\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?$/i.exec(raw.trim());
  if (m === null) {
    return { type: 'Invalid', message: `${quote(raw)} is not an internal target: write ${EXAMPLE}` };
  }
  const id = m[1] ?? '';
  if (!isValidId(id)) {
    return {
      type: 'Invalid',
      message: `${quote(raw)}: ${quote(id)} is not an API ID (${ID_RULE}): write ${EXAMPLE}`,
    };
  }
  const path = m[2] ?? '';
  return {
    origin: `svc://${id}`,
    host: id,
    basePath: path.endsWith('/') ? path.slice(0, -1) : path,
    baseQuery: m[3] ?? '',
    ...(path.length > 1 && path.endsWith('/') ? { trailingSlash: true } : {}),
  };
}

/** The object form of an internal target, as the models write it. */
export interface InternalTargetInput {
  target?: unknown;
  path?: unknown;
  query?: unknown;
}

/**
 * The `svc://` URL of an internal target whose `target` is an API ID, or undefined when it has no
 * target (in the resource a reference, which the operator turns into the ID first).
 */
export function internalUrl(t: InternalTargetInput | undefined, id?: string): string | undefined {
  const target = id ?? text(t?.target);
  if (target === undefined || target === '') return undefined;
  const path = text(t?.path) ?? '';
  const query = text(t?.query) ?? '';
  return `svc://${target}${path === '' || path.startsWith('/') ? path : `/${path}`}${query === '' ? '' : `?${query.replace(/^\?/, '')}`}`;
}

/** The parts of a classic definition that write internal targets: its proxy and its versions. */
export interface Targeting {
  proxy?: unknown;
  version_data?: unknown;
}

/**
 * Calls `visit` with every `url_rewrites` entry of every version, then each of its triggers, with
 * the field path of each (the rewrite target is a field of both).
 */
function eachUrlRewrite(
  api: { version_data?: unknown },
  visit: (where: string, rule: unknown) => void,
): void {
  const versions =
    model<Record<string, unknown>>(model<{ versions: unknown }>(api.version_data)?.versions) ?? {};
  for (const [name, v] of Object.entries(versions)) {
    const at = fieldPath(`/version_data/versions/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`);
    const paths = model<{ url_rewrites: unknown }>(model<{ extended_paths: unknown }>(v)?.extended_paths);
    list(paths?.url_rewrites).forEach((e, i) => {
      const where = `${at}.extended_paths.url_rewrites[${String(i)}]`;
      visit(where, e);
      list(model<{ triggers: unknown }>(e)?.triggers).forEach((t, j) => {
        visit(`${where}.triggers[${String(j)}]`, t);
      });
    });
  }
}

/** The internal targets a definition writes in object form, each with its field path. */
export function internalTargetsOf(api: Targeting): { path: string; value: InternalTargetInput }[] {
  const out: { path: string; value: InternalTargetInput }[] = [];
  const add = (path: string, v: unknown): void => {
    const value = model<InternalTargetInput>(v);
    if (value?.target !== undefined) out.push({ path, value });
  };
  add('proxy.target_internal', model<{ target_internal: unknown }>(api.proxy)?.target_internal);
  eachUrlRewrite(api, (where, rule) => {
    add(`${where}.rewrite_to_internal`, model<{ rewrite_to_internal: unknown }>(rule)?.rewrite_to_internal);
  });
  return out;
}

/**
 * What the gateway refuses of the object form: its `target` must be the ID of an API (a
 * reference to a resource is resolved by the operator, never by the gateway), and the URL it
 * makes must parse.
 */
export function gatewayInternalTargetProblems(api: Targeting): FieldProblem[] {
  const out: FieldProblem[] = [];
  for (const { path, value } of internalTargetsOf(api)) {
    const target = text(value.target);
    if (target === undefined || !isValidId(target)) {
      out.push(
        problem(
          `${path}.target`,
          'Invalid',
          `${quote(value.target)}: the gateway takes the ID of the target API here (a "namespace/name" or {name, namespace} reference is resolved by the operator); or write ${EXAMPLE} in the URL field`,
        ),
      );
      continue;
    }
    const url = internalUrl(value) ?? '';
    const parsed = parseInternalTarget(url);
    if ('message' in parsed) out.push(problem(path, parsed.type, parsed.message));
  }
  return out;
}

/** The host of a `svc://` URL, or undefined when `raw` is no internal target. */
function hostOfUrl(raw: unknown): string | undefined {
  const s = text(raw);
  if (s === undefined || !isInternalUrl(s)) return undefined;
  return /^svc:\/\/([^/?#]*)/i.exec(s.trim())?.[1];
}

/**
 * The hosts of every internal target a classic definition writes, each with its field path: the
 * URL fields (`proxy.target_url`, `url_rewrites[].rewrite_to` and a trigger's) and the object form
 * (`...target_internal.target`, `...rewrite_to_internal.target`).
 */
export function internalTargetHostsOf(api: Targeting): { path: string; host: string }[] {
  const out: { path: string; host: string }[] = [];
  const url = (path: string, v: unknown): void => {
    const host = hostOfUrl(v);
    if (host !== undefined) out.push({ path, host });
  };
  url('proxy.target_url', model<{ target_url: unknown }>(api.proxy)?.target_url);
  for (const { path, value } of internalTargetsOf(api)) {
    const host = text(value.target);
    if (host !== undefined) out.push({ path: `${path}.target`, host });
  }
  eachUrlRewrite(api, (where, rule) => {
    url(`${where}.rewrite_to`, model<{ rewrite_to: unknown }>(rule)?.rewrite_to);
  });
  return out;
}

/**
 * The internal targets of API `selfId` whose host is a name several of `apis` share
 * (`resolveInternalTarget`), each at its field: the gateway, which holds every API, says so at
 * load (a warning of the reload); the definition stays loaded, and its requests to such a target
 * get 502 until one API has the name.
 */
export function ambiguousTargets(
  api: Targeting,
  selfId: string,
  apis: readonly { id: string; name?: string | undefined }[],
): FieldProblem[] {
  const out: FieldProblem[] = [];
  for (const { path, host } of internalTargetHostsOf(api)) {
    const found = resolveInternalTarget(host, selfId, apis);
    if ('ambiguous' in found)
      out.push(problem(path, 'Invalid', ambiguousTargetMessage(host, found.ambiguous)));
  }
  return out;
}
