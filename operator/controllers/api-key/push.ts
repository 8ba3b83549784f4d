/**
 * The gateway's writes of one key: a basic-auth user, or a token (or certificate key) with its
 * rotation (the previous value kept for `spec.rotation.overlapSeconds`, one at most), and the
 * removal of every key a status records. The certificate a key lets go is deleted unless
 * something else uses it.
 */
import { isDeepStrictEqual } from 'node:util';
import type { ApiKeyStatus } from '../../../schemas/generated/kinds.ts';
import type { GatewaySession } from '../../../schemas/generated/models.ts';
import type { Logger } from '../../../lib/log.ts';
import type { KeyOps, ManagementClient } from '../../clients/management.ts';
import { hashOf } from '../../ids.ts';
import type { BoundCertificate } from './inputs.ts';
import { keyHashOf, stamp, type KeyObject } from './types.ts';

/** What one push did to the key in the gateway. */
export type PushAction = 'Created' | 'Updated' | undefined;

/** What one push did, and when the key wants reconciling again (a rotation's overlap ending). */
export interface Pushed {
  action: PushAction;
  requeueAfterMs?: number;
}

/** What the gateway's writes of one key read; `status` is written as they go. */
export interface Push {
  client: ManagementClient;
  keys: KeyOps;
  spec: KeyObject['spec'];
  /** The status before this reconcile. */
  old: ApiKeyStatus;
  status: ApiKeyStatus;
  /** The key as the gateway should hold it. */
  desired: GatewaySession;
  raw: string;
  version: string;
  bound: BoundCertificate | undefined;
  org: string;
  /** Whether the key's counters (quota, rate) carry on from its previous value. */
  keepCounters: boolean;
  /** Whether a certificate is used by anything but this key. */
  inUse: (certificateId: string) => boolean;
  now: Date;
  log: Logger;
}

/**
 * Whether the gateway's copy differs from what the operator wrote in a field it owns. An empty
 * `org_id` is the peer's to fill (a dashboard files the key under its caller's organisation).
 */
function drifted(held: GatewaySession, desired: GatewaySession): boolean {
  const h = held as Record<string, unknown>;
  return Object.entries(desired).some(([k, v]) => {
    if (k === 'org_id' && v === '') return false;
    const got = h[k] ?? (Array.isArray(v) ? [] : typeof v === 'object' ? {} : typeof v === 'string' ? '' : 0);
    return !isDeepStrictEqual(got, v);
  });
}

/** A basic-auth user: named by the hash of its user name; its password re-sent when the Secret changes. */
export async function pushBasic(p: Push): Promise<Pushed> {
  const { keys, old, status, desired } = p;
  const username = p.spec.username ?? '';
  const id = keyHashOf(username);
  const desiredHash = hashOf({ desired, username, secret: p.version });
  const withPassword = { ...desired, basic_auth_data: { password: p.raw } };
  const copy = await keys.get(id);
  let action: PushAction;
  if (!copy) {
    await keys.create(username, withPassword, { keepCounters: p.keepCounters });
    action = 'Created';
  } else if (desiredHash !== old.latestCRDSpecHash || drifted(copy, desired)) {
    await keys.update(id, withPassword);
    action = 'Updated';
  }
  if (old.username !== undefined && old.username !== username) await keys.delete(keyHashOf(old.username));
  if (old.keyHash !== undefined) await keys.delete(old.keyHash);
  if (old.rotatedFrom?.keyHash !== undefined) await keys.delete(old.rotatedFrom.keyHash);
  if (old.certificateId !== undefined && !p.inUse(old.certificateId)) {
    await p.client.deleteCert(old.certificateId);
  }
  delete status.certificateId;
  status.username = username;
  status.latestCRDSpecHash = desiredHash;
  delete status.keyHash;
  delete status.rotatedFrom;
  return { action };
}

/**
 * A token or certificate key: named by the hash of its value. A value changed is a rotation: the
 * new value is created, the old one deleted at once or after the overlap (then `requeueAfterMs`
 * is when it ends).
 */
export async function pushToken(p: Push): Promise<Pushed> {
  const { keys, old, status, desired, bound, now } = p;
  const keyHash = keyHashOf(p.raw);
  const desiredHash = hashOf(desired);
  const copy = await keys.get(keyHash);
  let action: PushAction;
  let requeueAfterMs: number | undefined;
  if (!copy) {
    // A bound key is created from its certificate, which the gateway must hold first.
    if (bound) await p.client.addCert(bound.pem, p.org);
    await keys.create(p.raw, desired, { keepCounters: p.keepCounters });
    action = 'Created';
  } else if (desiredHash !== old.latestCRDSpecHash || drifted(copy, desired)) {
    await keys.update(keyHash, desired);
    action = 'Updated';
  }
  if (old.username !== undefined) await keys.delete(keyHashOf(old.username));
  // One previous value at most: a rotation during an overlap ends the older one at once.
  let previous = old.rotatedFrom;
  if (old.keyHash !== undefined && old.keyHash !== keyHash) {
    if (previous?.keyHash !== undefined && previous.keyHash !== keyHash) await keys.delete(previous.keyHash);
    const overlap = p.spec.rotation?.overlapSeconds ?? 0;
    status.lastRotatedAt = stamp(now);
    if (overlap > 0) {
      previous = { keyHash: old.keyHash, until: stamp(new Date(now.getTime() + overlap * 1000)) };
      // The old value keeps working as the key is now: same policies, expiry, metadata.
      await keys.update(old.keyHash, desired);
    } else {
      await keys.delete(old.keyHash);
      previous = undefined;
    }
    p.log.info('key rotated', { keyHash, previous: old.keyHash, overlapSeconds: overlap });
  }
  if (previous?.keyHash !== undefined && previous.until !== undefined) {
    const left = Date.parse(previous.until) - now.getTime();
    if (left <= 0 || previous.keyHash === keyHash) {
      if (previous.keyHash !== keyHash) await keys.delete(previous.keyHash);
      previous = undefined;
    } else {
      requeueAfterMs = left;
    }
  }
  if (previous) status.rotatedFrom = previous;
  else delete status.rotatedFrom;
  // A certificate no longer bound goes (once its key is gone), unless something else uses it.
  if (old.certificateId !== undefined && old.certificateId !== bound?.id) {
    if (!p.inUse(old.certificateId)) await p.client.deleteCert(old.certificateId);
  }
  if (bound) status.certificateId = bound.id;
  else delete status.certificateId;
  status.keyHash = keyHash;
  status.latestCRDSpecHash = desiredHash;
  delete status.username;
  return requeueAfterMs === undefined ? { action } : { action, requeueAfterMs };
}

/**
 * Deletes every key the status records from a gateway, then the certificate a key was bound to
 * unless `inUse`; false when there was no key.
 */
export async function removeFrom(
  client: ManagementClient,
  status: ApiKeyStatus,
  inUse: (certificateId: string) => boolean,
): Promise<boolean> {
  const keys: KeyOps | undefined = client.keys;
  if (!keys) return false;
  const ids = [
    status.keyHash,
    status.rotatedFrom?.keyHash,
    status.username === undefined ? undefined : keyHashOf(status.username),
  ].filter((id): id is string => id !== undefined);
  let removed = false;
  for (const id of ids) removed = (await keys.delete(id)) || removed;
  if (status.certificateId !== undefined && !inUse(status.certificateId))
    await client.deleteCert(status.certificateId);
  return removed;
}
