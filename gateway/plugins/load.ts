/**
 * Loading and calling plugins (types.ts). A hook's module is imported once when its API's routes
 * are built, from `plugin_dir` (its real path: a symbolic link out of the directory is refused);
 * a module changed on disk is imported anew at the next reload (its modification time is part of
 * the URL Node caches modules by). Each hook runs in a worker thread of its own (runner.ts), so
 * one that loops stalls no other request; a call is bounded by `plugin_timeout_ms`, and what a
 * hook returns is checked before the gateway acts on it.
 */
import { randomUUID } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { errorMessage } from '../../lib/errors.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { pluginPathProblem, type EnabledHook } from '../../schemas/rules/plugins.ts';
import type { RequestContext } from '../pipeline/context.ts';
import { GatewayError } from '../pipeline/errors.ts';
import type { PluginRefusal, PluginRequest } from './types.ts';
import { isPlainObject } from '../../lib/plain-object.ts';
import { PluginRunner } from './runner.ts';

/** A loaded hook: the function (given the call's time limit) and what names it in logs. */
export interface LoadedHook {
  label: string;
  fn: (req: PluginRequest, timeoutMs: number) => unknown;
  /** Stops the hook's worker (when the routes holding it are retired). */
  close?: () => void;
}

/**
 * The real path of `path` under `pluginDir`: relative, no `..`, and no symbolic link out of the
 * directory (its real path must stay under the directory's). Throws saying why it can't be used.
 */
export async function pluginFile(
  path: string,
  pluginDir: string | undefined,
  at: string,
  problemOf: (path: string) => string | undefined = pluginPathProblem,
): Promise<string> {
  if (pluginDir === undefined) {
    throw new Error(
      `${at}: the gateway setting plugin_dir is not set, so plugins can't be loaded: set it (--plugin-dir)`,
    );
  }
  const problem = problemOf(path);
  if (problem !== undefined) throw new Error(`${at}: ${problem}`);
  let file: string;
  let root: string;
  try {
    root = await realpath(pluginDir);
    file = await realpath(resolve(root, path));
  } catch (err) {
    throw new Error(`${at}: ${path} can't be read in plugin_dir: ${errorMessage(err)}`, { cause: err });
  }
  if (!file.startsWith(root + sep)) throw new Error(`${at}: ${path} leads out of plugin_dir`);
  return file;
}

/**
 * Loads the function `hook` names from a module under `pluginDir` into a worker of its own;
 * throws saying why it can't.
 */
export async function loadHook(
  hook: EnabledHook,
  pluginDir: string | undefined,
  at: string,
): Promise<LoadedHook> {
  const label = `${hook.path}#${hook.name}`;
  const file = await pluginFile(hook.path, pluginDir, `${at}.path`);
  const st = await stat(file);
  const url = pathToFileURL(file);
  url.search = `v=${String(st.mtimeMs)}-${String(st.size)}`;
  let runner: PluginRunner;
  try {
    runner = await PluginRunner.start({ kind: 'module', url: url.href, name: hook.name, label });
  } catch (err) {
    const message = errorMessage(err);
    if (message.startsWith('exports no function')) {
      throw new Error(`${at}.name: ${hook.path} ${message}`, { cause: err });
    }
    throw new Error(`${at}.path: ${hook.path} failed to load: ${message}`, { cause: err });
  }
  return {
    label,
    fn: (req, timeoutMs) => runner.call([req], timeoutMs),
    close: () => {
      runner.close();
    },
  };
}

/** A plugin answered something the gateway can't act on. */
class PluginResultError extends Error {}

/**
 * Calls `hook` with `req` and resolves with what it returned; rejects when it throws or takes
 * longer than `timeoutMs`.
 */
export function callHook(hook: LoadedHook, req: PluginRequest, timeoutMs: number): Promise<unknown> {
  return new Promise((resolvePromise, rejectPromise) => {
    const timer = setTimeout(() => {
      rejectPromise(new Error(`no answer within ${String(timeoutMs)} ms`));
    }, timeoutMs);
    timer.unref();
    Promise.resolve()
      .then(() => hook.fn(req, timeoutMs))
      .then(
        (value) => {
          clearTimeout(timer);
          resolvePromise(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          rejectPromise(err instanceof Error ? err : new Error(String(err)));
        },
      );
  });
}

/** The 500 a failed plugin gets the request, logged with an error ID and the plugin's name. */
export function pluginFailure(
  ctx: RequestContext,
  hook: Pick<LoadedHook, 'label'>,
  stage: string,
  err: unknown,
): GatewayError {
  const errorId = randomUUID();
  ctx.log.error('plugin failed', { error_id: errorId, plugin: hook.label, stage, error: errorMessage(err) });
  return GatewayError.internal(errorId);
}

function frozenRecord<T>(entries: Iterable<[string, T]>): Readonly<Record<string, T>> {
  const out: Record<string, T> = {};
  for (const [k, v] of entries) if (!Object.hasOwn(out, k)) out[k] = v;
  return Object.freeze(out);
}

/** The frozen view of the request a hook gets (types.ts `PluginRequest`). */
export function pluginRequest(ctx: RequestContext, api: GatewayApiDefinition): PluginRequest {
  const rawQuery = ctx.query.startsWith('?') ? ctx.query.slice(1) : ctx.query;
  const headers = frozenRecord(
    Object.entries(ctx.headers).flatMap(([k, v]): [string, string][] =>
      v === undefined ? [] : [[k, Array.isArray(v) ? v.join(', ') : v]],
    ),
  );
  return Object.freeze({
    method: ctx.method.toUpperCase(),
    path: ctx.path,
    rawQuery,
    query: frozenRecord(new URLSearchParams(rawQuery)),
    headers,
    clientIp: ctx.clientIp,
    apiId: api.api_id ?? '',
    config: Object.freeze({ ...(api.config_data ?? {}) }),
    ...(ctx.state.keyId === undefined ? {} : { keyId: ctx.state.keyId }),
    ...(ctx.session === undefined ? {} : { session: Object.freeze(structuredClone(ctx.session)) }),
  });
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers that frame or route the exchange: a plugin never sets or removes them. */
const RESERVED = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'expect',
  'te',
  'trailer',
  'proxy-connection',
]);

/** `{status, message}` when `v` is a refusal a client can get; throws otherwise. */
export function pluginRefusalOf(v: unknown): PluginRefusal {
  if (!isPlainObject(v)) throw new PluginResultError('refuse must be {status, message}');
  const { status, message } = v;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 400 || status > 599) {
    throw new PluginResultError('refuse.status must be an integer from 400 to 599');
  }
  if (typeof message !== 'string') throw new PluginResultError('refuse.message must be a string');
  return { status, message };
}

/** Header names and values a plugin returned, lower-case names; throws when one can't be sent. */
export function headersOf(v: unknown, what: string): [string, string][] {
  if (v === undefined) return [];
  if (!isPlainObject(v)) throw new PluginResultError(`${what} must be an object of header names and values`);
  return Object.entries(v).map(([name, value]) => {
    const lower = name.toLowerCase();
    if (!TOKEN.test(name) || RESERVED.has(lower))
      throw new PluginResultError(`${what}: ${name} can't be set`);
    if (typeof value !== 'string' || /[\r\n\0]/.test(value)) {
      throw new PluginResultError(`${what}.${name} must be a string without line breaks`);
    }
    return [lower, value];
  });
}

/** The header names a plugin asked to remove, lower case; throws when one can't be removed. */
export function removedOf(v: unknown): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new PluginResultError('removeHeaders must be a list of header names');
  return v.map((name: unknown) => {
    if (typeof name !== 'string' || RESERVED.has(name.toLowerCase())) {
      throw new PluginResultError(`removeHeaders: ${String(name)} can't be removed`);
    }
    return name.toLowerCase();
  });
}

/** Checks that a hook returned an object (or nothing); throws otherwise. */
export function resultObject(v: unknown): Record<string, unknown> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isPlainObject(v)) throw new PluginResultError('a hook returns an object or nothing');
  return v;
}
