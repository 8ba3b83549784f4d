/**
 * Saving the session's `meta_data` a JavaScript function changed, as the reference does: an otto
 * hook with `require_session` after authentication (`ReturnData(request, meta)`) and a virtual
 * endpoint with `use_session` (`TykJsResponse(response, meta)`). The key the request
 * authenticated with is written back to the store with the new `meta_data` (nothing else of it
 * changes), every gateway process forgets what it cached of it, and the rest of the request sees
 * the new value. A session no stored key backs (a JWT identity, a custom authentication's) has
 * nowhere to be saved: that is a failure naming it, never a change silently dropped.
 */
import { isPlainObject } from '../../lib/plain-object.ts';
import type { GatewaySession } from '../../schemas/generated/models.ts';
import type { RequestContext } from '../pipeline/context.ts';
import type { Collection, Store } from '../store/store.ts';

/** What saving needs of the gateway. */
export interface SessionMetaDeps {
  store: Store;
  /** Every gateway process forgets what it cached of the key (absent: this process only). */
  changed?: ((collection: Collection, id: string) => Promise<void>) | undefined;
  /** This process's session cache, told when `changed` is absent. */
  sessions: { forget(collection: Collection, id: string): void };
}

/** The session's `meta_data` as the function was given it (`{}` when it has none). */
export function sentMeta(session: GatewaySession | undefined): Record<string, unknown> {
  return session?.meta_data ?? {};
}

/**
 * The `meta_data` a function returned, when it differs from `sent`; undefined when unchanged.
 * Throws when it is no object (the reference's sessions hold an object).
 */
export function changedMeta(
  returned: unknown,
  sent: Record<string, unknown>,
): Record<string, unknown> | undefined {
  const meta = returned ?? {};
  if (!isPlainObject(meta)) throw new Error("the session's meta_data returned must be an object");
  return JSON.stringify(meta) === JSON.stringify(sent) ? undefined : meta;
}

/** Saves `meta` as the `meta_data` of the request's key; throws when it can't be saved. */
export async function saveSessionMeta(
  deps: SessionMetaDeps,
  ctx: RequestContext,
  meta: Record<string, unknown>,
): Promise<void> {
  const id = ctx.state.keyId;
  const stored =
    id === undefined ? undefined : ((await deps.store.get('keys', id)) as GatewaySession | undefined);
  if (id === undefined || stored === undefined) {
    throw new Error(
      "changing the session's meta_data: the request's identity is not a stored key (a JWT or custom identity), so it can't be saved",
    );
  }
  if ((await deps.store.put('keys', id, { ...stored, meta_data: meta }, 'update')) === 'missing') {
    throw new Error("changing the session's meta_data: the key was deleted meanwhile");
  }
  if (deps.changed !== undefined) await deps.changed('keys', id);
  else {
    deps.store.forget('keys', id);
    deps.sessions.forget('keys', id);
  }
  if (ctx.session !== undefined) ctx.session = { ...ctx.session, meta_data: meta };
}
