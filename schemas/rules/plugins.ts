/**
 * The rules of an API's plugins (`custom_middleware`), written once: which hooks the gateway runs
 * (`pluginHooksOf`, `customAuthHook`, what its middleware load) and what it refuses at write
 * time. A plugin is a function exported by a JavaScript or TypeScript module under the gateway's
 * `plugin_dir` (driver `svc`); the path is relative and never leaves that directory, so the
 * rule holds whatever directory a gateway is configured with. With driver `grpc` a hook is a
 * name the gateway sends to its gRPC plugin server (the reference's coprocess protocol,
 * gateway/plugins/coprocess/); the path is not used. With driver `otto` (the reference's
 * JavaScript VM) a hook is a middleware file written for the reference (`TykJS.TykMiddleware`,
 * gateway/plugins/otto.ts): `path` a `.js` file under `plugin_dir`, `name` the variable holding
 * the middleware; its `pre`, `post_key_auth` and `post` hooks run, its `auth_check` and
 * `response` hooks are refused by name. What the file may use (`ottoSourceProblem`) and whether
 * the gateway runs JavaScript at all (`enable_jsvm`) are checked by the gateway, which has the
 * file and the setting, when the API is written and when it is loaded. The other gateways'
 * drivers (Python, Lua, Go plugins) are refused by name.
 */
import type { CustomMiddleware, PluginHook } from '../generated/models.ts';
import type { ClassicApiInput } from './read.ts';
import { quote, type FieldProblem } from './field-problem.ts';
import { isTrue, list, model, problem, text, type Unchecked } from './read.ts';

/** The points of the chain plugins run at, besides the authentication check. */
export const PLUGIN_STAGES = ['pre', 'post_key_auth', 'post', 'response'] as const;
/** One of PLUGIN_STAGES. */
export type PluginStage = (typeof PLUGIN_STAGES)[number];

/** The driver of this gateway's own plugins: JavaScript or TypeScript modules. */
export const PLUGIN_DRIVER = 'svc';
/** The driver of plugins served by a gRPC plugin server (the reference's coprocess protocol). */
export const GRPC_PLUGIN_DRIVER = 'grpc';
/** The driver of middleware files written for the reference's JavaScript VM (`TykJS`). */
export const OTTO_PLUGIN_DRIVER = 'otto';
/** The drivers this gateway runs. */
export type PluginDriver = typeof PLUGIN_DRIVER | typeof GRPC_PLUGIN_DRIVER | typeof OTTO_PLUGIN_DRIVER;

/**
 * Why the gateway refuses an API with otto hooks while its `enable_jsvm` is off (the default):
 * the file runs in a `node:vm` context, which is no security boundary.
 */
export const OTTO_JSVM_OFF =
  'otto (TykJS) middleware runs JavaScript in the gateway, and enable_jsvm is off on this gateway: set enable_jsvm (--enable-jsvm), or write the hook as a module (driver svc)';

/**
 * The reference's JSVM functions svc's otto driver does not provide: a file naming one is
 * refused (it would fail on every request that reaches the call).
 */
export const OTTO_REFUSED = [
  'TykMakeHttpRequest',
  'TykBatchRequest',
  'TykGetKeyData',
  'TykSetKeyData',
] as const;

/** Why the source of an otto middleware file can't run on this gateway, or undefined. */
export function ottoSourceProblem(source: string): string | undefined {
  const refused = OTTO_REFUSED.find((n) => source.includes(n));
  return refused === undefined
    ? undefined
    : `uses ${refused}, which svc's otto driver does not provide: make the call from a module (driver svc) or a gRPC plugin server`;
}

/** A hook the gateway runs: the function `name` exported by the module at `path`. */
export interface EnabledHook {
  name: string;
  path: string;
  /** A gRPC plugin server gets bodies as bytes only (`raw_body`), not as text (`body`). */
  raw_body_only?: boolean;
  /** An otto hook after authentication may change the session's `meta_data` (the reference saves it). */
  require_session?: boolean;
}

const MODULE_FILE = /\.(?:js|mjs|ts|mts)$/;
const MODULE_HINT = 'a plugin is a JavaScript or TypeScript module: name a .js, .mjs, .ts or .mts file';

function enabled(hook: Unchecked<PluginHook> | undefined): EnabledHook | undefined {
  if (hook === undefined || isTrue(hook.disabled)) return undefined;
  const name = text(hook.name) ?? '';
  const path = text(hook.path) ?? '';
  if (name === '' && path === '') return undefined;
  return {
    name,
    path,
    raw_body_only: isTrue(hook.raw_body_only),
    ...(isTrue(hook.require_session) ? { require_session: true } : {}),
  };
}

function middlewareOf(api: ClassicApiInput): Unchecked<CustomMiddleware> | undefined {
  return model<CustomMiddleware>(api.custom_middleware);
}

/** The driver of the plugins of `api` (`svc` unless it says `grpc` or `otto`). */
export function pluginDriverOf(api: ClassicApiInput): PluginDriver {
  const d = text(middlewareOf(api)?.driver);
  return d === GRPC_PLUGIN_DRIVER || d === OTTO_PLUGIN_DRIVER ? d : PLUGIN_DRIVER;
}

/** The authentication hook of `api` (`custom_middleware.auth_check`), when it names one. */
export function customAuthHook(api: ClassicApiInput): EnabledHook | undefined {
  return enabled(model<PluginHook>(middlewareOf(api)?.auth_check));
}

/** The hooks `api` runs at `stage`, in order (disabled and empty ones left out). */
export function pluginHooksOf(api: ClassicApiInput, stage: PluginStage): EnabledHook[] {
  return list(middlewareOf(api)?.[stage]).flatMap((h) => {
    const hook = enabled(model<PluginHook>(h));
    return hook === undefined ? [] : [hook];
  });
}

/** The stages otto hooks run at (its `auth_check` and `response` hooks are refused). */
export const OTTO_STAGES = ['pre', 'post_key_auth', 'post'] as const satisfies readonly PluginStage[];

/** The otto hooks of `api` (none unless its driver is otto), with their stage and field path. */
export function ottoHooksOf(api: ClassicApiInput): { hook: EnabledHook; stage: PluginStage; at: string }[] {
  if (pluginDriverOf(api) !== OTTO_PLUGIN_DRIVER) return [];
  return OTTO_STAGES.flatMap((stage) =>
    pluginHooksOf(api, stage).map((hook, i) => ({
      hook,
      stage,
      at: `custom_middleware.${stage}[${String(i)}]`,
    })),
  );
}

/** Why `path` can't name a plugin module, or undefined. */
export function pluginPathProblem(path: string): string | undefined {
  if (path.startsWith('/') || path.includes('\\') || /^[A-Za-z]:/.test(path)) {
    return `${quote(path)}: write the module's path relative to the gateway's plugin_dir, such as auth/check.ts`;
  }
  if (path.split('/').some((s) => s === '..' || s === '.' || s === '')) {
    return `${quote(path)}: a plugin path stays inside the gateway's plugin_dir: remove "..", "." and empty segments`;
  }
  if (!MODULE_FILE.test(path)) {
    return `${quote(path)}: ${MODULE_HINT}`;
  }
  return undefined;
}

function grpcHookProblems(hook: EnabledHook, at: string): FieldProblem[] {
  return hook.name === ''
    ? [problem(`${at}.name`, 'Required', 'set the name of the hook the gRPC plugin server dispatches on')]
    : [];
}

/** The otto hooks this gateway does not run, refused by name; undefined for the others. */
function ottoHookProblem(at: string): FieldProblem | undefined {
  const kind = at.endsWith('auth_check')
    ? 'auth_check'
    : at.startsWith('custom_middleware.response')
      ? 'response'
      : undefined;
  return kind === undefined
    ? undefined
    : problem(
        at,
        'NotSupported',
        `an otto (TykJS) ${kind} hook is not run by this gateway: write it as a module (driver ${PLUGIN_DRIVER}) or serve it from a gRPC plugin server (driver ${GRPC_PLUGIN_DRIVER})`,
      );
}

function hookProblems(hook: EnabledHook, at: string, driver: string): FieldProblem[] {
  if (driver === GRPC_PLUGIN_DRIVER) return grpcHookProblems(hook, at);
  const otto = driver === OTTO_PLUGIN_DRIVER;
  if (otto) {
    const refused = ottoHookProblem(at);
    if (refused !== undefined) return [refused];
  }
  const problems: FieldProblem[] = [];
  if (hook.name === '') {
    problems.push(
      problem(
        `${at}.name`,
        'Required',
        otto
          ? 'set the name of the variable holding the middleware (new TykJS.TykMiddleware.NewMiddleware)'
          : 'set the name of the function the module exports',
      ),
    );
  } else if (!/^[A-Za-z_$][\w$]*$/.test(hook.name)) {
    problems.push(
      problem(
        `${at}.name`,
        'Invalid',
        `${quote(hook.name)} is not a JavaScript ${otto ? 'variable' : 'function'} name`,
      ),
    );
  }
  if (hook.path === '') {
    problems.push(
      problem(
        `${at}.path`,
        'Required',
        `set the ${otto ? 'file' : 'module'}'s path, relative to the gateway's plugin_dir`,
      ),
    );
  } else {
    const p = pluginPathProblem(hook.path);
    if (p !== undefined && !(otto && p.endsWith(MODULE_HINT)))
      problems.push(problem(`${at}.path`, 'Invalid', p));
    else if (otto && !hook.path.endsWith('.js')) {
      problems.push(
        problem(`${at}.path`, 'Invalid', `${quote(hook.path)}: an otto (TykJS) middleware is a .js file`),
      );
    }
  }
  return problems;
}

/**
 * `enable_coprocess_auth`: the reference's switch for authentication by a coprocess plugin. It
 * means the gRPC plugin server's auth_check (the reference's auth_check samples set it with
 * driver grpc), so it needs both; with another driver (Python, Lua: the reference's other
 * coprocess runtimes) or no auth_check it would authenticate with nothing this gateway runs.
 */
function coprocessAuthProblems(
  api: ClassicApiInput,
  driver: string,
  auth: EnabledHook | undefined,
): FieldProblem[] {
  if (!isTrue(api.enable_coprocess_auth)) return [];
  if (driver !== GRPC_PLUGIN_DRIVER) {
    return [
      problem(
        'enable_coprocess_auth',
        'NotSupported',
        `coprocess authentication is served by a gRPC plugin server only${driver === '' ? '' : `, not by the driver ${quote(driver)}`}: set custom_middleware.driver to ${GRPC_PLUGIN_DRIVER} with an auth_check hook, or use a JavaScript or TypeScript plugin (custom_middleware.auth_check with driver ${PLUGIN_DRIVER}) and set enable_coprocess_auth to false`,
      ),
    ];
  }
  if (auth === undefined) {
    return [
      problem(
        'enable_coprocess_auth',
        'Invalid',
        'coprocess authentication needs the hook of the gRPC plugin server that checks the request: set custom_middleware.auth_check.name, or set enable_coprocess_auth to false',
      ),
    ];
  }
  return [];
}

/** Every problem of the plugins of `api`. */
export function pluginProblems(api: ClassicApiInput): FieldProblem[] {
  const problems: FieldProblem[] = [];
  let any = false;
  const cm = middlewareOf(api);
  const driver = text(cm?.driver) ?? '';
  const auth = customAuthHook(api);
  if (auth !== undefined) {
    any = true;
    problems.push(...hookProblems(auth, 'custom_middleware.auth_check', driver));
  }
  for (const stage of PLUGIN_STAGES) {
    list(cm?.[stage]).forEach((h, i) => {
      const hook = enabled(model<PluginHook>(h));
      if (hook === undefined) return;
      any = true;
      problems.push(...hookProblems(hook, `custom_middleware.${stage}[${i}]`, driver));
    });
  }
  problems.push(...coprocessAuthProblems(api, driver, auth));
  if (any && driver !== PLUGIN_DRIVER && driver !== GRPC_PLUGIN_DRIVER && driver !== OTTO_PLUGIN_DRIVER) {
    problems.push(
      problem(
        'custom_middleware.driver',
        driver === '' ? 'Required' : 'NotSupported',
        `${driver === '' ? '' : `the driver ${quote(driver)} is not supported by this gateway: `}set driver to ${PLUGIN_DRIVER} (JavaScript or TypeScript modules under plugin_dir), ${GRPC_PLUGIN_DRIVER} (a gRPC plugin server) or ${OTTO_PLUGIN_DRIVER} (middleware files of the reference's JavaScript VM)`,
      ),
    );
  }
  return problems;
}
