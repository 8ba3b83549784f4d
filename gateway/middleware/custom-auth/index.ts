/**
 * Custom authentication (`custom_middleware.auth_check`, identity provider `custom_auth`): a
 * plugin function (gateway/plugins/types.ts `AuthCheck`) sees the request and answers with a
 * session under an ID it chooses, or a refusal. The session is checked against the key model,
 * its `apply_policies` are applied as for a stored key, and it belongs to the API's organisation
 * unless it names one; its ID is a hash of the organisation and the plugin's ID, so the limits
 * and quota of one client count together across requests, apart from every stored key. With
 * driver `grpc` the gateway's gRPC plugin server answers instead (a `CustomKeyCheck` hook, the
 * reference's coprocess protocol: gateway/plugins/coprocess/): its `session` under the key in
 * `metadata.token`, or a refusal in `return_overrides`; an answer without either is refused 403.
 * With an identity extractor (`custom_middleware.id_extractor`), the identity is read first (none:
 * 400 `Authorization field missing`), the session is that identity's, and it is kept until the
 * `id_extractor_deadline` the server set in it: meanwhile the same identity gets it without the
 * server being asked (gateway/plugins/coprocess/id-extractor.ts).
 */
import { createHash } from 'node:crypto';
import type {
  GatewayApiDefinition,
  GatewayPolicy,
  GatewaySession,
} from '../../../schemas/generated/models.ts';
import { sessionModel } from '../../../schemas/models/session.ts';
import { authMethodsOf } from '../../../schemas/rules/auth.ts';
import {
  customAuthHook,
  GRPC_PLUGIN_DRIVER,
  pluginDriverOf,
  type EnabledHook,
} from '../../../schemas/rules/plugins.ts';
import { compile } from '../../../schemas/validate.ts';
import { reject } from '../../pipeline/compose.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import { around } from '../../pipeline/steps.ts';
import type { CompiledMiddleware, Rejection } from '../../pipeline/middleware.ts';
import type { GatewayMiddleware, MiddlewareDeps } from '../deps.ts';
import { openPluginServer } from '../../plugins/coprocess/dispatcher.ts';
import { extractIdentity, IdentitySessions } from '../../plugins/coprocess/id-extractor.ts';
import { idExtractorOf } from '../../../schemas/rules/id-extractor.ts';
import {
  applyRequestEdits,
  gatewaySessionOf,
  outgoingObject,
  overrideAnswer,
  readRequestBody,
  sentRequest,
} from '../../plugins/coprocess/hooks.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import {
  callHook,
  loadHook,
  pluginFailure,
  pluginRefusalOf,
  pluginRequest,
  resultObject,
} from '../../plugins/load.ts';
import { applyPolicies } from '../../sessions/apply-policies.ts';
import { adoptIdentity } from '../../sessions/identity.ts';
import { refusalOf } from '../../sessions/refusal.ts';

const sessionCheck = compile(sessionModel);

/** The stored ID of the session a plugin names `keyId` in organisation `orgId`. */
export function customSessionId(orgId: string, keyId: string): string {
  return createHash('sha256').update(`custom\0${orgId}\0${keyId}`).digest('hex');
}

/**
 * Makes the session a plugin answered (`keyId`, `session`) the request's session, as a stored key
 * would be: its organisation, policies, state and access to the API checked; a refusal otherwise.
 */
async function adoptPluginSession(
  ctx: RequestContext,
  api: GatewayApiDefinition,
  deps: MiddlewareDeps,
  keyId: string,
  session: GatewaySession,
): Promise<Rejection | undefined> {
  const orgId = api.org_id ?? '';
  const stored: GatewaySession = { ...session, org_id: session.org_id ?? orgId };
  const policies = new Map<string, GatewayPolicy | undefined>();
  for (const pid of stored.apply_policies ?? []) policies.set(pid, await deps.sessions.policy(pid));
  const key = {
    id: customSessionId(orgId, keyId),
    stored,
    applied: applyPolicies(stored, (pid) => policies.get(pid)),
  };
  const refused = refusalOf(key, orgId);
  if (refused !== undefined) return reject(ctx, refused);
  if (!key.applied.ok) return reject(ctx, GatewayError.accessDisallowed());
  adoptIdentity(ctx, api, 'custom_auth', key.id, key.applied.session);
  return undefined;
}

/** The ID (before `customSessionId`) of the session of an identity an `id_extractor` read. */
function identityKeyId(identity: string): string {
  return `\0id_extractor\0${IdentitySessions.hashOf(identity)}`;
}

/** The authentication step of an API whose auth_check is a hook of the gRPC plugin server. */
function grpcAuth(api: GatewayApiDefinition, deps: MiddlewareDeps, found: EnabledHook): CompiledMiddleware {
  const dispatcher = openPluginServer(deps.config.coprocess_grpc_server);
  const timeoutMs = deps.config.plugin_timeout_ms;
  const name = found.name;
  const hook = { label: `grpc:${name}` };
  const extractor = idExtractorOf(api);
  const kept = extractor === undefined ? undefined : new IdentitySessions();
  /** Asks the server; its session (under `keyId`) and refusal, or throws when its answer is bad. */
  const ask = async (
    ctx: RequestContext,
    body: Buffer,
  ): Promise<{
    refused?: Rejection;
    answer?: { keyId: string; session: GatewaySession; deadline: number };
  }> => {
    const sent = sentRequest(ctx, body, found.raw_body_only === true);
    const got = await dispatcher.dispatch(outgoingObject(ctx, api, 'CustomKeyCheck', name, sent), timeoutMs);
    const refused = overrideAnswer(ctx, got.request?.return_overrides ?? null);
    if (refused !== undefined) return { refused };
    // As the reference: the hook's changes to the request apply whatever its verdict.
    if (got.request !== null) applyRequestEdits(ctx, got.request, sent);
    const token = got.metadata.token ?? '';
    if (got.session === null || token === '') return {};
    const session = gatewaySessionOf(got.session);
    const problems = sessionCheck(session);
    if (problems.length > 0) {
      throw new Error(`auth_check session: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
    }
    return { answer: { keyId: token, session, deadline: got.session.id_extractor_deadline } };
  };
  return around(
    async (ctx, next) => {
      let refused: Rejection | undefined;
      let answer: { keyId: string; session: GatewaySession } | undefined;
      try {
        const body = await readRequestBody(ctx);
        if (body === undefined) return reject(ctx, GatewayError.bodyTooLarge());
        if (extractor === undefined || kept === undefined) {
          ({ refused, answer } = await ask(ctx, body));
        } else {
          const identity = await extractIdentity(extractor, {
            headers: ctx.headers,
            query: ctx.query,
            body: () => Promise.resolve(body),
          });
          if (identity === undefined) {
            ctx.emit('AuthFailure', 'Custom authentication refused the request.');
            return reject(ctx, GatewayError.pluginRefused(400, 'Authorization field missing'));
          }
          // The session kept for the identity, else the server's, kept until its deadline.
          answer = kept.get(identity);
          if (answer === undefined) {
            const asked = await ask(ctx, body);
            refused = asked.refused;
            if (asked.answer !== undefined) {
              // The session is the identity's (as the reference's), whatever token it names.
              answer = { keyId: identityKeyId(identity), session: asked.answer.session };
              kept.set(identity, answer.keyId, answer.session, asked.answer.deadline);
            }
          }
        }
      } catch (err) {
        return reject(ctx, pluginFailure(ctx, hook, 'auth_check', err));
      }
      if (answer === undefined) {
        ctx.emit('AuthFailure', 'Custom authentication refused the request.');
        return refused ?? reject(ctx, GatewayError.pluginRefused(403, 'Key not authorised'));
      }
      const rejected = await adoptPluginSession(ctx, api, deps, answer.keyId, answer.session);
      if (rejected !== undefined) return rejected;
      await next();
      return undefined;
    },
    {
      close: () => {
        dispatcher.close();
      },
    },
  );
}

/** See the module comment. */
export const customAuth: GatewayMiddleware = {
  name: 'custom-auth',
  enabled: (api: GatewayApiDefinition) => authMethodsOf(api).includes('custom_auth'),
  // The plugin file is read at compile time: recompiled at every reload.
  readsOutside: true,
  // A gRPC plugin server is sent the request body: node:http only.
  readsBody: (api) => pluginDriverOf(api) === GRPC_PLUGIN_DRIVER,
  create: async (api, deps) => {
    const found = customAuthHook(api);
    if (found === undefined) throw new Error('custom_middleware.auth_check: no hook');
    if (pluginDriverOf(api) === GRPC_PLUGIN_DRIVER) return grpcAuth(api, deps, found);
    const hook = await loadHook(found, deps.config.plugin_dir, 'custom_middleware.auth_check');
    const timeoutMs = deps.config.plugin_timeout_ms;

    /** The plugin's answer as a refusal, or the session ID and session; throws when malformed. */
    const answerOf = (value: unknown): GatewayError | { keyId: string; session: GatewaySession } => {
      const result = resultObject(value);
      if (result?.refuse !== undefined) {
        const r = pluginRefusalOf(result.refuse);
        return GatewayError.pluginRefused(r.status, r.message);
      }
      const keyId = result?.keyId;
      if (typeof keyId !== 'string' || keyId === '')
        throw new Error('auth_check returns {keyId, session} or {refuse}');
      const problems = sessionCheck(result?.session);
      if (problems.length > 0) {
        throw new Error(`auth_check session: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
      }
      return { keyId, session: result?.session as GatewaySession };
    };

    return around(
      async (ctx, next) => {
        let answer: ReturnType<typeof answerOf>;
        try {
          answer = answerOf(await callHook(hook, pluginRequest(ctx, api), timeoutMs));
        } catch (err) {
          return reject(ctx, pluginFailure(ctx, hook, 'auth_check', err));
        }
        if (answer instanceof GatewayError) {
          ctx.emit('AuthFailure', 'Custom authentication refused the request.');
          return reject(ctx, answer);
        }
        const rejected = await adoptPluginSession(ctx, api, deps, answer.keyId, answer.session);
        if (rejected !== undefined) return rejected;
        await next();
        return undefined;
      },
      {
        close: () => {
          hook.close?.();
        },
      },
    );
  },
};
