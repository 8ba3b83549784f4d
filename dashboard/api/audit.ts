/** `/api/audit`: the organisation's audit log, oldest first; for its admins. */
import { callerOf, json, pageOf, type Ctx, type Reply } from './http.ts';

/** GET /api/audit: `{"entries": [{seq, at, actor, action, kind, object_id, before_hash, after_hash}], "pages": n}` */
export async function listAudit(c: Ctx): Promise<Reply> {
  const page = pageOf(c);
  const { items, total } = await c.deps.store.listAudit(callerOf(c).org, page.slice);
  return json({
    entries: items.map((e) => ({ ...e, at: new Date(e.at).toISOString() })),
    pages: page.pages(total),
  });
}
