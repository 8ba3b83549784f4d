/**
 * Virtual endpoints (`extended_paths.virtual`): a JavaScript function answers the endpoint instead
 * of the upstream, written to the reference's contract:
 *
 * ```js
 * function myVirtualHandler(request, session, config) {
 *   return SvcJsResponse({ Body: 'hello', Headers: { 'x-a': '1' }, Code: 200 }, session.meta_data);
 * }
 * ```
 *
 * (`TykJsResponse` is the same helper under the reference's name). The source is the entry's
 * `function_source_uri`: base64 text with `function_source_type: blob`, or with `file` a path
 * relative to the gateway's `plugin_dir` that stays inside it (gateway/plugins/load.ts
 * `pluginFile`). The function gets the request (`Method`, `URL`, `RequestURI`, `Headers` and
 * `Params` as lists of values, `Body`), the key's session with `use_session` (else `{}`), and
 * `{config_data}`; with `use_session`, the session `meta_data` it returns, when changed, is saved
 * to the request's key as the reference saves it (plugins/session-meta.ts). Each entry's function runs in a worker thread of its own, in a context
 * without Node's globals, bounded by `plugin_timeout_ms` (gateway/plugins/runner.ts). A function
 * that throws, times out or answers something else than the contract gets the request 500 with
 * an error ID, or, with `proxy_on_error`, the request goes on to the upstream. The first entry
 * matching the method and path answers; it runs where mock responses do. Only with the gateway's
 * `enable_jsvm` on (off by default): otherwise such an API is refused when written and not served
 * when loaded (routes/check.ts).
 */
import { readFile } from 'node:fs/promises';
import type { GatewayApiDefinition, VersionInfo } from '../../../schemas/generated/models.ts';
import { JSVM_OFF, virtualSourceProblem } from '../../../schemas/rules/virtual-endpoints.ts';
import { errorMessage } from '../../../lib/errors.ts';
import { isPlainObject } from '../../../lib/plain-object.ts';
import { reject, respond, sendableHeader } from '../../pipeline/compose.ts';
import { MAX_READ_BODY, type RequestContext } from '../../pipeline/context.ts';
import {
  compileEntryEndpoint,
  matchingEntry,
  servedVersion,
  versionedByRequest,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { around } from '../../pipeline/steps.ts';
import { pluginFailure, pluginFile } from '../../plugins/load.ts';
import { PluginRunner } from '../../plugins/runner.ts';
import { changedMeta, saveSessionMeta, sentMeta } from '../../plugins/session-meta.ts';
import type { GatewayMiddleware } from '../deps.ts';

const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te']);

/** One virtual endpoint, ready to run. */
interface Virtual {
  endpoint: CompiledEndpoint;
  label: string;
  runner: PluginRunner;
  useSession: boolean;
  proxyOnError: boolean;
}

/** The entries of a version that answer. */
function entriesOf(v: VersionInfo) {
  return (v.extended_paths?.virtual ?? []).filter(
    (e) => e.disabled !== true && e.path !== undefined && e.path !== '',
  );
}

/** The versions whose entries may answer: the served one, or each when chosen per request. */
function versionsOf(api: GatewayApiDefinition): [string | undefined, VersionInfo][] {
  if (!versionedByRequest(api)) {
    const v = servedVersion(api);
    return v === undefined ? [] : [[undefined, v]];
  }
  return Object.entries(api.version_data?.versions ?? {});
}

async function sourceOf(
  e: ReturnType<typeof entriesOf>[number],
  pluginDir: string | undefined,
  at: string,
): Promise<string> {
  const uri = e.function_source_uri ?? '';
  if (e.function_source_type === 'file') {
    return readFile(
      await pluginFile(uri, pluginDir, `${at}.function_source_uri`, virtualSourceProblem),
      'utf8',
    );
  }
  return Buffer.from(uri, 'base64').toString('utf8');
}

/** Starts the workers of a version's entries; throws naming the entry that can't run. */
async function compileVersion(
  v: VersionInfo,
  pluginDir: string | undefined,
  timeoutMs: number,
  at: string,
): Promise<Virtual[]> {
  const ignoreCase = v.ignore_endpoint_case === true;
  const out: Virtual[] = [];
  try {
    for (const [i, e] of entriesOf(v).entries()) {
      const where = `${at}[${String(i)}]`;
      const name = e.response_function_name ?? '';
      const label = `virtual:${e.path ?? ''}#${name}`;
      const source = await sourceOf(e, pluginDir, where);
      let runner: PluginRunner;
      try {
        runner = await PluginRunner.start({ kind: 'script', source, name, label, timeoutMs });
      } catch (err) {
        throw new Error(`${where}: the function can't be loaded: ${errorMessage(err)}`, { cause: err });
      }
      out.push({
        endpoint: compileEntryEndpoint(e, ignoreCase),
        label,
        runner,
        useSession: e.use_session === true,
        proxyOnError: e.proxy_on_error === true,
      });
    }
  } catch (err) {
    for (const x of out) x.runner.close();
    throw err;
  }
  return out;
}

/** The reference's request object of a virtual endpoint. */
function requestObject(ctx: RequestContext, body: Buffer): Record<string, unknown> {
  const headers: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(ctx.headers)) {
    if (v === undefined) continue;
    const name = k.replace(/(^|-)([a-z])/g, (_m, d: string, c: string) => d + c.toUpperCase());
    headers[name] = Array.isArray(v) ? v : [v];
  }
  const params: Record<string, string[]> = {};
  const rawQuery = ctx.query.startsWith('?') ? ctx.query.slice(1) : ctx.query;
  for (const [k, v] of new URLSearchParams(rawQuery)) (params[k] ??= []).push(v);
  return {
    Method: ctx.method.toUpperCase(),
    URL: ctx.path,
    RequestURI: ctx.path + (rawQuery === '' ? '' : `?${rawQuery}`),
    Headers: headers,
    Params: params,
    Body: body.toString('utf8'),
  };
}

/**
 * The function's answer as status, body and headers, and the session meta it returned
 * (`SessionMeta`); throws when it breaks the contract.
 */
function responseOf(text: unknown): {
  status: number;
  body: string;
  headers: Record<string, string>;
  meta: unknown;
} {
  if (typeof text !== 'string') throw new Error('the function answered no SvcJsResponse');
  const parsed: unknown = JSON.parse(text);
  const r = isPlainObject(parsed) ? parsed.Response : undefined;
  if (!isPlainObject(r)) throw new Error('the function answered no response object');
  const code = r.Code ?? 200;
  if (typeof code !== 'number' || !Number.isInteger(code) || code < 100 || code > 599) {
    throw new Error('Code must be an HTTP status');
  }
  const body = r.Body ?? '';
  if (typeof body !== 'string') throw new Error('Body must be a string');
  const headers: Record<string, string> = {};
  const given = r.Headers ?? {};
  if (!isPlainObject(given)) throw new Error('Headers must be an object');
  for (const [n, v] of Object.entries(given)) {
    const name = n.trim().toLowerCase();
    const value = Array.isArray(v) ? v.map(String).join(', ') : String(v);
    if (!FRAMING.has(name) && sendableHeader(name, value)) headers[name] = value;
  }
  return { status: code, body, headers, meta: isPlainObject(parsed) ? parsed.SessionMeta : undefined };
}

/** See the module comment. */
export const virtualEndpoints: GatewayMiddleware = {
  name: 'virtual-endpoints',
  enabled: (api) => versionsOf(api).some(([, v]) => entriesOf(v).length > 0),
  // The function's body argument is the request body.
  readsBody: () => true,
  // File sources are read at compile time: recompiled at every reload.
  readsOutside: true,
  create: async (api, deps) => {
    // The write and load checks refuse such APIs already (routes/check.ts): never run one.
    if (!deps.config.enable_jsvm) throw new Error(`extended_paths.virtual: ${JSVM_OFF}`);
    const timeoutMs = deps.config.plugin_timeout_ms;
    const byVersion = new Map<string | undefined, Virtual[]>();
    try {
      for (const [name, v] of versionsOf(api)) {
        const at = `version_data.versions.${name ?? 'served'}.extended_paths.virtual`;
        byVersion.set(name, await compileVersion(v, deps.config.plugin_dir, timeoutMs, at));
      }
    } catch (err) {
      for (const list of byVersion.values()) for (const x of list) x.runner.close();
      throw err;
    }
    const perRequest = versionedByRequest(api);
    const config = { config_data: api.config_data ?? {} };
    return around(
      async (ctx, next) => {
        const list = byVersion.get(perRequest ? ctx.state.version : undefined) ?? [];
        const hit = matchingEntry(list, ctx);
        if (hit !== undefined) {
          const body = await ctx.readBody(MAX_READ_BODY);
          if (body === undefined) return reject(ctx, GatewayError.bodyTooLarge());
          const session = hit.useSession && ctx.session !== undefined ? ctx.session : {};
          try {
            const r = responseOf(
              await hit.runner.call([requestObject(ctx, body), session, config], timeoutMs),
            );
            // As the reference: with use_session, a changed meta_data is saved to the key.
            const meta =
              hit.useSession && ctx.session !== undefined
                ? changedMeta(r.meta, sentMeta(ctx.session))
                : undefined;
            if (meta !== undefined) await saveSessionMeta(deps, ctx, meta);
            return respond(ctx, r.status, r.body, r.headers);
          } catch (err) {
            if (!hit.proxyOnError) return reject(ctx, pluginFailure(ctx, hit, 'virtual', err));
            ctx.log.warn('virtual endpoint failed, proxying', {
              plugin: hit.label,
              error: errorMessage(err),
            });
          }
        }
        await next();
        return undefined;
      },
      {
        close: () => {
          for (const list of byVersion.values()) for (const x of list) x.runner.close();
        },
      },
    );
  },
};
