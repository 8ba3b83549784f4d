/**
 * The reference's JavaScript middleware API (`custom_middleware.driver: otto`, its JSVM): a
 * middleware file written for the reference runs unchanged. The file declares
 * `var <name> = new TykJS.TykMiddleware.NewMiddleware({})` and gives it its function with
 * `<name>.NewProcessRequest(function (request, session, spec) { ... return
 * <name>.ReturnData(request, session.meta_data); })`; the hook's `name` is that variable.
 *
 * It runs as virtual endpoints do (worker.ts, kind `script`): in a `node:vm` context of its own,
 * in a worker thread, bounded by `plugin_timeout_ms`, with the `TykJS` shim below and the
 * reference's globals `log`, `rawlog` (their messages are logged by the gateway with the hook's
 * name), `b64enc`, `b64dec`. The gateway's `enable_jsvm` gates it as it gates virtual endpoints.
 * What the function returns is read as the reference reads it: `request.SetHeaders` and
 * `request.DeleteHeaders` change the request's headers, `request.Body` its body (the request body
 * as text; not with `IgnoreBody`), `request.URL` its path and query (as a
 * gRPC plugin's `url`), then `request.DeleteParams`, `AddParams` and `ExtendedParams` its query; `request.ReturnOverrides.ResponseCode` of 400 or more answers the
 * client with it and `{"error": ResponseError}` (or `ResponseBody`), any other code (or one with
 * `OverrideError`) is the answer itself, without the upstream (that status, `ResponseBody`, or
 * `ResponseError` when set, as it is); `ResponseHeaders` go with either. What svc does not do is
 * a failure of the call naming it (the client gets 500 with an error ID, logged with the hook's
 * name), never ignored. A hook with `require_session` after authentication that returns a changed
 * session `meta_data` has it saved to the request's key, as the reference saves it
 * (session-meta.ts); without `require_session` the reference ignores it, and so does svc.
 *
 * Loading a hook (`loadOttoHook`) checks everything a load can refuse: `enable_jsvm`, the file
 * under `plugin_dir`, the reference's functions svc does not provide (`ottoSourceProblem`), the
 * file's own code (run once, as the reference runs it when it loads the API) and the middleware
 * variable. The management API runs the same load when an API is written (`ottoWriteProblems`),
 * so what it admits is what a reload serves.
 */
import { readFile } from 'node:fs/promises';
import { errorMessage } from '../../lib/errors.ts';
import { isPlainObject } from '../../lib/plain-object.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import {
  OTTO_JSVM_OFF,
  ottoHooksOf,
  ottoSourceProblem,
  type EnabledHook,
  type PluginStage,
} from '../../schemas/rules/plugins.ts';
import { headersOf, pluginFile, pluginRefusalOf, removedOf } from './load.ts';
import { PluginRunner } from './runner.ts';
import { changedMeta, sentMeta } from './session-meta.ts';
import type { PluginRefusal, PluginRequest } from './types.ts';

/** What loading otto hooks needs of the gateway's configuration. */
export interface OttoEnv {
  /** `plugin_dir`. */
  pluginDir: string | undefined;
  /** `enable_jsvm`. */
  jsvm: boolean;
  /** `plugin_timeout_ms`: bounds the file's own code when loaded, and each call. */
  timeoutMs: number;
}

/** At most this many `log` messages of one call are kept, each cut to LOG_CHARS. */
const LOG_LINES = 20;
const LOG_CHARS = 1000;

/**
 * The reference's `TykJS` object and globals (its js/tyk.js), on one line so that the file's
 * lines keep their numbers in errors (the file follows on the same line).
 */
const SHIM = [
  'var TykJS = { TykMiddleware: { MiddlewareComponentMeta: function (configuration) { this.configuration = configuration; } } };',
  'TykJS.TykMiddleware.NewMiddleware = function (configuration) { TykJS.TykMiddleware.MiddlewareComponentMeta.call(this, configuration); };',
  'TykJS.TykMiddleware.NewMiddleware.prototype.NewProcessRequest = function (callback) { this.ProcessRequest = callback; };',
  'TykJS.TykMiddleware.NewMiddleware.prototype.ReturnData = function (request, session) { return { Request: request, SessionMeta: session }; };',
  'TykJS.TykMiddleware.NewMiddleware.prototype.ReturnAuthData = function (request, session) { return { Request: request, Session: session }; };',
  'var __svc_logs = [];',
  `var log = function (m) { if (__svc_logs.length < ${String(LOG_LINES)}) __svc_logs.push(String(m).slice(0, ${String(LOG_CHARS)})); };`,
  'var rawlog = log;',
  "var __svc_b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';",
  'var b64enc = function (s) { var bin = unescape(encodeURIComponent(String(s))), out = "";',
  '  for (var i = 0; i < bin.length; i += 3) { var a = bin.charCodeAt(i), b = bin.charCodeAt(i + 1), c = bin.charCodeAt(i + 2);',
  '    out += __svc_b64[a >> 2] + __svc_b64[((a & 3) << 4) | (b >> 4 || 0)] + (i + 1 < bin.length ? __svc_b64[((b & 15) << 2) | (c >> 6 || 0)] : "=") + (i + 2 < bin.length ? __svc_b64[c & 63] : "="); }',
  '  return out; };',
  'var b64dec = function (s) { var t = String(s).replace(/[^A-Za-z0-9+/]/g, ""), bin = "", bits = 0, acc = 0;',
  '  for (var i = 0; i < t.length; i++) { acc = ((acc << 6) | __svc_b64.indexOf(t[i])) & 0xffffff; bits += 6;',
  '    if (bits >= 8) { bits -= 8; bin += String.fromCharCode((acc >> bits) & 255); } }',
  '  return decodeURIComponent(escape(bin)); };',
].join(' ');

const NO_MIDDLEWARE = 'no middleware';

/** After the file: its middleware must be there once its code has run (checked at load). */
const check = (name: string): string => `
if (typeof ${name} !== 'object' || ${name} === null || typeof ${name}.ProcessRequest !== 'function') {
  throw new Error('${NO_MIDDLEWARE} ${name}: the file declares no var ${name} = new TykJS.TykMiddleware.NewMiddleware({}) given its function by ${name}.NewProcessRequest(...)');
}
function __svc_otto(request, session, spec) {
  __svc_logs = [];
  var r = ${name}.ProcessRequest(request, session, spec);
  return JSON.stringify({ out: r === undefined ? null : r, logs: __svc_logs });
}
`;
/** `x-foo-bar` as Go writes it (`X-Foo-Bar`). */
function canonical(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, sep: string, c: string) => sep + c.toUpperCase());
}

/** The reference's request object (MiniRequestObject) for `req`. */
export function miniRequest(req: PluginRequest, scheme: string, body = ''): Record<string, unknown> {
  const url = req.rawQuery === '' ? req.path : `${req.path}?${req.rawQuery}`;
  const params: Record<string, string[]> = {};
  for (const [k, v] of new URLSearchParams(req.rawQuery)) (params[k] ??= []).push(v);
  return {
    Headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [canonical(k), [v]])),
    SetHeaders: {},
    DeleteHeaders: [],
    Body: body,
    URL: url,
    Params: params,
    AddParams: {},
    ExtendedParams: {},
    DeleteParams: [],
    ReturnOverrides: {
      ResponseCode: 0,
      ResponseError: '',
      ResponseBody: '',
      ResponseHeaders: {},
      OverrideError: false,
    },
    IgnoreBody: false,
    Method: req.method,
    RequestURI: url,
    Scheme: scheme,
  };
}

/** An answer without the upstream (`ReturnOverrides.ResponseCode` below 400, or `OverrideError`). */
export interface OttoAnswer {
  status: number;
  body: string;
  /** `ReturnOverrides.ResponseHeaders`, lower-case names. */
  headers: Record<string, string>;
}

/** What an otto hook asks of the request. */
export interface OttoResult {
  setHeaders: [string, string][];
  removeHeaders: string[];
  /** A changed `request.Body` (unless `IgnoreBody`): the body that goes upstream. */
  body?: string;
  /** A changed `request.URL`: the path, and its query, that go upstream. */
  url?: string;
  /** The query parameters removed (`DeleteParams`), then set (`AddParams`), then added (`ExtendedParams`). */
  params?: { remove: string[]; set: [string, string][]; add: [string, string][] };
  /** A refusal (`{"error": message}`), with the response headers it carries. */
  refuse?: PluginRefusal & { headers: Record<string, string> };
  answer?: OttoAnswer;
  /**
   * The session's `meta_data` as the hook returned it, when it changed it (a `require_session`
   * hook after authentication): saved to the key (session-meta.ts).
   */
  meta?: Record<string, unknown>;
  /** The messages the call gave `log` and `rawlog`. */
  logs: string[];
}

class OttoResultError extends Error {}

/** `AddParams` (one value a name) as pairs; throws naming the field when it is no such object. */
function paramPairs(v: unknown, what: string): [string, string][] {
  if (v === undefined || v === null) return [];
  if (!isPlainObject(v)) throw new OttoResultError(`${what} must be an object of parameter names and values`);
  return Object.entries(v).map(([k, value]) => {
    if (typeof value !== 'string') throw new OttoResultError(`${what}.${k} must be a string`);
    return [k, value];
  });
}

/** `ExtendedParams` (a list of values a name) as pairs. */
function extendedPairs(v: unknown): [string, string][] {
  if (v === undefined || v === null) return [];
  const what = 'request.ExtendedParams';
  if (!isPlainObject(v)) throw new OttoResultError(`${what} must be an object of parameter names and lists`);
  return Object.entries(v).flatMap(([k, values]) => {
    if (!Array.isArray(values) || values.some((x) => typeof x !== 'string')) {
      throw new OttoResultError(`${what}.${k} must be a list of strings`);
    }
    return (values as string[]).map((x): [string, string] => [k, x]);
  });
}

/** `DeleteParams`: parameter names. */
function deletedParams(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new OttoResultError('request.DeleteParams must be a list of parameter names');
  }
  return v as string[];
}

/**
 * `ReturnOverrides` read as the reference reads it: `ResponseError`, when set, is the body; a
 * code of 400 or more without `OverrideError` refuses (`{"error": body}`, with `ResponseHeaders`);
 * any other code is the answer itself (status, `ResponseHeaders`, the body as it is).
 */
function overridesOf(overrides: Record<string, unknown>): Pick<OttoResult, 'refuse' | 'answer'> {
  const code = overrides.ResponseCode ?? 0;
  if (code === 0) return {};
  if (typeof code !== 'number' || !Number.isInteger(code) || code < 100 || code > 599) {
    throw new OttoResultError(
      `request.ReturnOverrides.ResponseCode ${JSON.stringify(code)} is no HTTP status (100 to 599)`,
    );
  }
  const headers = Object.fromEntries(
    headersOf(overrides.ResponseHeaders ?? undefined, 'request.ReturnOverrides.ResponseHeaders'),
  );
  const error = typeof overrides.ResponseError === 'string' ? overrides.ResponseError : '';
  const body =
    error !== '' ? error : typeof overrides.ResponseBody === 'string' ? overrides.ResponseBody : '';
  if (code >= 400 && overrides.OverrideError !== true) {
    return { refuse: { ...pluginRefusalOf({ status: code, message: body }), headers } };
  }
  return { answer: { status: code, body, headers } };
}

/**
 * What the middleware returned (`ReturnData`), read; throws naming what svc doesn't do. `meta`:
 * the session's `meta_data` when the hook may change it (`require_session` after authentication).
 */
export function ottoResult(
  text: unknown,
  sent: Record<string, unknown>,
  meta?: Record<string, unknown>,
): OttoResult {
  const parsed: unknown = typeof text === 'string' ? JSON.parse(text) : undefined;
  const out = isPlainObject(parsed) ? parsed.out : undefined;
  const logs =
    isPlainObject(parsed) && Array.isArray(parsed.logs)
      ? parsed.logs.filter((l): l is string => typeof l === 'string')
      : [];
  if (!isPlainObject(out) || !isPlainObject(out.Request)) {
    throw new OttoResultError('the middleware must return ReturnData(request, session.meta_data)');
  }
  const r = out.Request;
  const overridden = overridesOf(isPlainObject(r.ReturnOverrides) ? r.ReturnOverrides : {});
  if (overridden.refuse !== undefined || overridden.answer !== undefined) {
    return { setHeaders: [], removeHeaders: [], ...overridden, logs };
  }
  if (r.Body !== undefined && r.Body !== null && typeof r.Body !== 'string') {
    throw new OttoResultError('request.Body must be a string');
  }
  const body =
    r.IgnoreBody === true || typeof r.Body !== 'string' || r.Body === sent.Body ? undefined : r.Body;
  const url = r.URL === undefined || r.URL === sent.URL ? undefined : r.URL;
  if (url !== undefined && (typeof url !== 'string' || !url.startsWith('/'))) {
    throw new OttoResultError(`request.URL ${JSON.stringify(url)}: a path, and its query, starting with /`);
  }
  let changed: Record<string, unknown> | undefined;
  if (meta !== undefined) {
    try {
      changed = changedMeta(out.SessionMeta, meta);
    } catch (err) {
      throw new OttoResultError(errorMessage(err));
    }
  }
  const params = {
    remove: deletedParams(r.DeleteParams),
    set: paramPairs(r.AddParams, 'request.AddParams'),
    add: extendedPairs(r.ExtendedParams),
  };
  const changesParams = params.remove.length + params.set.length + params.add.length > 0;
  return {
    setHeaders: headersOf(r.SetHeaders ?? undefined, 'request.SetHeaders'),
    removeHeaders: removedOf(r.DeleteHeaders ?? undefined),
    ...(url === undefined ? {} : { url }),
    ...(body === undefined ? {} : { body }),
    ...(changesParams ? { params } : {}),
    ...(changed === undefined ? {} : { meta: changed }),
    logs,
  };
}

/** `query` (with its `?`, or '') with the parameter changes of a hook applied, as the reference applies them. */
export function withParams(query: string, params: NonNullable<OttoResult['params']>): string {
  const values = new URLSearchParams(query.startsWith('?') ? query.slice(1) : query);
  for (const name of params.remove) values.delete(name);
  for (const [name, value] of params.set) values.set(name, value);
  for (const [name, value] of params.add) values.append(name, value);
  const q = values.toString();
  return q === '' ? '' : `?${q}`;
}

/** A loaded otto hook. */
export interface OttoHook {
  label: string;
  /** Runs the middleware on `req`; throws (naming what svc doesn't do) when it fails. */
  call(req: PluginRequest, opts: { scheme: string; timeoutMs: number; body: string }): Promise<OttoResult>;
  close(): void;
}

/**
 * Loads the middleware `hook.name` of the otto file `hook.path` into a worker of its own: the
 * file's code runs once; throws, naming the field, when it can't be served.
 */
export async function loadOttoHook(
  hook: EnabledHook,
  stage: PluginStage,
  at: string,
  env: OttoEnv,
): Promise<OttoHook> {
  if (!env.jsvm) throw new Error(`${at}: ${OTTO_JSVM_OFF}`);
  // The name is written into the script that calls the middleware: an identifier only (the shared
  // rule refuses others at write; checked again here, where it matters).
  if (!/^[A-Za-z_$][\w$]*$/.test(hook.name)) throw new Error(`${at}.name: not a JavaScript variable name`);
  const label = `${hook.path}#${hook.name}`;
  const file = await pluginFile(hook.path, env.pluginDir, `${at}.path`);
  let source: string;
  try {
    source = await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`${at}.path: ${hook.path} can't be read: ${errorMessage(err)}`, { cause: err });
  }
  const refused = ottoSourceProblem(source);
  if (refused !== undefined) throw new Error(`${at}.path: ${hook.path} ${refused}`);
  let runner: PluginRunner;
  try {
    runner = await PluginRunner.start({
      kind: 'script',
      source: `${SHIM}${source}\n${check(hook.name)}`,
      name: '__svc_otto',
      label,
      timeoutMs: env.timeoutMs,
    });
  } catch (err) {
    // An error of the file's context comes out as its text (`Error: ...`, `SyntaxError: ...`).
    const message = errorMessage(err).replace(/^Error: /, '');
    if (message.startsWith(NO_MIDDLEWARE)) {
      throw new Error(`${at}.name: ${hook.path} has ${message}`, { cause: err });
    }
    throw new Error(`${at}.path: ${hook.path} failed to load: ${message}`, { cause: err });
  }
  // The reference gives a session to hooks after authentication that ask for it, and saves the
  // meta_data they return; svc gives it to every hook after authentication (as to its modules).
  const afterAuth = stage !== 'pre';
  return {
    label,
    call: async (req, { scheme, timeoutMs, body }) => {
      const sent = miniRequest(req, scheme, body);
      const session = afterAuth && req.session !== undefined ? req.session : {};
      const meta =
        afterAuth && hook.require_session === true && req.session !== undefined
          ? sentMeta(req.session)
          : undefined;
      const spec = { APIID: req.apiId, OrgID: '', config_data: req.config };
      return ottoResult(await runner.call([sent, session, spec], timeoutMs), sent, meta);
    },
    close: () => {
      runner.close();
    },
  };
}

/**
 * Why the otto hooks of `api` can't be loaded on this gateway, as `<field>: <message>` lines: the
 * load a reload does, run when the API is written (the workers are stopped at once).
 */
export async function ottoWriteProblems(api: GatewayApiDefinition, env: OttoEnv): Promise<string[]> {
  const problems: string[] = [];
  for (const { hook, stage, at } of ottoHooksOf(api)) {
    try {
      (await loadOttoHook(hook, stage, at, env)).close();
    } catch (err) {
      problems.push(errorMessage(err));
    }
  }
  return problems;
}
