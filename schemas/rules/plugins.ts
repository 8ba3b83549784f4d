/**
 * The rules of an API's plugins (`custom_middleware`), written once: which hooks the gateway runs
 * (`pluginHooksOf`, `customAuthHook`, what its middleware load) and what it refuses at write
 * time. A plugin is a function exported by a JavaScript or TypeScript module under the gateway's
 * `plugin_dir` (driver `svc`); the path is relative and never leaves that directory, so the
 * rule holds whatever directory a gateway is configured with. The other gateways' drivers
 * (JavaScript VM, Python, gRPC, Go plugins) are refused by name.
 */
import type { CustomMiddleware, PluginHook } from '../generated/models.ts';
import type { ClassicApiInput } from './read.ts';
import { quote, type FieldProblem } from './field-problem.ts';
import { isTrue, list, model, problem, text, type Unchecked } from './read.ts';

/** The points of the chain plugins run at, besides the authentication check. */
export const PLUGIN_STAGES = ['pre', 'post_key_auth', 'post', 'response'] as const;
/** One of PLUGIN_STAGES. */
export type PluginStage = (typeof PLUGIN_STAGES)[number];

/** The driver of this gateway's plugins. */
export const PLUGIN_DRIVER = 'svc';

/** A hook the gateway runs: the function `name` exported by the module at `path`. */
export interface EnabledHook {
  name: string;
  path: string;
}

const MODULE_FILE = /\.(?:js|mjs|ts|mts)$/;

function enabled(hook: Unchecked<PluginHook> | undefined): EnabledHook | undefined {
  if (hook === undefined || isTrue(hook.disabled)) return undefined;
  const name = text(hook.name) ?? '';
  const path = text(hook.path) ?? '';
  return name === '' && path === '' ? undefined : { name, path };
}

function middlewareOf(api: ClassicApiInput): Unchecked<CustomMiddleware> | undefined {
  return model<CustomMiddleware>(api.custom_middleware);
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

/** Why `path` can't name a plugin module, or undefined. */
export function pluginPathProblem(path: string): string | undefined {
  if (path.startsWith('/') || path.includes('\\') || /^[A-Za-z]:/.test(path)) {
    return `${quote(path)}: write the module's path relative to the gateway's plugin_dir, such as auth/check.ts`;
  }
  if (path.split('/').some((s) => s === '..' || s === '.' || s === '')) {
    return `${quote(path)}: a plugin path stays inside the gateway's plugin_dir: remove "..", "." and empty segments`;
  }
  if (!MODULE_FILE.test(path)) {
    return `${quote(path)}: a plugin is a JavaScript or TypeScript module: name a .js, .mjs, .ts or .mts file`;
  }
  return undefined;
}

function hookProblems(hook: EnabledHook, at: string): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (hook.name === '') {
    problems.push(problem(`${at}.name`, 'Required', 'set the name of the function the module exports'));
  } else if (!/^[A-Za-z_$][\w$]*$/.test(hook.name)) {
    problems.push(problem(`${at}.name`, 'Invalid', `${quote(hook.name)} is not a JavaScript function name`));
  }
  if (hook.path === '') {
    problems.push(
      problem(`${at}.path`, 'Required', "set the module's path, relative to the gateway's plugin_dir"),
    );
  } else {
    const p = pluginPathProblem(hook.path);
    if (p !== undefined) problems.push(problem(`${at}.path`, 'Invalid', p));
  }
  return problems;
}

/** Every problem of the plugins of `api`. */
export function pluginProblems(api: ClassicApiInput): FieldProblem[] {
  const problems: FieldProblem[] = [];
  let any = false;
  const auth = customAuthHook(api);
  if (auth !== undefined) {
    any = true;
    problems.push(...hookProblems(auth, 'custom_middleware.auth_check'));
  }
  const cm = middlewareOf(api);
  for (const stage of PLUGIN_STAGES) {
    list(cm?.[stage]).forEach((h, i) => {
      const hook = enabled(model<PluginHook>(h));
      if (hook === undefined) return;
      any = true;
      problems.push(...hookProblems(hook, `custom_middleware.${stage}[${i}]`));
    });
  }
  const driver = text(cm?.driver) ?? '';
  if (any && driver !== PLUGIN_DRIVER) {
    problems.push(
      problem(
        'custom_middleware.driver',
        driver === '' ? 'Required' : 'NotSupported',
        `${driver === '' ? '' : `the driver ${quote(driver)} is not supported by this gateway: `}plugins are JavaScript or TypeScript modules: set driver to ${PLUGIN_DRIVER}`,
      ),
    );
  }
  return problems;
}
