/**
 * Plugin hooks at fixed points of the chain (`custom_middleware`; the interface is
 * gateway/plugins/types.ts): `pre` after the API-wide checks and before authentication,
 * `post_key_auth` right after authentication, `post` last before the upstream call, then
 * `response`. Hooks of a point run in order; each may set or remove request headers or refuse
 * the request (`response` hooks add response headers). A hook that fails answers 500 with an
 * error ID. The modules are imported when the API's routes are built.
 */
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { pluginHooksOf, type PluginStage } from '../../../schemas/rules/plugins.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
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

/** The middleware that runs the hooks of `stage`. */
function pluginStage(stage: PluginStage): GatewayMiddleware {
  return {
    name: `plugins-${stage.replaceAll('_', '-')}`,
    enabled: (api: GatewayApiDefinition) => pluginHooksOf(api, stage).length > 0,
    // Plugin files are read at compile time: recompiled at every reload.
    readsOutside: true,
    create: async (api, deps) => {
      const hooks = await Promise.all(
        pluginHooksOf(api, stage).map((h, i) =>
          loadHook(h, deps.config.plugin_dir, `custom_middleware.${stage}[${String(i)}]`),
        ),
      );
      const timeoutMs = deps.config.plugin_timeout_ms;
      return around(async (ctx, next) => {
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
      });
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
