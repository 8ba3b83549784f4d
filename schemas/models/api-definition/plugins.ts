/**
 * Plugins of a classic API: functions of JavaScript or TypeScript modules run at fixed points of
 * the chain.
 */
import type { JsonSchema } from '../../json-schema.ts';
import { notYet, closedObject } from '../builders.ts';

const pluginHook: JsonSchema = closedObject(
  {
    title: 'PluginHook',
    description:
      'One function of a plugin module: `name` is what the module exports, `path` the module file relative to the gateway setting `plugin_dir`.',
  },
  {
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
        "Hooks after authentication always see the session. With driver `otto`: a hook with it that changes the session's `meta_data` fails, naming it (the reference saves the change, svc does not); a hook without it has the `meta_data` it returns ignored, as in the reference.",
    },
    raw_body_only: {
      type: 'boolean',
      description:
        'With driver `grpc`: the hook is sent bodies as bytes only (`raw_body`), not as text (`body`). JavaScript and TypeScript hooks never receive the body.',
    },
  },
);

const hookList = (when: string): JsonSchema => ({
  type: 'array',
  items: pluginHook,
  description: `Hooks run ${when}, in order.`,
});

/** Plugins of an API: JavaScript or TypeScript modules the gateway loads (docs/gateway.md). */
const customMiddleware: JsonSchema = closedObject(
  {
    title: 'CustomMiddleware',
    description:
      'Plugins: functions of JavaScript or TypeScript modules, or hooks of a gRPC plugin server, run at fixed points of the chain.',
    'x-svc-support': 'supported',
  },
  {
    driver: {
      type: 'string',
      description:
        "What runs the plugins: `svc` (JavaScript or TypeScript modules under plugin_dir), `grpc` (a gRPC plugin server) or `otto` (middleware files written for the reference's JavaScript VM, `TykJS.TykMiddleware`, under plugin_dir: `pre`, `post_key_auth` and `post` hooks, with the gateway setting `enable_jsvm` on).",
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
    id_extractor: closedObject(
      {
        title: 'MiddlewareIdExtractor',
        description:
          "Identity extractor of a gRPC plugin server's `auth_check`: the identity read from the request before the hook is asked (none: 400 `Authorization field missing`); the session the hook answers is that identity's, and until the `id_extractor_deadline` (Unix seconds) the hook sets in it, requests with the same identity get it without the hook being asked.",
        'x-svc-support': 'supported',
      },
      {
        disabled: {
          type: 'boolean',
          description: 'Skips the extractor: the hook is asked on every request.',
        },
        extract_from: {
          type: 'string',
          description: '`header`, `form` (query and URL-encoded body) or `body`.',
        },
        extract_with: {
          type: 'string',
          description:
            '`value` (the whole header or form value) or `regex` (a match of `regex_expression`); `xpath` is not built yet.',
        },
        extractor_config: closedObject(
          { description: 'What the extractor reads: only the settings of its source and method.' },
          {
            header_name: { type: 'string', description: 'With `extract_from: header`: the header.' },
            param_name: { type: 'string', description: 'With `extract_from: form`: the form parameter.' },
            regex_expression: {
              type: 'string',
              description: 'With `extract_with: regex`: the regular expression whose match is the identity.',
            },
            regex_match_index: {
              type: 'integer',
              description: 'With `extract_with: regex`: which match (from 0, the default) is the identity.',
            },
            xpath_expression: notYet(
              { type: 'string', description: 'With `extract_with: xpath`: the XPath expression.' },
              'not built yet: reading the identity with an XPath expression (`extract_with: xpath`); read it with `regex_expression` (`extract_with: regex`)',
            ),
          },
        ),
      },
    ),
  },
);

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
