/**
 * The portal's writes: every document written with its audit entry (the actor a dashboard user,
 * the admin secret or a developer), and the one way a developer's key is made: from its
 * product's policy (or API), stored as the dashboard's keys are (under the SHA-256 of the value,
 * checked against the session model), so the gateways load and enforce it like any other key.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { GatewaySession } from '../../schemas/generated/models.ts';
import { sessionModel } from '../../schemas/models/session.ts';
import { checkSession } from '../../schemas/rules/access.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { compile } from '../../schemas/validate.ts';
import { putAudited } from '../api/documents.ts';
import { Refusal } from '../api/http.ts';
import { keyHash } from '../api/keys.ts';
import type { Doc, StoreReader, StoreTx } from '../store/store.ts';
import type { Product } from './model.ts';

/** SHA-256 hex of a secret (a session token, a feed secret, an e-mail's lookup). */
export function sha256(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

/** Constant-time equality of two secrets (their digests are compared, so lengths leak nothing). */
export function sameSecret(a: string, b: string): boolean {
  const x = createHash('sha256').update(a, 'utf8').digest();
  const y = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(x, y);
}

/** 32 random bytes, hex: session tokens, feed and subscription secrets. */
export function newSecret(): string {
  return randomBytes(32).toString('hex');
}

/** The lookup of a developer's e-mail: unique per organisation. */
export function emailLookup(org: string, email: string): string {
  return sha256(`${org}\n${email.trim().toLowerCase()}`);
}

const sessionCheck = compile(sessionModel);

/**
 * Makes the key of request `requestId` for `developer` on `product`: a new value (answered once,
 * never stored) and the session stored under its hash. Refused (409) when the product's policy
 * or API has gone.
 */
export async function issueKey(
  tx: StoreTx,
  at: number,
  org: string,
  product: { id: string; body: Product },
  developer: Doc,
  requestId: string,
): Promise<{ key: string; keyId: string }> {
  const p = product.body;
  const session: Record<string, unknown> = {
    org_id: org,
    alias: typeof developer.body.email === 'string' ? developer.body.email : developer.id,
    meta_data: {
      portal_developer_id: developer.id,
      portal_product_id: product.id,
      portal_request_id: requestId,
    },
  };
  if (p.policy_id !== undefined) {
    if ((await tx.get(org, 'policies', p.policy_id)) === undefined) {
      throw new Refusal(409, `The product's policy ${JSON.stringify(p.policy_id)} no longer exists`);
    }
    session.apply_policies = [p.policy_id];
  } else if (p.api_id !== undefined) {
    const api = await tx.get(org, 'apis', p.api_id);
    if (api === undefined)
      throw new Refusal(409, `The product's API ${JSON.stringify(p.api_id)} no longer exists`);
    session.access_rights = { [p.api_id]: { api_id: p.api_id, versions: ['Default'] } };
  } else {
    throw new Refusal(409, 'The product grants no policy or API: it issues no keys');
  }
  const problems = [
    ...sessionCheck(session).map((x) => `${x.path}: ${x.message}`),
    ...checkSession(session as unknown as GatewaySession).map(formatProblem),
  ];
  if (problems.length > 0) throw new Error(`portal key invalid: ${problems.join('; ')}`);
  const key = `${org}${randomBytes(16).toString('hex')}`;
  const keyId = keyHash(key);
  await putAudited(tx, at, `developer:${developer.id}`, org, 'keys', keyId, undefined, session);
  return { key, keyId };
}

/** Deletes a portal key (the gateways are told by the store's notifications). */
export async function revokeKey(
  tx: StoreTx,
  at: number,
  actor: string,
  org: string,
  keyId: string,
): Promise<void> {
  const before = await tx.get(org, 'keys', keyId);
  if (before !== undefined) await putAudited(tx, at, actor, org, 'keys', keyId, before, undefined);
  const reset = await tx.get(org, 'quota-resets', keyId);
  if (reset !== undefined) await tx.delete(org, 'quota-resets', keyId);
}

/**
 * Key requests as they are: an `issued` request whose key the dashboard no longer holds (deleted
 * through the dashboard's keys API or UI, not through the portal) is answered `revoked`, so
 * neither the developer nor the admin is shown a key that no gateway accepts.
 */
export async function withKeyTruth(store: StoreReader, org: string, requests: Doc[]): Promise<Doc[]> {
  const out: Doc[] = [];
  for (const d of requests) {
    const keyId = d.body.key_id;
    const gone =
      d.body.status === 'issued' &&
      typeof keyId === 'string' &&
      (await store.get(org, 'keys', keyId)) === undefined;
    out.push(gone ? { ...d, body: { ...d.body, status: 'revoked' } } : d);
  }
  return out;
}
