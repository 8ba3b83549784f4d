/**
 * What the gateway sends a gRPC plugin server for one hook and how it acts on the answer, as the
 * reference gateway does: the request (headers by their canonical names, as Go's net/http
 * presents them, query parameters, method, URL and body), the API (`spec`: `APIID`, `OrgID` and
 * `config_data` as JSON, as the reference names them, and `api_id`, `org_id`) and, after
 * authentication, the session go out; the answer's `set_headers`, `delete_headers`,
 * `add_params`, `delete_params`, a changed `url` (path and query) or `method`, and a changed
 * `raw_body` (or `body`) change the request, and its `return_overrides` answer instead of the
 * upstream (a `response_code` of 400 or more is a refusal `{"error": response_error}`, or
 * `response_body` as it is with `override_error`; a lower one answers `response_body`, else
 * `response_error`, with that status). An auth hook's answer names the session: `session` with
 * its key in `metadata.token`. A response hook gets the upstream's response (`response`) too, and
 * its answer's status, changed headers and body are what the client gets.
 */
import type {
  AccessDefinition as GatewayAccess,
  AllowedUrl,
  GatewayApiDefinition,
  GatewaySession,
} from '../../../schemas/generated/models.ts';
import type { IncomingHttpHeaders } from 'node:http';
import { respond, reject } from '../../pipeline/compose.ts';
import type { Rejection } from '../../pipeline/middleware.ts';
import { removeRequestHeader, type BufferedResponse, type RequestContext } from '../../pipeline/context.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import type {
  CoprocessObject,
  HookType,
  MultivalueHeader,
  OutgoingObject,
  ResponseObject,
  ReturnOverrides,
  SessionState,
} from './dispatcher.ts';
import { headersOf } from '../load.ts';

/**
 * A header name as Go's net/http presents it (`textproto.CanonicalMIMEHeaderKey`: `X-Api-Key`),
 * so a plugin server written for the reference finds `Authorization` where it looks for it.
 */
export function canonicalHeaderName(name: string): string {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return name;
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());
}

/** A header's values as one string (the first, as the reference's single-value maps carry it). */
function firstValue(v: string | string[]): string {
  return Array.isArray(v) ? (v[0] ?? '') : v;
}

function flatHeaders(ctx: RequestContext): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.headers)) {
    if (v !== undefined) out[canonicalHeaderName(k)] = Array.isArray(v) ? v.join(', ') : v;
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

/**
 * The request as one hook saw it, to tell what its answer changed: the hook answers with the
 * whole object, changed or not, so only what differs from this is applied.
 */
export interface SentRequest {
  /** `url`: the path and query (`relative`: the path after the target's, which a middleware set). */
  url: string;
  relative: boolean;
  method: string;
  rawBody: Buffer;
  body: string;
}

/** The body as the protocol carries it: `body` only when it is UTF-8 text and the hook wants it. */
function bodyText(raw: Buffer, rawBodyOnly: boolean): string {
  if (rawBodyOnly || raw.length === 0) return '';
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    return '';
  }
}

/**
 * The largest request body sent to a gRPC plugin server (larger: 413): under the 4 MB a gRPC
 * server takes by default, with room for the rest of the message.
 */
export const MAX_PLUGIN_BODY = 3 * 1024 * 1024;

/**
 * The request body for a hook (the reference sends it to every hook): what the chain set
 * (`upstream.body`), else the client's, read once; undefined past `MAX_PLUGIN_BODY`.
 */
export function readRequestBody(ctx: RequestContext): Promise<Buffer | undefined> {
  if (ctx.upstream.body !== undefined) return Promise.resolve(ctx.upstream.body);
  return ctx.readBody(MAX_PLUGIN_BODY);
}

/** What one hook is sent of the request (`body` the body read, empty when there is none). */
export function sentRequest(ctx: RequestContext, body: Buffer, rawBodyOnly: boolean): SentRequest {
  const q = rawQuery(ctx);
  const relative = ctx.upstream.path !== undefined;
  const path = ctx.upstream.path ?? ctx.path;
  return {
    url: q === '' ? path : `${path}?${q}`,
    relative,
    method: (ctx.upstream.method ?? ctx.method).toUpperCase(),
    rawBody: body,
    body: bodyText(body, rawBodyOnly),
  };
}

/** The Object sent for a hook of `hookType` named `name` (`sent`: the request, `sentRequest`). */
export function outgoingObject(
  ctx: RequestContext,
  api: GatewayApiDefinition,
  hookType: HookType,
  name: string,
  sent: SentRequest = sentRequest(ctx, Buffer.alloc(0), false),
): OutgoingObject {
  const params: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(rawQuery(ctx))) if (!Object.hasOwn(params, k)) params[k] = v;
  const headers = flatHeaders(ctx);
  const host = ctx.headers.host;
  if (host !== undefined) headers.Host = host;
  // As the reference: the session from post_key_auth on, and its metadata as the object's.
  const session =
    ctx.session === undefined || hookType === 'Pre' || hookType === 'CustomKeyCheck'
      ? undefined
      : sessionStateOf(ctx.session);
  const orgId = api.org_id ?? '';
  const apiId = api.api_id ?? '';
  return {
    hook_type: hookType,
    hook_name: name,
    request: {
      headers,
      params,
      method: sent.method,
      url: sent.url,
      request_uri: sent.url,
      scheme: ctx.listener.protocol,
      raw_body: sent.rawBody,
      body: sent.body,
    },
    ...(session === undefined ? {} : { session }),
    metadata: session?.metadata ?? {},
    spec: {
      APIID: apiId,
      OrgID: orgId,
      api_id: apiId,
      org_id: orgId,
      config_data: JSON.stringify(api.config_data ?? {}),
    },
  };
}

/**
 * The body a hook answered with: `raw_body` when it changed that (the reference reads it), else
 * `body` when it changed that (older plugins set the text), else the body it was sent.
 */
function answeredBody(sentRaw: Buffer, sentText: string, raw: Buffer | undefined, text: string): Buffer {
  if (raw !== undefined && !raw.equals(sentRaw)) return raw;
  if (text !== sentText) return Buffer.from(text);
  return sentRaw;
}

const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Applies a changed `url` and `method`: a new path goes upstream in place of the request's (under
 * the listen path, which is stripped as for the request when the API strips it), a new query
 * replaces the request's. Otto middleware changes `request.URL` the same way (otto.ts).
 */
export function applyUrlAndMethod(ctx: RequestContext, sent: SentRequest, url: string, method: string): void {
  if (url !== '' && url !== sent.url) {
    if (!url.startsWith('/')) {
      throw new Error(`request.url ${JSON.stringify(url)}: a path, and its query, starting with /`);
    }
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const sq = sent.url.indexOf('?');
    if (path !== (sq === -1 ? sent.url : sent.url.slice(0, sq))) {
      const { listenPath, strip } = ctx.route;
      const under = path === listenPath || path.startsWith(`${listenPath}/`);
      ctx.upstream.path = !sent.relative && strip && under ? path.slice(listenPath.length) : path;
    }
    const query = q === -1 ? '' : url.slice(q + 1);
    ctx.query = query === '' ? '' : `?${query}`;
  }
  if (method !== '' && method.toUpperCase() !== sent.method) {
    if (!METHOD.test(method)) throw new Error(`request.method ${JSON.stringify(method)} is no HTTP method`);
    ctx.upstream.method = method.toUpperCase();
  }
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

/**
 * Applies the request changes of a hook's answer (`sent`: what it was sent): its
 * `return_overrides` first (an answer instead of the upstream), then its header, query, URL,
 * method and body changes. Throws when the answer asks for what can't be done.
 */
export function applyRequestChanges(
  ctx: RequestContext,
  answer: CoprocessObject,
  sent: SentRequest,
): Rejection | undefined {
  const req = answer.request;
  if (req === null) return undefined;
  const refused = overrideAnswer(ctx, req.return_overrides);
  if (refused !== undefined) return refused;
  applyRequestEdits(ctx, req, sent);
  return undefined;
}

/** The header, query, URL, method and body changes of a hook's answer (`request`). */
export function applyRequestEdits(
  ctx: RequestContext,
  req: NonNullable<CoprocessObject['request']>,
  sent: SentRequest,
): void {
  const set = headersOf(req.set_headers, 'set_headers');
  applyUrlAndMethod(ctx, sent, req.url, req.method);
  for (const name of req.delete_headers) removeRequestHeader(ctx.headers, name.toLowerCase());
  for (const [name, value] of set) ctx.headers[name] = value;
  if (req.delete_params.length > 0 || Object.keys(req.add_params).length > 0) {
    const params = new URLSearchParams(rawQuery(ctx));
    for (const name of req.delete_params) params.delete(name);
    for (const [name, value] of Object.entries(req.add_params)) params.set(name, value);
    const q = params.toString();
    ctx.query = q === '' ? '' : `?${q}`;
  }
  const body = answeredBody(sent.rawBody, sent.body, req.raw_body, req.body);
  if (body !== sent.rawBody) ctx.upstream.body = body;
}

/** Headers that frame the exchange: the gateway sets them for the body it sends. */
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'trailer']);

/** The upstream's response as a response hook is sent it. */
export function responseObject(res: BufferedResponse, rawBodyOnly: boolean): ResponseObject {
  const headers: Record<string, string> = {};
  const multivalue: MultivalueHeader[] = [];
  for (const [name, v] of Object.entries(res.headers)) {
    if (v === undefined) continue;
    const key = canonicalHeaderName(name);
    headers[key] = firstValue(v);
    multivalue.push({ key, values: Array.isArray(v) ? v : [v] });
  }
  return {
    status_code: res.status,
    raw_body: res.body,
    body: bodyText(res.body, rawBodyOnly),
    headers,
    multivalue_headers: multivalue,
  };
}

/**
 * The response a response hook answered with (`sent`: what it was sent of `res`): its status, the
 * headers it changed or added (`multivalue_headers`, then `headers`; as the reference, a header
 * left out is kept) and its body. Throws when it answered no response or an impossible status.
 */
export function answeredResponse(
  res: BufferedResponse,
  sent: ResponseObject,
  got: ResponseObject | null,
): BufferedResponse {
  if (got === null) throw new Error('the response hook answered without a response');
  const status = got.status_code;
  if (!Number.isInteger(status) || status < 100 || status > 599) {
    throw new Error(`response.status_code ${String(status)} is no HTTP status`);
  }
  const headers: IncomingHttpHeaders = { ...res.headers };
  const sentValues = new Map(sent.multivalue_headers.map((h) => [h.key, h.values]));
  for (const { key, values } of got.multivalue_headers) {
    const before = sentValues.get(key);
    if (before?.length === values.length && before.every((v, i) => v === values[i])) continue;
    setResponseHeader(headers, key, values);
  }
  for (const [key, value] of Object.entries(got.headers)) {
    if (sent.headers[key] !== value) setResponseHeader(headers, key, [value]);
  }
  return { status, headers, body: answeredBody(sent.raw_body, sent.body, got.raw_body, got.body) };
}

function setResponseHeader(headers: IncomingHttpHeaders, key: string, values: string[]): void {
  const name = key.toLowerCase();
  if (FRAMING.has(name)) return;
  // Checks the name and each value as a plugin's request headers are checked.
  for (const v of values) headersOf({ [name]: v }, 'response.headers');
  if (values.length === 0) {
    headers[name] = undefined;
    return;
  }
  headers[name] = name === 'set-cookie' ? values : values.length === 1 ? values[0] : values.join(', ');
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
