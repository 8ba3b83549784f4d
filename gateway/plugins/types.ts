/**
 * The interface of plugins, for their authors: a plugin is a function exported by a JavaScript
 * or TypeScript module under the gateway's `plugin_dir`, named in an API's `custom_middleware`
 * (driver `svc`). Each hook gets a frozen view of the request and returns what it wants done; it
 * may be async. A hook that throws, returns something else than these shapes, or takes longer
 * than `plugin_timeout_ms` (default 1 s) gets the request a 500 with an error ID, logged with
 * the plugin's name; the gateway goes on serving. Each hook runs in a worker thread of its own
 * (runner.ts): one that loops is stopped at its time limit and stalls no other request; it gets
 * its request as a copy (structured clone) and what it returns is copied back, so return plain
 * data. Plugins are still trusted code: a worker has the gateway's file system and network.
 *
 * ```ts
 * import type { AuthCheck, RequestHook } from '<svc>/gateway/plugins/types.ts';
 * export const checkPartnerKey: AuthCheck = (req) =>
 *   req.headers['x-partner-key'] === 'let-me-in'
 *     ? { keyId: 'partner-1', session: { apply_policies: ['partners'] } }
 *     : { refuse: { status: 401, message: 'Partner key required' } };
 * export const addTenant: RequestHook = () => ({ setHeaders: { 'x-tenant': 'acme' } });
 * ```
 */
import type { GatewaySession } from '../../schemas/generated/models.ts';

/** What a hook sees of the request. Every object is frozen. */
export interface PluginRequest {
  /** The request method, upper case. */
  readonly method: string;
  /** The request path (with the listen path), dot segments removed, without the query. */
  readonly path: string;
  /** The query without `?` (empty when none). */
  readonly rawQuery: string;
  /** The query parameters, the first value of each. */
  readonly query: Readonly<Record<string, string>>;
  /** The request headers as they stand, lower-case names; repeated ones joined with `, `. */
  readonly headers: Readonly<Record<string, string>>;
  /** The client address (forwarded headers only when the gateway trusts them). */
  readonly clientIp: string;
  /** The API's ID. */
  readonly apiId: string;
  /** The API's `config_data`. */
  readonly config: Readonly<Record<string, unknown>>;
  /** After authentication (`post_key_auth`, `post`, `response`): the stored ID of the session's key. */
  readonly keyId?: string;
  /** After authentication: the session (policies applied). */
  readonly session?: Readonly<GatewaySession>;
}

/** A refusal: the client gets `status` (400 to 599) and `{"error": message}`. */
export interface PluginRefusal {
  status: number;
  message: string;
}

/** What a `pre`, `post_key_auth` or `post` hook may do; nothing (undefined) lets the request on. */
export interface RequestHookResult {
  /** Request headers to set (or replace) before the request goes on. */
  setHeaders?: Record<string, string>;
  /** Request headers to remove. */
  removeHeaders?: string[];
  /** Refuses the request instead. */
  refuse?: PluginRefusal;
}

/** A `pre`, `post_key_auth` or `post` hook. */
export type RequestHook = (
  req: PluginRequest,
) => RequestHookResult | undefined | Promise<RequestHookResult | undefined>;

/**
 * What an `auth_check` hook answers: the request's session, under an ID the plugin chooses (the
 * same ID for the same client, so its rate limits and quota count together; the gateway stores
 * it hashed), or a refusal. A session's `apply_policies` are applied as for a stored key, and
 * access rights, limits and quotas are checked after it as for any key.
 */
export type AuthCheckResult = { keyId: string; session: GatewaySession } | { refuse: PluginRefusal };

/** An `auth_check` hook (custom authentication, `base_identity_provided_by: custom_auth`). */
export type AuthCheck = (req: PluginRequest) => AuthCheckResult | Promise<AuthCheckResult>;

/** What a `response` hook may do. */
export interface ResponseHookResult {
  /** Headers to add to the client's response. */
  setHeaders?: Record<string, string>;
}

/**
 * A `response` hook. It runs last before the upstream call (it does not see the upstream's
 * answer); its headers are added to whatever the client gets.
 */
export type ResponseHook = (
  req: PluginRequest,
) => ResponseHookResult | undefined | Promise<ResponseHookResult | undefined>;
