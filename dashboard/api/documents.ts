/**
 * The caller's organisation's documents as the handlers read and write them: a page of a kind,
 * a change or deletion of an existing document, the audited write, and new IDs.
 */
import type { AuditEntry, Doc, Kind, StoreTx } from '../store/store.ts';
import { callerOf, hashOf, ok, pageOf, type Ctx, type Reply } from './http.ts';

/** A page of the caller's organisation's documents of `kind` (pageOf), and the number of pages. */
export async function pageOfKind(c: Ctx, kind: Kind): Promise<{ items: Doc[]; pages: number }> {
  const org = callerOf(c).org;
  const page = pageOf(c);
  const { items, total } = await c.deps.store.list(org, kind, page.slice);
  return { items, pages: page.pages(total) };
}

/**
 * The page (pageOf) of `all`, a list filtered before it is paged (so that pages count only what
 * is listed), and the number of pages.
 */
export function pageIn<T>(c: Ctx, all: readonly T[]): { items: T[]; pages: number } {
  const page = pageOf(c);
  const from = page.slice.offset ?? 0;
  const items = all.slice(from, page.slice.limit === undefined ? undefined : from + page.slice.limit);
  return { items, pages: page.pages(all.length) };
}

/**
 * Runs `change` on the document `id` of `kind` of the caller's organisation, in one write of that
 * organisation; `missing()` when there is no such document.
 */
export async function changeExisting(
  c: Ctx,
  kind: Kind,
  id: string,
  missing: () => Reply,
  change: (tx: StoreTx, org: string, before: Doc) => Promise<Reply>,
): Promise<Reply> {
  const org = callerOf(c).org;
  return c.deps.store.write(org, async (tx) => {
    const before = await tx.get(org, kind, id);
    if (before === undefined) return missing();
    return change(tx, org, before);
  });
}

/** Deletes the document of `kind` the path names, audited: `ok(done)`, or `missing()`. */
export async function deleteExisting(c: Ctx, kind: Kind, missing: () => Reply, done: string): Promise<Reply> {
  const id = c.params[0] ?? '';
  return changeExisting(c, kind, id, missing, async (tx, org, before) => {
    await auditedPut(c, tx, org, kind, id, before, undefined);
    return ok(done);
  });
}

/** A new ID: 32 lower-case hex characters. */
export function newId(): string {
  return crypto.randomUUID().replaceAll('-', '');
}

/** Who the audit log names for this call. */
export function actorOf(c: Ctx): string {
  return c.caller === undefined ? 'admin' : `user:${c.caller.userId}`;
}

/**
 * One audited write, as {@link putAudited} and {@link auditedPut} take it: in `org`, the document
 * `id` of `kind` goes from `before` to `after` (undefined: an existing `before` is deleted), stored
 * with `lookup` when given.
 */
type AuditedWrite = [
  org: string,
  kind: Kind,
  id: string,
  before: Doc | undefined,
  after: Record<string, unknown> | undefined,
  lookup?: string,
];

/**
 * Makes one write (AuditedWrite) and its audit entry in the transaction `tx`, at `at`, by `actor`
 * (the dashboard's API and the portal's).
 */
export async function putAudited(
  tx: StoreTx,
  at: number,
  actor: string,
  ...[org, kind, id, before, after, lookup]: AuditedWrite
): Promise<void> {
  if (after === undefined) {
    if (before !== undefined) await tx.delete(org, kind, id);
  } else await tx.put(org, kind, id, after, lookup);
  await tx.audit({
    org_id: org,
    at,
    actor,
    action: auditAction(before, after),
    kind,
    object_id: id,
    before_hash: hashOf(before?.body),
    after_hash: hashOf(after),
  });
}

const auditAction = (before: Doc | undefined, after: unknown): AuditEntry['action'] =>
  after === undefined ? 'delete' : before === undefined ? 'create' : 'update';

/** {@link putAudited} by the caller of `c`, now, logged. */
export async function auditedPut(c: Ctx, tx: StoreTx, ...write: AuditedWrite): Promise<void> {
  await putAudited(tx, c.deps.now(), actorOf(c), ...write);
  const [org, kind, id, before, after] = write;
  c.log.info('object written', { kind, object_id: id, action: auditAction(before, after), org_id: org });
}
