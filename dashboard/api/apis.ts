/**
 * `/api/apis[/{id}]` (classic, body `{"api_definition": {...}}`), `/api/apis/oas[/{id}]` (an OAS
 * document with `x-svc-api-gateway`) and `/api/apis/streams[/{id}]` (an OAS document with
 * `x-svc-streaming`, `Content-Type: application/vnd.svc.streams.oas`, only with
 * `streaming_enabled`). One ID names one API of any kind in an organisation. A definition is
 * checked by the rules the gateway applies (schemas/), so what a gateway would refuse is refused
 * here with the same field-pathed message. Each record keeps its kind, its definition and its
 * owners (`user_owners`, `user_group_owners`).
 */
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { apiDefinitionModel } from '../../schemas/models/api-definition/index.ts';
import { oasApiDocument } from '../../schemas/models/oas.ts';
import { checkClassicApi } from '../../schemas/rules/api-definition.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { idProblem as idRuleProblem } from '../../schemas/rules/ids.ts';
import { OAS_EXTENSION, checkOasDocument, oasToClassic } from '../../schemas/oas/index.ts';
import { compile, type SchemaProblem } from '../../schemas/validate.ts';
import type { Doc, StoreTx } from '../store/store.ts';
import { auditedPut, changeExisting, newId, pageIn } from './documents.ts';
import { callerOf, fail, json, ok, readObject, Refusal, type Ctx, type Reply } from './http.ts';
import { asPlainObject, isPlainObject } from '../../lib/plain-object.ts';

/** The content type of a streams document. */
export const STREAMS_CONTENT_TYPE = 'application/vnd.svc.streams.oas';
/** The extension that makes an OAS document a streams API. */
export const STREAMING_EXTENSION = 'x-svc-streaming';

/** The kinds of API records. */
export type ApiKind = 'classic' | 'oas' | 'streams';

const classicSchema = compile(apiDefinitionModel);
const oasSchema = compile(oasApiDocument);
/** IDs that the paths /api/apis/oas, /api/apis/streams and /api/apis/keys would shadow. */
const RESERVED = new Set(['oas', 'streams', 'keys']);
const schemaLine = (p: SchemaProblem): string => `${p.path === '' ? '(root)' : p.path}: ${p.message}`;

const notFound = (): Reply => fail(404, 'API not found');
const invalid = (problems: string[]): Reply =>
  fail(400, `Validation of API Definition failed. Reason: ${problems.join('; ')}`);

/** The classic form of a record's definition (what the gateway serves). */
export function classicOf(d: Doc): GatewayApiDefinition {
  return d.body.kind === 'classic'
    ? (d.body.definition as GatewayApiDefinition)
    : oasToClassic(d.body.definition).api;
}

/** The path to use for a record of another kind. */
function otherKind(id: string, kind: unknown): Reply {
  const path = kind === 'oas' ? '/api/apis/oas/' : kind === 'streams' ? '/api/apis/streams/' : '/api/apis/';
  return fail(
    400,
    `API ${id} is ${kind === 'classic' ? 'a classic' : kind === 'oas' ? 'an OAS' : 'a streams'} API: use ${path}${id}`,
  );
}

/** The schema, then the model's rules: what any gateway refuses, at field paths. */
export function classicProblems(def: Record<string, unknown>): string[] {
  const schema = classicSchema(def).map(schemaLine);
  if (schema.length > 0) return schema;
  return checkClassicApi(def as unknown as GatewayApiDefinition).map(formatProblem);
}

/** The document's schema, then its classic form's rules, at document paths. */
export function oasProblems(doc: Record<string, unknown>): string[] {
  const schema = oasSchema(doc).map(schemaLine);
  if (schema.length > 0) return schema;
  return checkOasDocument(doc).problems.map(formatProblem);
}

function slugOf(api: GatewayApiDefinition): string {
  const s = api.slug ?? api.name;
  return s
    .toLowerCase()
    .trim()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/** Refuses a second API with the same slug in the organisation, unless enable_duplicate_slugs. */
async function checkSlug(
  c: Ctx,
  tx: StoreTx,
  org: string,
  id: string,
  api: GatewayApiDefinition,
): Promise<void> {
  if (c.deps.config.enable_duplicate_slugs) return;
  const slug = slugOf(api);
  if (slug === '') return;
  for (const d of (await tx.list(org, 'apis')).items) {
    if (d.id !== id && slugOf(classicOf(d)) === slug) {
      throw new Refusal(
        409,
        `slug: ${JSON.stringify(slug)} is used by API ${d.id}: choose another slug (or name), or set enable_duplicate_slugs in the dashboard configuration`,
      );
    }
  }
}

function owners(body: Record<string, unknown>): { user_owners: string[]; user_group_owners: string[] } {
  const list = (v: unknown, field: string): string[] => {
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      throw new Refusal(400, `${field}: must be a list of user IDs`);
    }
    return v as string[];
  };
  return {
    user_owners: list(body.user_owners, 'user_owners'),
    user_group_owners: list(body.user_group_owners, 'user_group_owners'),
  };
}

/**
 * The owners of an OAS or streams API, whose body is the document alone: query parameters
 * `user_owners` and `user_group_owners` (comma-separated IDs); undefined when neither is given.
 */
function queryOwners(c: Ctx): Record<string, unknown> | undefined {
  const split = (v: string | null): string[] | undefined =>
    v === null ? undefined : v.split(',').filter((x) => x !== '');
  const u = split(c.url.searchParams.get('user_owners'));
  const g = split(c.url.searchParams.get('user_group_owners'));
  if (u === undefined && g === undefined) return undefined;
  return { user_owners: u, user_group_owners: g };
}

function ownersOf(q: Record<string, unknown> | undefined): ReturnType<typeof owners> | undefined {
  return q === undefined ? undefined : owners(q);
}

function idProblem(id: unknown, field: string): string[] {
  const bad = idRuleProblem(field, id);
  if (bad !== undefined) return [formatProblem(bad)];
  if (typeof id !== 'string') return [];
  if (RESERVED.has(id))
    return [`${field}: ${JSON.stringify(id)} is reserved (a path under /api/apis): choose another ID`];
  return [];
}

/** Stores a new record, or refuses it; the write and its audit entry are one transaction. */
async function create(
  c: Ctx,
  kind: ApiKind,
  id: string,
  definition: Record<string, unknown>,
  own: ReturnType<typeof owners>,
): Promise<Reply> {
  const org = callerOf(c).org;
  const record = { kind, definition, ...own };
  return c.deps.store.write(org, async (tx) => {
    if ((await tx.get(org, 'apis', id)) !== undefined) return fail(409, 'API already exists');
    await checkSlug(c, tx, org, id, classicOf({ id, body: record, created: 0, updated: 0 }));
    await auditedPut(c, tx, org, 'apis', id, undefined, record);
    return ok('API created', id, { ID: id });
  });
}

/** Replaces a record of the same kind. */
async function update(
  c: Ctx,
  kind: ApiKind,
  id: string,
  definition: Record<string, unknown>,
  own?: ReturnType<typeof owners>,
): Promise<Reply> {
  return changeExisting(c, 'apis', id, notFound, async (tx, org, before) => {
    if (before.body.kind !== kind) return otherKind(id, before.body.kind);
    const record = {
      kind,
      definition,
      user_owners: own?.user_owners ?? before.body.user_owners ?? [],
      user_group_owners: own?.user_group_owners ?? before.body.user_group_owners ?? [],
    };
    await checkSlug(c, tx, org, id, classicOf({ id, body: record, created: 0, updated: 0 }));
    await auditedPut(c, tx, org, 'apis', id, before, record);
    return ok('API updated', id, { ID: id });
  });
}

/** Deletes a record of one of `kinds`. */
async function remove(c: Ctx, kinds: readonly ApiKind[]): Promise<Reply> {
  const id = c.params[0] ?? '';
  return changeExisting(c, 'apis', id, notFound, async (tx, org, before) => {
    if (!kinds.includes(before.body.kind as ApiKind)) return otherKind(id, before.body.kind);
    await auditedPut(c, tx, org, 'apis', id, before, undefined);
    // Its OAuth clients go with it (an API created again under the ID does not inherit them);
    // gateways in mode pro then delete the tokens they issued to them.
    for (const client of (await tx.list(org, 'oauth-clients')).items) {
      if (client.body.api_id === id)
        await auditedPut(c, tx, org, 'oauth-clients', client.id, client, undefined);
    }
    return ok('API deleted', id, { ID: id });
  });
}

/** A page of the organisation's records of `kinds`. */
async function listOf(c: Ctx, kinds: readonly ApiKind[]): Promise<{ items: Doc[]; pages: number }> {
  const org = callerOf(c).org;
  // Kinds share one collection: filter, then page.
  const all = (await c.deps.store.list(org, 'apis')).items.filter((d) =>
    kinds.includes(d.body.kind as ApiKind),
  );
  return pageIn(c, all);
}

async function readOf(c: Ctx, kinds: readonly ApiKind[]): Promise<Doc | Reply> {
  const d = await c.deps.store.get(callerOf(c).org, 'apis', c.params[0] ?? '');
  if (d === undefined) return notFound();
  return kinds.includes(d.body.kind as ApiKind) ? d : otherKind(d.id, d.body.kind);
}

function classicRecord(d: Doc): Record<string, unknown> {
  return {
    api_definition: { ...classicOf(d), ...(d.body.kind === 'oas' ? { is_oas: true } : {}) },
    user_owners: d.body.user_owners ?? [],
    user_group_owners: d.body.user_group_owners ?? [],
    created_at: new Date(d.created).toISOString(),
  };
}

// --- classic ---------------------------------------------------------------------------------

/** The definition of a `{"api_definition": {...}}` body, its org set to the caller's. */
function classicBody(c: Ctx, body: Record<string, unknown>): Record<string, unknown> {
  const def = body.api_definition;
  if (!isPlainObject(def)) {
    throw new Refusal(400, 'api_definition: Required value: send {"api_definition": {...}}');
  }
  const api = def;
  const org = callerOf(c).org;
  if (api.org_id !== undefined && api.org_id !== '' && api.org_id !== org) {
    throw new Refusal(
      400,
      `Validation of API Definition failed. Reason: org_id: must be your organisation's ID (${org})`,
    );
  }
  if (api.is_oas !== undefined) {
    throw new Refusal(
      400,
      'Validation of API Definition failed. Reason: is_oas: set on the classic form of OAS APIs: remove it, or write the API to /api/apis/oas',
    );
  }
  return { ...api, org_id: org };
}

/** GET /api/apis: classic and OAS APIs in classic form (`{"apis": [...], "pages": n}`). */
export async function listApis(c: Ctx): Promise<Reply> {
  const { items, pages } = await listOf(c, ['classic', 'oas']);
  return json({ apis: items.map(classicRecord), pages });
}

/** GET /api/apis/{id} */
export async function getApi(c: Ctx): Promise<Reply> {
  const d = await readOf(c, ['classic', 'oas']);
  return 'status' in d ? d : json(classicRecord(d));
}

/** POST /api/apis */
export async function createApi(c: Ctx): Promise<Reply> {
  const body = await readObject(c.req);
  const def = classicBody(c, body);
  if (def.api_id === undefined || def.api_id === '') def.api_id = newId();
  const idProblems = idProblem(def.api_id, 'api_id');
  const problems = idProblems.length > 0 ? idProblems : classicProblems(def);
  if (problems.length > 0) return invalid(problems);
  const id = String(def.api_id);
  return create(c, 'classic', id, def, owners(body));
}

/** PUT /api/apis/{id}: an `api_id` in the definition must be the path's. */
export async function updateApi(c: Ctx): Promise<Reply> {
  const id = c.params[0] ?? '';
  const body = await readObject(c.req);
  const def = classicBody(c, body);
  if (def.api_id !== undefined && def.api_id !== id) {
    return fail(
      400,
      'Request APIID does not match that in Definition! For Update operations these must match.',
    );
  }
  def.api_id = id;
  const problems = classicProblems(def);
  if (problems.length > 0) return invalid(problems);
  return update(
    c,
    'classic',
    id,
    def,
    body.user_owners === undefined && body.user_group_owners === undefined ? undefined : owners(body),
  );
}

/** DELETE /api/apis/{id}: a classic or an OAS API. */
export function deleteApi(c: Ctx): Promise<Reply> {
  return remove(c, ['classic', 'oas']);
}

// --- OAS and streams -------------------------------------------------------------------------

function infoOf(doc: Record<string, unknown>): Record<string, unknown> | undefined {
  const ext = doc[OAS_EXTENSION];
  const info = asPlainObject(ext)?.info;
  return isPlainObject(info) ? info : undefined;
}

/** Reads and checks a document of `kind`; for a create, its ID is set when absent. */
async function readDocument(
  c: Ctx,
  kind: 'oas' | 'streams',
  pathId?: string,
): Promise<{ doc: Record<string, unknown>; id: string } | Reply> {
  if (kind === 'streams') {
    if (!c.deps.config.streaming_enabled) {
      return fail(
        400,
        'Streams APIs are disabled: set streaming.enabled (streaming_enabled, SVC_DB_STREAMING_ENABLED) to true in the dashboard configuration',
      );
    }
    const type = (c.req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (c.req.method !== 'GET' && type !== STREAMS_CONTENT_TYPE) {
      return fail(415, `Content-Type: send a streams document as ${STREAMS_CONTENT_TYPE}`);
    }
  }
  const doc = await readObject(c.req);
  if (doc[OAS_EXTENSION] === undefined) return fail(400, `the payload should contain ${OAS_EXTENSION}`);
  const streaming = doc[STREAMING_EXTENSION] !== undefined;
  if (kind === 'streams' && !streaming) return fail(400, `the payload should contain ${STREAMING_EXTENSION}`);
  if (kind === 'oas' && streaming)
    return fail(400, `a document with ${STREAMING_EXTENSION} is a streams API: use /api/apis/streams`);
  const info = infoOf(doc);
  const given = info?.id;
  let id: string;
  if (pathId !== undefined) {
    if (typeof given === 'string' && given !== '' && given !== pathId) {
      return fail(
        400,
        'Request APIID does not match that in Definition! For Update operations these must match.',
      );
    }
    id = pathId;
  } else {
    id = typeof given === 'string' && given !== '' ? given : newId();
  }
  if (info !== undefined) info.id = id;
  const org = callerOf(c).org;
  if (info?.orgId !== undefined && info.orgId !== org) {
    return invalid([`${OAS_EXTENSION}.info.orgId: must be your organisation's ID (${org})`]);
  }
  if (info !== undefined) info.orgId = org;
  const idProblems = pathId === undefined ? idProblem(id, `${OAS_EXTENSION}.info.id`) : [];
  const problems = idProblems.length > 0 ? idProblems : oasProblems(doc);
  if (problems.length > 0) return invalid(problems);
  return { doc, id };
}

/** The handlers of an API document kind's endpoints, `/api/apis/{kind}` and `/api/apis/{kind}/{id}`. */
export interface DocumentHandlers {
  /** GET /api/apis/{kind}: the documents (`{"apis": [...], "pages": n}`). */
  list: (c: Ctx) => Promise<Reply>;
  /** GET /api/apis/{kind}/{id}: the document. */
  get: (c: Ctx) => Promise<Reply>;
  /** POST /api/apis/{kind}: `{"Status":"OK","Message":"API created","Meta":<record>,"ID":<api id>}` */
  create: (c: Ctx) => Promise<Reply>;
  /** PUT /api/apis/{kind}/{id} */
  update: (c: Ctx) => Promise<Reply>;
  /** DELETE /api/apis/{kind}/{id} */
  remove: (c: Ctx) => Promise<Reply>;
}

/** The endpoints of the API documents of `kind`, an OAS document or a Streams definition. */
function documentHandlers(kind: 'oas' | 'streams'): DocumentHandlers {
  return {
    list: async (c) => {
      const { items, pages } = await listOf(c, [kind]);
      return json({ apis: items.map((d) => d.body.definition), pages });
    },
    get: async (c) => {
      const d = await readOf(c, [kind]);
      return 'status' in d ? d : json(d.body.definition);
    },
    create: async (c) => {
      const r = await readDocument(c, kind);
      return 'status' in r ? r : create(c, kind, r.id, r.doc, owners(queryOwners(c) ?? {}));
    },
    update: async (c) => {
      const r = await readDocument(c, kind, c.params[0] ?? '');
      return 'status' in r ? r : update(c, kind, r.id, r.doc, ownersOf(queryOwners(c)));
    },
    remove: (c) => remove(c, [kind]),
  };
}

/** /api/apis/oas: the OAS API documents. */
export const oasApis = documentHandlers('oas');

/** /api/apis/streams: the Streams API definitions. */
export const streamsApis = documentHandlers('streams');

/** Whether `id` names an API of the organisation (for keys and policies). */
export async function apiExists(tx: StoreTx, org: string, id: string): Promise<boolean> {
  return (await tx.get(org, 'apis', id)) !== undefined;
}
