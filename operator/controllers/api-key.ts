/**
 * The ApiKey controller: one key (or basic-auth user) of the gateway (mode ce, `/svc/keys`) or
 * the dashboard (mode pro, `/api/keys`) per object, its value in a Secret. The gateway and the
 * dashboard store only the hash; the operator writes the clear value nowhere but the
 * Secret (and the gateway's management API, which hashes it), and never logs it.
 *
 * One job per file in api-key/: types.ts (the objects as read, the reconciler's deps, key
 * names), inputs.ts (the policies, APIs and value a key is made of), push.ts (the gateway's
 * writes: basic users, tokens and their rotation, removal), reconcile.ts (one key, its
 * finalizer), controller.ts (informers, the Secret writer, watches). This module is what others
 * import.
 */
export { KEY_FINALIZER } from '../../schemas/finalizers.ts';
export * from './api-key/types.ts';
export { reconcileApiKey } from './api-key/reconcile.ts';
export { apiKeyController } from './api-key/controller.ts';
