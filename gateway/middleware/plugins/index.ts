/**
 * Plugin hooks at fixed points of the chain (`custom_middleware`; the interface is
 * gateway/plugins/types.ts): `pre` after the API-wide checks and before authentication,
 * `post_key_auth` right after authentication, `post` last before the upstream call, then
 * `response`. Hooks of a point run in order; each may set or remove request headers or refuse
 * the request (`response` hooks add response headers). A hook that fails answers 500 with an
 * error ID. The modules are imported when the API's routes are built. With driver `grpc` each hook
 * is a call to the gateway's gRPC plugin server instead (gateway/plugins/coprocess/), which is
 * sent the request body and may change it, the URL and the method; its `response` hooks get the
 * upstream's response once it is there and may change its status, headers and body. With driver
 * `otto` each hook is a middleware file written for the reference's JavaScript VM
 * (gateway/plugins/otto.ts), run in a worker thread as modules are, sent the request body as text;
 * the session `meta_data` a `require_session` hook changes is saved to the key.
 */
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import {
  GRPC_PLUGIN_DRIVER,
  OTTO_PLUGIN_DRIVER,
  pluginDriverOf,
  pluginHooksOf,
  type PluginStage,
} from '../../../schemas/rules/plugins.ts';
import { reject, respond } from '../../pipeline/compose.ts';
import { around, before, waits } from '../../pipeline/steps.ts';
import type { GatewayMiddleware, MiddlewareDeps } from '../deps.ts';
import { openPluginServer, type HookType } from '../../plugins/coprocess/dispatcher.ts';
import {
  answeredResponse,
  applyRequestChanges,
  applyUrlAndMethod,
  outgoingObject,
  readRequestBody,
  responseObject,
  sentRequest,
  sessionStateOf,
} from '../../plugins/coprocess/hooks.ts';
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
import { loadOttoHook, withParams, type OttoHook } from '../../plugins/otto.ts';
import { saveSessionMeta } from '../../plugins/session-meta.ts';

const HOOK_TYPES: Readonly<Record<PluginStage, HookType>> = {
  pre: 'Pre',
  post_key_auth: 'PostKeyAuth',
  post: 'Post',
  response: 'Response',
};

/** The step that sends the hooks of `stage` (not `response`) to the gRPC plugin server, in order. */
function grpcStage(api: GatewayApiDefinition, deps: MiddlewareDeps, stage: PluginStage) {
  const dispatcher = openPluginServer(deps.config.coprocess_grpc_server);
  const hooks = pluginHooksOf(api, stage);
  const timeoutMs = deps.config.plugin_timeout_ms;
  return waits(
    async (ctx) => {
      for (const h of hooks) {
        const hook = { label: `grpc:${h.name}` };
        try {
          const body = await readRequestBody(ctx);
          if (body === undefined) return reject(ctx, GatewayError.bodyTooLarge());
          const sent = sentRequest(ctx, body, h.raw_body_only === true);
          const answer = await dispatcher.dispatch(
            outgoingObject(ctx, api, HOOK_TYPES[stage], h.name, sent),
            timeoutMs,
          );
          const refused = applyRequestChanges(ctx, answer, sent);
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

/**
 * The `response` hooks of the gRPC plugin server: each gets the request and the upstream's
 * response, and what it answers (status, headers, body) is the next one's, then the client's
 * (`UpstreamPlan.responseHook`, after any hook set before: an internal API's own run first).
 */
function grpcResponseStage(api: GatewayApiDefinition, deps: MiddlewareDeps) {
  const dispatcher = openPluginServer(deps.config.coprocess_grpc_server);
  const hooks = pluginHooksOf(api, 'response');
  const timeoutMs = deps.config.plugin_timeout_ms;
  return before(
    (ctx) => {
      const outer = ctx.upstream.responseHook;
      ctx.upstream.responseHook = async (upstream) => {
        let res = upstream;
        for (const h of hooks) {
          try {
            const sentRes = responseObject(res, h.raw_body_only === true);
            const object = outgoingObject(
              ctx,
              api,
              'Response',
              h.name,
              sentRequest(ctx, ctx.upstream.body ?? Buffer.alloc(0), h.raw_body_only === true),
            );
            // As the reference: the session goes to response hooks whichever the hook type.
            const answer = await dispatcher.dispatch(
              {
                ...object,
                response: sentRes,
                ...(ctx.session === undefined ? {} : { session: sessionStateOf(ctx.session) }),
              },
              timeoutMs,
            );
            res = answeredResponse(res, sentRes, answer.response);
          } catch (err) {
            return pluginFailure(ctx, { label: `grpc:${h.name}` }, 'response', err);
          }
        }
        return outer === undefined ? res : outer(res);
      };
      return undefined;
    },
    {
      close: () => {
        dispatcher.close();
      },
    },
  );
}

/** The step that runs the otto (TykJS) hooks of `stage` (not `response`, refused at write), in order. */
async function ottoStage(api: GatewayApiDefinition, deps: MiddlewareDeps, stage: PluginStage) {
  const env = {
    pluginDir: deps.config.plugin_dir,
    jsvm: deps.config.enable_jsvm,
    timeoutMs: deps.config.plugin_timeout_ms,
  };
  const hooks: OttoHook[] = [];
  try {
    for (const [i, h] of pluginHooksOf(api, stage).entries()) {
      hooks.push(await loadOttoHook(h, stage, `custom_middleware.${stage}[${String(i)}]`, env));
    }
  } catch (err) {
    for (const h of hooks) h.close();
    throw err;
  }
  return waits(
    async (ctx) => {
      for (const hook of hooks) {
        try {
          // As the reference, each hook gets the request body as text (and may change it).
          const raw = await readRequestBody(ctx);
          if (raw === undefined) return reject(ctx, GatewayError.bodyTooLarge());
          const result = await hook.call(pluginRequest(ctx, api), {
            scheme: ctx.listener.protocol,
            timeoutMs: env.timeoutMs,
            body: raw.toString('utf8'),
          });
          for (const message of result.logs) ctx.log.info('plugin log', { plugin: hook.label, message });
          if (result.refuse !== undefined) {
            Object.assign(ctx.responseHeaders, result.refuse.headers);
            return reject(ctx, GatewayError.pluginRefused(result.refuse.status, result.refuse.message));
          }
          if (result.answer !== undefined) {
            const { status, body, headers } = result.answer;
            return respond(ctx, status, body, headers);
          }
          for (const name of result.removeHeaders) removeRequestHeader(ctx.headers, name);
          for (const [name, value] of result.setHeaders) ctx.headers[name] = value;
          if (result.body !== undefined) ctx.upstream.body = Buffer.from(result.body);
          if (result.url !== undefined) {
            applyUrlAndMethod(ctx, sentRequest(ctx, Buffer.alloc(0), false), result.url, '');
          }
          if (result.params !== undefined) ctx.query = withParams(ctx.query, result.params);
          if (result.meta !== undefined) await saveSessionMeta(deps, ctx, result.meta);
        } catch (err) {
          return reject(ctx, pluginFailure(ctx, hook, stage, err));
        }
      }
      return undefined;
    },
    {
      close: () => {
        for (const h of hooks) h.close();
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
    // A gRPC plugin server is sent the request body, and its response hooks the whole response;
    // otto middleware gets the body too: node:http only.
    readsBody: (api) =>
      pluginDriverOf(api) === GRPC_PLUGIN_DRIVER || pluginDriverOf(api) === OTTO_PLUGIN_DRIVER,
    create: async (api, deps) => {
      if (pluginDriverOf(api) === GRPC_PLUGIN_DRIVER) {
        return stage === 'response' ? grpcResponseStage(api, deps) : grpcStage(api, deps, stage);
      }
      if (pluginDriverOf(api) === OTTO_PLUGIN_DRIVER) return ottoStage(api, deps, stage);
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
