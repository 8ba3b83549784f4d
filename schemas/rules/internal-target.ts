/**
 * Internal targets: another API of the same gateway as the upstream of a request, written
 * `svc://<api_id>/<path>?<query>` (the reference gateway writes `tyk://`). The gateway's model
 * takes the URL in `proxy.target_url` and in `url_rewrites[].rewrite_to` (and a trigger's), or the
 * object form (`proxy.target_internal`, `rewrite_to_internal`) with the API's ID as `target`; the
 * ApiDefinition resource names the API by reference, which the operator resolves to its ID.
 */
import type { FieldProblem } from './field-problem.ts';
import { quote } from './field-problem.ts';
import type { Target, TargetProblem } from './api-definition.ts';
import { list, model, problem, text } from './read.ts';
import { fieldPath } from '../validate.ts';

/** The scheme of internal targets. */
export const INTERNAL_SCHEME = 'svc';

/** API IDs as the gateway accepts them (`idPattern` of the model). */
const API_ID = /^[A-Za-z0-9._~-]+$/;

const EXAMPLE = 'svc://<api_id>/<path>?<query>, such as svc://orders-internal/items?check_limits=true';

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
  if (!API_ID.test(id)) {
    return {
      type: 'Invalid',
      message: `${quote(raw)}: ${quote(id)} is not an API ID (letters, digits and . _ ~ -): write ${EXAMPLE}`,
    };
  }
  const path = m[2] ?? '';
  return {
    origin: `svc://${id}`,
    host: id,
    basePath: path.endsWith('/') ? path.slice(0, -1) : path,
    baseQuery: m[3] ?? '',
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

/** The internal targets a definition writes in object form, each with its field path. */
export function internalTargetsOf(api: {
  proxy?: unknown;
  version_data?: unknown;
}): { path: string; value: InternalTargetInput }[] {
  const out: { path: string; value: InternalTargetInput }[] = [];
  const add = (path: string, v: unknown): void => {
    const value = model<InternalTargetInput>(v);
    if (value?.target !== undefined) out.push({ path, value });
  };
  add('proxy.target_internal', model<{ target_internal: unknown }>(api.proxy)?.target_internal);
  const versions =
    model<Record<string, unknown>>(model<{ versions: unknown }>(api.version_data)?.versions) ?? {};
  for (const [name, v] of Object.entries(versions)) {
    const at = fieldPath(`/version_data/versions/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`);
    const paths = model<{ url_rewrites: unknown }>(model<{ extended_paths: unknown }>(v)?.extended_paths);
    list(paths?.url_rewrites).forEach((e, i) => {
      const entry = model<{ rewrite_to_internal: unknown; triggers: unknown }>(e);
      const where = `${at}.extended_paths.url_rewrites[${String(i)}]`;
      add(`${where}.rewrite_to_internal`, entry?.rewrite_to_internal);
      list(entry?.triggers).forEach((t, j) => {
        add(
          `${where}.triggers[${String(j)}].rewrite_to_internal`,
          model<{ rewrite_to_internal: unknown }>(t)?.rewrite_to_internal,
        );
      });
    });
  }
  return out;
}

/**
 * What the gateway refuses of the object form: its `target` must be the ID of an API (a
 * reference to a resource is resolved by the operator, never by the gateway), and the URL it
 * makes must parse.
 */
export function gatewayInternalTargetProblems(api: {
  proxy?: unknown;
  version_data?: unknown;
}): FieldProblem[] {
  const out: FieldProblem[] = [];
  for (const { path, value } of internalTargetsOf(api)) {
    const target = text(value.target);
    if (target === undefined || !API_ID.test(target)) {
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
