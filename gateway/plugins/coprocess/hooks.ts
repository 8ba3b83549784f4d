/**
 * What the gateway sends a gRPC plugin server for one hook and how it acts on the answer, as the
 * reference gateway does: the request (headers, query parameters, method, URL), the API (`spec`:
 * api_id, org_id, config_data as JSON) and, after authentication, the session go out; the
 * answer's `set_headers`, `delete_headers`, `add_params` and `delete_params` change the request,
 * and its `return_overrides` answer instead of the upstream (a `response_code` of 400 or more is a
 * refusal `{"error": response_error}`, or `response_body` as it is with `override_error`; a lower
 * one answers `response_body`, else `response_error`, with that status). An auth hook's answer
 * names the session: `session` with its key in `metadata.token`. The request body is not sent.
 */
import type {
  AccessDefinition as GatewayAccess,
  AllowedUrl,
  GatewayApiDefinition,
  GatewaySession,
} from '../../../schemas/generated/models.ts';
import { respond, reject } from '../../pipeline/compose.ts';
import type { Rejection } from '../../pipeline/middleware.ts';
import { removeRequestHeader, type RequestContext } from '../../pipeline/context.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import type {
  CoprocessObject,
  HookType,
  OutgoingObject,
  ReturnOverrides,
  SessionState,
} from './dispatcher.ts';
import { headersOf } from '../load.ts';

function flatHeaders(ctx: RequestContext): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.headers)) {
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

function rawQuery(ctx: RequestContext): string {
  return ctx.query.startsWith('?') ? ctx.query.slice(1) : ctx.query;
}

/** The session as the protocol carries it (what a post hook sees). */
export function sessionStateOf(s: GatewaySession): Partial<SessionState> {
  const metadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.meta_data ?? {})) {
    metadata[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  const access: Record<string, SessionState['access_rights'][string]> = {};
  for (const [id, a] of Object.entries(s.access_rights ?? {})) {
    access[id] = {
      api_id: a.api_id,
      api_name: a.api_name ?? '',
      versions: a.versions ?? [],
      allowed_urls: (a.allowed_urls ?? []).map((u) => ({ url: u.url, methods: u.methods ?? [] })),
    };
  }
  return {
    rate: s.rate ?? 0,
    per: s.per ?? 0,
    expires: s.expires ?? 0,
    quota_max: s.quota_max ?? 0,
    quota_remaining: s.quota_remaining ?? 0,
    quota_renewal_rate: s.quota_renewal_rate ?? 0,
    quota_renews: s.quota_renews ?? 0,
    org_id: s.org_id ?? '',
    is_inactive: s.is_inactive ?? false,
    alias: s.alias ?? '',
    tags: s.tags ?? [],
    apply_policies: s.apply_policies ?? [],
    access_rights: access,
    metadata,
  };
}

/** The Object sent for a hook of `hookType` named `name`. */
export function outgoingObject(
  ctx: RequestContext,
  api: GatewayApiDefinition,
  hookType: HookType,
  name: string,
): OutgoingObject {
  const q = rawQuery(ctx);
  const params: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(q)) if (!Object.hasOwn(params, k)) params[k] = v;
  const url = q === '' ? ctx.path : `${ctx.path}?${q}`;
  return {
    hook_type: hookType,
    hook_name: name,
    request: {
      headers: flatHeaders(ctx),
      params,
      method: ctx.method.toUpperCase(),
      url,
      request_uri: url,
      scheme: ctx.listener.protocol,
    },
    ...(ctx.session === undefined ? {} : { session: sessionStateOf(ctx.session) }),
    metadata: {},
    spec: {
      api_id: api.api_id ?? '',
      org_id: api.org_id ?? '',
      config_data: JSON.stringify(api.config_data ?? {}),
    },
  };
}

/** The answer a hook's `return_overrides` asks for, or undefined when it lets the request on. */
export function overrideAnswer(ctx: RequestContext, ro: ReturnOverrides | null): Rejection | undefined {
  if (ro === null || ro.response_code === 0) return undefined;
  const code = ro.response_code;
  if (code < 100 || code > 599)
    throw new Error(`return_overrides.response_code ${String(code)} is no HTTP status`);
  const headers = Object.fromEntries(headersOf(ro.headers, 'return_overrides.headers'));
  if (code >= 400 && !ro.override_error) {
    Object.assign(ctx.responseHeaders, headers);
    return reject(ctx, GatewayError.pluginRefused(code, ro.response_error));
  }
  return respond(ctx, code, ro.response_body !== '' ? ro.response_body : ro.response_error, headers);
}

/** Applies the request changes of a pre, post_key_auth or post hook's answer. */
export function applyRequestChanges(ctx: RequestContext, answer: CoprocessObject): Rejection | undefined {
  const req = answer.request;
  if (req === null) return undefined;
  const refused = overrideAnswer(ctx, req.return_overrides);
  if (refused !== undefined) return refused;
  const set = headersOf(req.set_headers, 'set_headers');
  for (const name of req.delete_headers) removeRequestHeader(ctx.headers, name.toLowerCase());
  for (const [name, value] of set) ctx.headers[name] = value;
  if (req.delete_params.length > 0 || Object.keys(req.add_params).length > 0) {
    const params = new URLSearchParams(rawQuery(ctx));
    for (const name of req.delete_params) params.delete(name);
    for (const [name, value] of Object.entries(req.add_params)) params.set(name, value);
    const q = params.toString();
    ctx.query = q === '' ? '' : `?${q}`;
  }
  return undefined;
}

/**
 * The session an auth hook returned, in the gateway's model. Proto3 can't tell an unset number
 * from 0: a rate, quota or expiry of 0 means none, as in the reference.
 */
export function gatewaySessionOf(s: SessionState): GatewaySession {
  const access: Record<string, GatewayAccess> = {};
  for (const [id, a] of Object.entries(s.access_rights)) {
    access[id] = {
      api_id: a.api_id === '' ? id : a.api_id,
      ...(a.api_name === '' ? {} : { api_name: a.api_name }),
      versions: a.versions,
      ...(a.allowed_urls.length === 0
        ? {}
        : {
            allowed_urls: a.allowed_urls.map((u) => ({
              url: u.url,
              methods: u.methods.map((m) => m.toUpperCase()) as NonNullable<AllowedUrl['methods']>,
            })),
          }),
    };
  }
  const policies = [...s.apply_policies];
  if (s.apply_policy_id !== '' && !policies.includes(s.apply_policy_id)) policies.push(s.apply_policy_id);
  const session: GatewaySession = {
    rate: s.rate > 0 && s.per > 0 ? s.rate : -1,
    per: s.rate > 0 && s.per > 0 ? s.per : -1,
    quota_max: s.quota_max > 0 ? s.quota_max : -1,
    quota_renewal_rate: s.quota_renewal_rate,
    expires: s.expires > 0 ? s.expires : 0,
    is_inactive: s.is_inactive,
    access_rights: access,
    tags: s.tags,
    meta_data: { ...s.metadata },
  };
  if (s.org_id !== '') session.org_id = s.org_id;
  if (s.alias !== '') session.alias = s.alias;
  if (policies.length > 0) session.apply_policies = policies;
  return session;
}
