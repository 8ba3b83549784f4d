/**
 * The reference's JavaScript middleware API (`custom_middleware.driver: otto`, its JSVM): a
 * middleware file written for the reference runs unchanged. The file declares
 * `var <name> = new TykJS.TykMiddleware.NewMiddleware({})` and gives it its function with
 * `<name>.NewProcessRequest(function (request, session, spec) { ... return
 * <name>.ReturnData(request, session.meta_data); })`; the hook's `name` is that variable.
 *
 * It runs as virtual endpoints do (worker.ts, kind `script`): in a `node:vm` context of its own,
 * in a worker thread, bounded by `plugin_timeout_ms`, with the `TykJS` shim below and the
 * reference's globals `log`, `rawlog`, `b64enc`, `b64dec`. The gateway's own `enable_jsvm`
 * gates it as it gates virtual endpoints. What the function returns is read as the reference
 * reads it: `request.SetHeaders` and `request.DeleteHeaders` change the request,
 * `request.ReturnOverrides.ResponseCode` of 400 or more answers the client with it and
 * `{"error": ResponseError}`. What svc does not do is a failure of the call naming it (the
 * client gets 500 with an error ID, logged with the hook's name), never ignored: a changed
 * `request.Body` (hooks get no body: it is empty), `request.URL`, `request.AddParams`,
 * `request.DeleteParams`, an override below 400 (an answer without the upstream), a changed
 * session `meta_data`. A file that calls the reference's `TykMakeHttpRequest`,
 * `TykBatchRequest`, `TykGetKeyData` or `TykSetKeyData` is refused when its API is loaded.
 */
import { readFile } from 'node:fs/promises';
import { errorMessage } from '../../lib/errors.ts';
import { isPlainObject } from '../../lib/plain-object.ts';
import type { EnabledHook } from '../../schemas/rules/plugins.ts';
import { pluginFile, type LoadedHook } from './load.ts';
import { PluginRunner } from './runner.ts';
import type { PluginRequest, RequestHookResult } from './types.ts';

/** The reference's functions an otto file may not call here, refused by name when loaded. */
export const OTTO_REFUSED = ['TykMakeHttpRequest', 'TykBatchRequest', 'TykGetKeyData', 'TykSetKeyData'];

/** Said when `enable_jsvm` is off. */
export const OTTO_JSVM_OFF =
  'custom_middleware.driver otto runs JavaScript in the gateway: the gateway setting enable_jsvm is off (set --enable-jsvm), or write the hook as a module (driver svc)';

/** The reference's `TykJS` object and globals (its js/tyk.js), in the file's context. */
const SHIM = `
var TykJS = { TykMiddleware: { MiddlewareComponentMeta: function (configuration) { this.configuration = configuration; } } };
TykJS.TykMiddleware.NewMiddleware = function (configuration) {
  TykJS.TykMiddleware.MiddlewareComponentMeta.call(this, configuration);
};
TykJS.TykMiddleware.NewMiddleware.prototype.NewProcessRequest = function (callback) { this.ProcessRequest = callback; };
TykJS.TykMiddleware.NewMiddleware.prototype.ReturnData = function (request, session) {
  return { Request: request, SessionMeta: session };
};
TykJS.TykMiddleware.NewMiddleware.prototype.ReturnAuthData = function (request, session) {
  return { Request: request, Session: session };
};
var log = function () {};
var rawlog = function () {};
var __svc_b64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
var b64enc = function (s) {
  var bin = unescape(encodeURIComponent(String(s))), out = '';
  for (var i = 0; i < bin.length; i += 3) {
    var a = bin.charCodeAt(i), b = bin.charCodeAt(i + 1), c = bin.charCodeAt(i + 2);
    out += __svc_b64[a >> 2] + __svc_b64[((a & 3) << 4) | (b >> 4 || 0)] +
      (i + 1 < bin.length ? __svc_b64[((b & 15) << 2) | (c >> 6 || 0)] : '=') +
      (i + 2 < bin.length ? __svc_b64[c & 63] : '=');
  }
  return out;
};
var b64dec = function (s) {
  var t = String(s).replace(/[^A-Za-z0-9+/]/g, ''), bin = '', bits = 0, acc = 0;
  for (var i = 0; i < t.length; i++) {
    acc = (acc << 6) | __svc_b64.indexOf(t[i]); bits += 6;
    if (bits >= 8) { bits -= 8; bin += String.fromCharCode((acc >> bits) & 255); }
  }
  return decodeURIComponent(escape(bin));
};
`;

const call = (name: string): string => `
function __svc_otto(request, session, spec) {
  if (typeof ${name} !== 'object' || ${name} === null || typeof ${name}.ProcessRequest !== 'function') {
    throw new Error('${name} is no TykJS.TykMiddleware.NewMiddleware given a function by NewProcessRequest');
  }
  var r = ${name}.ProcessRequest(request, session, spec);
  return JSON.stringify(r === undefined ? null : r);
}
`;

/** `x-foo-bar` as Go writes it (`X-Foo-Bar`). */
function canonical(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_m, sep: string, c: string) => sep + c.toUpperCase());
}

/** The reference's request object (MiniRequestObject) for `req`. */
function miniRequest(req: PluginRequest): Record<string, unknown> {
  const url = req.rawQuery === '' ? req.path : `${req.path}?${req.rawQuery}`;
  return {
    Headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [canonical(k), [v]])),
    SetHeaders: {},
    DeleteHeaders: [],
    Body: '',
    URL: url,
    AddParams: {},
    DeleteParams: [],
    ReturnOverrides: { ResponseCode: 0, ResponseError: '', ResponseBody: '', ResponseHeaders: {} },
    IgnoreBody: false,
    Method: req.method,
    RequestURI: url,
    Scheme: 'http',
  };
}

class OttoResultError extends Error {}

function unsupported(what: string): never {
  throw new OttoResultError(`${what} is not supported by svc's otto driver`);
}

/** What the middleware returned (`ReturnData`), as a hook result; throws naming what svc doesn't do. */
export function ottoResult(text: unknown, sent: Record<string, unknown>, meta: unknown): RequestHookResult {
  const out: unknown = typeof text === 'string' ? JSON.parse(text) : undefined;
  if (!isPlainObject(out) || !isPlainObject(out.Request)) {
    throw new OttoResultError('the middleware returns ReturnData(request, session.meta_data)');
  }
  const r = out.Request;
  const overrides = isPlainObject(r.ReturnOverrides) ? r.ReturnOverrides : {};
  const code = overrides.ResponseCode;
  if (typeof code === 'number' && code !== 0) {
    if (!Number.isInteger(code) || code < 400 || code > 599) {
      unsupported(`request.ReturnOverrides.ResponseCode ${String(code)} (an answer without the upstream)`);
    }
    const message = typeof overrides.ResponseError === 'string' ? overrides.ResponseError : '';
    return { refuse: { status: code, message } };
  }
  if (r.Body !== undefined && r.Body !== '') unsupported('request.Body');
  if (r.URL !== undefined && r.URL !== sent.URL) unsupported('request.URL');
  if (isPlainObject(r.AddParams) && Object.keys(r.AddParams).length > 0) unsupported('request.AddParams');
  if (Array.isArray(r.DeleteParams) && r.DeleteParams.length > 0) unsupported('request.DeleteParams');
  if (
    meta !== undefined &&
    out.SessionMeta !== undefined &&
    JSON.stringify(out.SessionMeta) !== JSON.stringify(meta)
  ) {
    unsupported("changing the session's meta_data");
  }
  const setHeaders = r.SetHeaders;
  const removeHeaders = r.DeleteHeaders;
  return {
    ...(isPlainObject(setHeaders) && Object.keys(setHeaders).length > 0
      ? { setHeaders: setHeaders as Record<string, string> }
      : {}),
    ...(Array.isArray(removeHeaders) && removeHeaders.length > 0
      ? { removeHeaders: removeHeaders as string[] }
      : {}),
  };
}

/**
 * Loads the middleware `hook.name` of the otto file `hook.path` into a worker of its own; throws
 * saying why it can't.
 */
export async function loadOttoHook(
  hook: EnabledHook,
  pluginDir: string | undefined,
  at: string,
  jsvm: boolean,
  timeoutMs: number,
): Promise<LoadedHook> {
  if (!jsvm) throw new Error(`${at}: ${OTTO_JSVM_OFF}`);
  const label = `${hook.path}#${hook.name}`;
  const file = await pluginFile(hook.path, pluginDir, `${at}.path`);
  const source = await readFile(file, 'utf8');
  const refused = OTTO_REFUSED.find((n) => source.includes(n));
  if (refused !== undefined) {
    throw new Error(`${at}.path: ${hook.path} calls ${refused}, which svc's otto driver does not provide`);
  }
  let runner: PluginRunner;
  try {
    runner = await PluginRunner.start({
      kind: 'script',
      source: `${SHIM}\n${source}\n${call(hook.name)}`,
      name: '__svc_otto',
      label,
      timeoutMs,
    });
  } catch (err) {
    throw new Error(`${at}.path: ${hook.path} failed to load: ${errorMessage(err)}`, { cause: err });
  }
  return {
    label,
    fn: async (req, callTimeoutMs) => {
      const sent = miniRequest(req);
      const meta = req.session === undefined ? undefined : (req.session.meta_data ?? {});
      const session = req.session === undefined ? {} : { ...req.session, meta_data: meta };
      const spec = { APIID: req.apiId, OrgID: '', config_data: req.config };
      return ottoResult(await runner.call([sent, session, spec], callTimeoutMs), sent, meta);
    },
    close: () => {
      runner.close();
    },
  };
}
