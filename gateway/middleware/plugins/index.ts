/**
 * Plugin hooks at fixed points of the chain (`custom_middleware`; the interface is
 * gateway/plugins/types.ts): `pre` after the API-wide checks and before authentication,
 * `post_key_auth` right after authentication, `post` last before the upstream call, then
 * `response`. Hooks of a point run in order; each may set or remove request headers or refuse
 * the request (`response` hooks add response headers). A hook that fails answers 500 with an
 * error ID. The modules are imported when the API's routes are built. With driver `grpc` each hook
 * is a call to the gateway's gRPC plugin server instead (gateway/plugins/coprocess/).
 */
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import {
  GRPC_PLUGIN_DRIVER,
  pluginDriverOf,
  pluginHooksOf,
  type PluginStage,
} from '../../../schemas/rules/plugins.ts';
import { reject } from '../../pipeline/compose.ts';
import { around, waits } from '../../pipeline/steps.ts';
import type { GatewayMiddleware, MiddlewareDeps } from '../deps.ts';
import { openDispatcher, type HookType } from '../../plugins/coprocess/dispatcher.ts';
import { applyRequestChanges, outgoingObject } from '../../plugins/coprocess/hooks.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { removeRequestHeader } from '../../pipeline/context.ts';
import {
  callHook,
  headersOf,
  loadHook,
  pluginFailure,
  pluginRefusalOf,
  pluginRequest,
  removedOf,
  resultObject,
} from '../../plugins/load.ts';

const HOOK_TYPES: Readonly<Record<PluginStage, HookType>> = {
  pre: 'Pre',
  post_key_auth: 'PostKeyAuth',
  post: 'Post',
  response: 'Response',
};

/** The step that sends the hooks of `stage` to the gRPC plugin server, in order. */
function grpcStage(api: GatewayApiDefinition, deps: MiddlewareDeps, stage: PluginStage) {
  const server = deps.config.coprocess_grpc_server;
  if (server === undefined) {
    throw new Error(
      "custom_middleware.driver: the gateway setting coprocess_grpc_server is not set, so gRPC plugins can't run: set it (--coprocess-grpc-server)",
    );
  }
  const dispatcher = openDispatcher(server);
  const names = pluginHooksOf(api, stage).map((h) => h.name);
  const timeoutMs = deps.config.plugin_timeout_ms;
  return waits(
    async (ctx) => {
      for (const name of names) {
        const hook = { label: `grpc:${name}` };
        try {
          const answer = await dispatcher.dispatch(
            outgoingObject(ctx, api, HOOK_TYPES[stage], name),
            timeoutMs,
          );
          const refused = applyRequestChanges(ctx, answer);
          if (refused !== undefined) return refused;
        } catch (err) {
          return reject(ctx, pluginFailure(ctx, hook, stage, err));
        }
      }
      return undefined;
    },
    {
      close: () => {
        dispatcher.close();
      },
    },
  );
}

/** The middleware that runs the hooks of `stage`. */
function pluginStage(stage: PluginStage): GatewayMiddleware {
  return {
    name: `plugins-${stage.replaceAll('_', '-')}`,
    enabled: (api: GatewayApiDefinition) => pluginHooksOf(api, stage).length > 0,
    // Plugin files are read at compile time: recompiled at every reload.
    readsOutside: true,
    create: async (api, deps) => {
      if (pluginDriverOf(api) === GRPC_PLUGIN_DRIVER) return grpcStage(api, deps, stage);
      const hooks = await Promise.all(
        pluginHooksOf(api, stage).map((h, i) =>
          loadHook(h, deps.config.plugin_dir, `custom_middleware.${stage}[${String(i)}]`),
        ),
      );
      const timeoutMs = deps.config.plugin_timeout_ms;
      return around(
        async (ctx, next) => {
          for (const hook of hooks) {
            try {
              const result = resultObject(await callHook(hook, pluginRequest(ctx, api), timeoutMs));
              if (result === undefined) continue;
              if (stage === 'response') {
                for (const [name, value] of headersOf(result.setHeaders, 'setHeaders')) {
                  ctx.responseHeaders[name] = value;
                }
                continue;
              }
              if (result.refuse !== undefined) {
                const r = pluginRefusalOf(result.refuse);
                return reject(ctx, GatewayError.pluginRefused(r.status, r.message));
              }
              const set = headersOf(result.setHeaders, 'setHeaders');
              for (const name of removedOf(result.removeHeaders)) removeRequestHeader(ctx.headers, name);
              for (const [name, value] of set) ctx.headers[name] = value;
            } catch (err) {
              return reject(ctx, pluginFailure(ctx, hook, stage, err));
            }
          }
          await next();
          return undefined;
        },
        {
          close: () => {
            for (const h of hooks) h.close?.();
          },
        },
      );
    },
  };
}

/** `pre` hooks: after the API-wide checks, before authentication. */
export const pluginsPre = pluginStage('pre');
/** `post_key_auth` hooks: right after authentication. */
export const pluginsPostKeyAuth = pluginStage('post_key_auth');
/** `post` hooks: last before the upstream call. */
export const pluginsPost = pluginStage('post');
/** `response` hooks: add headers to the client's response. */
export const pluginsResponse = pluginStage('response');
