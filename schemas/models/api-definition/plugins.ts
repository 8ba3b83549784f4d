/**
 * Plugins of a classic API: functions of JavaScript or TypeScript modules run at fixed points of
 * the chain.
 */
import type { JsonSchema } from '../../json-schema.ts';
import { notYet, openObject } from './builders.ts';

const pluginHook: JsonSchema = {
  title: 'PluginHook',
  description:
    'One function of a plugin module: `name` is what the module exports, `path` the module file relative to the gateway setting `plugin_dir`.',
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string', description: 'Name of the function the module exports.' },
    path: {
      type: 'string',
      description:
        'Module file (`.js`, `.mjs`, `.ts` or `.mts`), relative to the gateway setting `plugin_dir`, without `..`.',
    },
    disabled: { type: 'boolean', description: 'Skips the hook.' },
    require_session: {
      type: 'boolean',
      description:
        'Kept for definitions of other gateways: hooks after authentication always see the session.',
    },
    raw_body_only: {
      type: 'boolean',
      description:
        'With driver `grpc`: the hook is sent bodies as bytes only (`raw_body`), not as text (`body`). JavaScript and TypeScript hooks never receive the body.',
    },
  },
};

const hookList = (when: string): JsonSchema => ({
  type: 'array',
  items: pluginHook,
  description: `Hooks run ${when}, in order.`,
});

/** Plugins of an API: JavaScript or TypeScript modules the gateway loads (docs/gateway.md). */
const customMiddleware: JsonSchema = {
  title: 'CustomMiddleware',
  description:
    'Plugins: functions of JavaScript or TypeScript modules, or hooks of a gRPC plugin server, run at fixed points of the chain.',
  type: 'object',
  additionalProperties: false,
  'x-svc-support': 'supported',
  properties: {
    driver: {
      type: 'string',
      description:
        'What runs the plugins: `svc` (JavaScript or TypeScript modules under plugin_dir) or `grpc` (a gRPC plugin server).',
    },
    pre: hookList('before authentication, after the API-wide checks'),
    auth_check: {
      ...pluginHook,
      title: 'PluginAuthCheck',
      description:
        'Custom authentication (`base_identity_provided_by: custom_auth`): the function returns a session or a refusal.',
    },
    post_key_auth: hookList('right after authentication, before the access checks'),
    post: hookList('last, just before the upstream call'),
    response: hookList(
      "on the response: JavaScript and TypeScript hooks add its headers (they run before the upstream call); a gRPC plugin server's get the upstream's response and may change its status, headers and body",
    ),
    id_extractor: notYet(
      {
        title: 'MiddlewareIdExtractor',
        description: 'Identity extractor of a custom authentication plugin (caches its result per identity).',
        type: 'object',
        additionalProperties: false,
        properties: {
          disabled: { type: 'boolean', description: 'Skips the extractor.' },
          extract_from: { type: 'string', description: '`header`, `form` or `body`.' },
          extract_with: { type: 'string', description: '`value`, `regex` or `xpath`.' },
          extractor_config: openObject(
            'Settings: `header_name`, `param_name`, `regex_expression`, `regex_match_index`, `xpath_expression`.',
          ),
        },
      },
      'not built yet: the custom authentication function runs on every request; caching its result per extracted identity is not implemented',
    ),
  },
};

/** The plugin fields of a classic API. */
export const pluginProperties: Record<string, JsonSchema> = {
  custom_middleware: customMiddleware,
  custom_middleware_bundle: {
    'x-svc-support': 'not-supported',
    'x-svc-reason':
      'bundles are archives of Python, Lua or Go plugins fetched from a bundle server; svc runs JavaScript or TypeScript modules from its `plugin_dir` only (`custom_middleware`)',
    type: 'string',
    description: 'A plugin bundle of other gateways; refused when set (name modules in custom_middleware).',
  },
};
