/**
 * The portal's admin API (docs/portal.md), under `/api/portal/...`: a dashboard user's routes
 * needing the RBAC resource `portal`. Settings, products, catalogues, developers, key requests,
 * developer keys and subscriptions of the caller's organisation.
 */
import { actorOf, newId, putAudited } from '../api/documents.ts';
import {
  callerOf,
  fail,
  json,
  ok,
  pageOf,
  readObject,
  type Ctx,
  type Handler,
  type Reply,
} from '../api/http.ts';
import { DEVELOPER_STATUSES, developerNameProblem } from '../../schemas/rules/portal.ts';
import type { Requirement } from '../rbac/rbac.ts';
import type { Doc, Kind } from '../store/store.ts';
import { checkCatalogue, checkProduct, checkSettings, idError, settingsOf, type Product } from './model.ts';
import { newSecret, revokeKey, sha256, withKeyTruth } from './records.ts';

/** One method of a route, as the dashboard's server takes it. */
interface Action {
  handler: Handler;
  need: Requirement;
}

/** A route of the admin API, as the dashboard's server takes it. */
export interface PortalRoute {
  name: string;
  path: RegExp;
  auth: 'user';
  methods: Partial<Record<'GET' | 'POST' | 'PUT' | 'DELETE', Action>>;
}

const READ: Requirement = { resource: 'portal', level: 'read' };
const WRITE: Requirement = { resource: 'portal', level: 'write' };

const invalid = (what: string, problems: string[]): Reply =>
  fail(400, `Validation of ${what} failed. Reason: ${problems.join('; ')}`);

/** All documents of a kind in the caller's organisation. */
async function all(c: Ctx, kind: Kind): Promise<Doc[]> {
  return (await c.deps.store.list(callerOf(c).org, kind)).items;
}

/** A page (`?p=`) of `items` under `name`, with `pages`. */
function listed(c: Ctx, name: string, items: unknown[]): Reply {
  const page = pageOf(c);
  const from = page.slice.offset ?? 0;
  const slice = items.slice(from, page.slice.limit === undefined ? undefined : from + page.slice.limit);
  return json({ [name]: slice, pages: page.pages(items.length) });
}

function orgOf(c: Ctx): string {
  return callerOf(c).org;
}

/** The feed path a product's `portal_webhook` outputs read (docs/portal.md). */
export function feedPath(org: string, product: string): string {
  return `/portal/${encodeURIComponent(org)}/webhooks/${encodeURIComponent(product)}`;
}

// Settings.

const getConfig: Handler = async (c) => json(await settingsOf(c.deps.store, orgOf(c)));

const putConfig: Handler = async (c) => {
  const { settings, problems } = checkSettings(await readObject(c.req));
  if (problems.length > 0) return invalid('PortalConfig', problems);
  const org = orgOf(c);
  await c.deps.store.write(org, async (tx) => {
    const before = await tx.get(org, 'portal-config', 'config');
    await putAudited(tx, c.deps.now(), actorOf(c), org, 'portal-config', 'config', before, { ...settings });
  });
  return json(settings);
};

// Products.

function presentProduct(org: string, d: Doc): Record<string, unknown> {
  const { feed_secret_hash, ...rest } = d.body;
  return {
    ...rest,
    id: d.id,
    created: d.created,
    updated: d.updated,
    feed_url: feedPath(org, d.id),
    has_feed_secret: typeof feed_secret_hash === 'string',
  };
}

const listProducts: Handler = async (c) =>
  listed(
    c,
    'products',
    (await all(c, 'portal-products')).map((d) => presentProduct(orgOf(c), d)),
  );

const getProduct: Handler = async (c) => {
  const d = await c.deps.store.get(orgOf(c), 'portal-products', c.params[0] ?? '');
  return d === undefined ? fail(404, 'Product not found') : json(presentProduct(orgOf(c), d));
};

/** POST (create; 409 when the ID is taken) and PUT (create or replace) of a product. */
function writeProduct(mode: 'create' | 'put'): Handler {
  return async (c) => {
    const org = orgOf(c);
    const body = await readObject(c.req);
    const id = mode === 'put' ? (c.params[0] ?? '') : typeof body.id === 'string' ? body.id : newId();
    const bad = idError(id);
    if (bad !== undefined) return invalid('APIDescription', [bad]);
    if (mode === 'put' && body.id !== undefined && body.id !== id) {
      return invalid('APIDescription', [`id: Invalid value: the path names ${JSON.stringify(id)}`]);
    }
    return c.deps.store.write(org, async (tx) => {
      const { product, problems } = await checkProduct(tx, org, body);
      if (problems.length > 0) return invalid('APIDescription', problems);
      const before = await tx.get(org, 'portal-products', id);
      if (mode === 'create' && before !== undefined) return fail(409, 'Product already exists');
      const kept = before?.body.feed_secret_hash;
      const after: Record<string, unknown> = {
        ...product,
        ...(typeof kept === 'string' ? { feed_secret_hash: kept } : {}),
      };
      await putAudited(tx, c.deps.now(), actorOf(c), org, 'portal-products', id, before, after);
      const now = c.deps.now();
      return json(presentProduct(org, { id, body: after, created: before?.created ?? now, updated: now }));
    });
  };
}

const deleteProduct: Handler = async (c) => {
  const org = orgOf(c);
  const id = c.params[0] ?? '';
  return c.deps.store.write(org, async (tx) => {
    const before = await tx.get(org, 'portal-products', id);
    if (before === undefined) return fail(404, 'Product not found');
    const at = c.deps.now();
    const actor = actorOf(c);
    await putAudited(tx, at, actor, org, 'portal-products', id, before, undefined);
    for (const kind of ['portal-key-requests', 'portal-subscriptions'] as const) {
      for (const d of (await tx.list(org, kind)).items) {
        // An issued key stays (it still works): its request stays with it, so that the developer
        // and the admin see it and can revoke it.
        if (d.body.product_id !== id || (kind === 'portal-key-requests' && d.body.status === 'issued'))
          continue;
        await putAudited(tx, at, actor, org, kind, d.id, d, undefined);
      }
    }
    for (const d of (await tx.list(org, 'portal-catalogues')).items) {
      const apis = Array.isArray(d.body.apis) ? (d.body.apis as unknown[]) : [];
      if (apis.includes(id)) {
        const after = { ...d.body, apis: apis.filter((a) => a !== id) };
        await putAudited(tx, at, actor, org, 'portal-catalogues', d.id, d, after);
      }
    }
    return ok('Product deleted');
  });
};

const newFeedSecret: Handler = async (c) => {
  const org = orgOf(c);
  const id = c.params[0] ?? '';
  return c.deps.store.write(org, async (tx) => {
    const before = await tx.get(org, 'portal-products', id);
    if (before === undefined) return fail(404, 'Product not found');
    const secret = newSecret();
    const after = { ...before.body, feed_secret_hash: sha256(secret) };
    await putAudited(tx, c.deps.now(), actorOf(c), org, 'portal-products', id, before, after);
    return json({ feed_secret: secret, feed_url: feedPath(org, id) });
  });
};

// Catalogues.

const presentDoc = (d: Doc): Record<string, unknown> => ({ ...d.body, id: d.id, created: d.created });

const listCatalogues: Handler = async (c) =>
  listed(c, 'catalogues', (await all(c, 'portal-catalogues')).map(presentDoc));

const getCatalogue: Handler = async (c) => {
  const d = await c.deps.store.get(orgOf(c), 'portal-catalogues', c.params[0] ?? '');
  return d === undefined ? fail(404, 'Catalogue not found') : json(presentDoc(d));
};

function writeCatalogue(mode: 'create' | 'put'): Handler {
  return async (c) => {
    const org = orgOf(c);
    const body = await readObject(c.req);
    const id = mode === 'put' ? (c.params[0] ?? '') : typeof body.id === 'string' ? body.id : newId();
    const bad = idError(id);
    if (bad !== undefined) return invalid('PortalAPICatalogue', [bad]);
    return c.deps.store.write(org, async (tx) => {
      const { catalogue, problems } = await checkCatalogue(tx, org, body);
      if (problems.length > 0) return invalid('PortalAPICatalogue', problems);
      const before = await tx.get(org, 'portal-catalogues', id);
      if (mode === 'create' && before !== undefined) return fail(409, 'Catalogue already exists');
      await putAudited(tx, c.deps.now(), actorOf(c), org, 'portal-catalogues', id, before, { ...catalogue });
      return json({ ...catalogue, id });
    });
  };
}

const deleteCatalogue: Handler = async (c) => {
  const org = orgOf(c);
  const id = c.params[0] ?? '';
  return c.deps.store.write(org, async (tx) => {
    const before = await tx.get(org, 'portal-catalogues', id);
    if (before === undefined) return fail(404, 'Catalogue not found');
    await putAudited(tx, c.deps.now(), actorOf(c), org, 'portal-catalogues', id, before, undefined);
    return ok('Catalogue deleted');
  });
};

// Developers.

/** What anyone but the developer's own password check sees of a developer. */
export function presentDeveloper(d: Doc): Record<string, unknown> {
  return {
    id: d.id,
    email: d.body.email,
    name: d.body.name ?? '',
    status: d.body.status,
    created: d.created,
  };
}

const listDevelopers: Handler = async (c) =>
  listed(c, 'developers', (await all(c, 'portal-developers')).map(presentDeveloper));

const getDeveloper: Handler = async (c) => {
  const d = await c.deps.store.get(orgOf(c), 'portal-developers', c.params[0] ?? '');
  return d === undefined ? fail(404, 'Developer not found') : json(presentDeveloper(d));
};

/** Deletes the sessions of a developer. */
async function endSessions(
  tx: Parameters<Parameters<Ctx['deps']['store']['write']>[1]>[0],
  org: string,
  developer: string,
): Promise<void> {
  for (const s of (await tx.list(org, 'portal-sessions')).items) {
    if (s.body.developer_id === developer) await tx.delete(org, 'portal-sessions', s.id);
  }
}

const putDeveloper: Handler = async (c) => {
  const org = orgOf(c);
  const body = await readObject(c.req);
  const problems: string[] = [];
  for (const k of Object.keys(body)) {
    if (k !== 'status' && k !== 'name') problems.push(`${k}: Unsupported field: use status or name`);
  }
  if (body.status !== undefined && !DEVELOPER_STATUSES.some((x) => x === body.status)) {
    problems.push(
      `status: Unsupported value: use one of ${DEVELOPER_STATUSES.map((x) => `"${x}"`).join(', ')}`,
    );
  }
  const badName = developerNameProblem(body.name);
  if (badName !== undefined) problems.push(`name: ${badName}`);
  if (problems.length > 0) return invalid('Developer', problems);
  return c.deps.store.write(org, async (tx) => {
    const before = await tx.get(org, 'portal-developers', c.params[0] ?? '');
    if (before === undefined) return fail(404, 'Developer not found');
    const after = { ...before.body, ...body };
    await putAudited(tx, c.deps.now(), actorOf(c), org, 'portal-developers', before.id, before, after);
    if (after.status !== 'active') await endSessions(tx, org, before.id);
    return json(presentDeveloper({ ...before, body: after }));
  });
};

const deleteDeveloper: Handler = async (c) => {
  const org = orgOf(c);
  return c.deps.store.write(org, async (tx) => {
    const before = await tx.get(org, 'portal-developers', c.params[0] ?? '');
    if (before === undefined) return fail(404, 'Developer not found');
    const at = c.deps.now();
    const actor = actorOf(c);
    await putAudited(tx, at, actor, org, 'portal-developers', before.id, before, undefined);
    await endSessions(tx, org, before.id);
    for (const kind of ['portal-key-requests', 'portal-subscriptions'] as const) {
      for (const d of (await tx.list(org, kind)).items) {
        if (d.body.developer_id !== before.id) continue;
        if (typeof d.body.key_id === 'string') await revokeKey(tx, at, actor, org, d.body.key_id);
        await putAudited(tx, at, actor, org, kind, d.id, d, undefined);
      }
    }
    return ok('Developer deleted');
  });
};

// Key requests and keys.

/** A key request as answered. */
export function presentRequest(d: Doc): Record<string, unknown> {
  return { ...d.body, id: d.id, created: d.created, updated: d.updated };
}

const listRequests: Handler = async (c) => {
  const status = c.url.searchParams.get('status');
  const items = (await withKeyTruth(c.deps.store, orgOf(c), await all(c, 'portal-key-requests'))).filter(
    (d) => status === null || d.body.status === status,
  );
  return listed(c, 'key_requests', items.map(presentRequest));
};

function decide(status: 'approved' | 'rejected'): Handler {
  return async (c) => {
    const org = orgOf(c);
    return c.deps.store.write(org, async (tx) => {
      const before = await tx.get(org, 'portal-key-requests', c.params[0] ?? '');
      if (before === undefined) return fail(404, 'Key request not found');
      if (before.body.status !== 'pending') {
        return fail(409, `The key request is ${String(before.body.status)}, not pending`);
      }
      const after = { ...before.body, status, decided_by: actorOf(c) };
      await putAudited(tx, c.deps.now(), actorOf(c), org, 'portal-key-requests', before.id, before, after);
      return json(presentRequest({ ...before, body: after }));
    });
  };
}

/** A portal key as answered: from its (issued) request. */
export function presentKey(d: Doc): Record<string, unknown> {
  return {
    key_id: d.body.key_id,
    developer_id: d.body.developer_id,
    product_id: d.body.product_id,
    request_id: d.id,
    created: d.updated,
  };
}

const listKeys: Handler = async (c) =>
  listed(
    c,
    'keys',
    (await withKeyTruth(c.deps.store, orgOf(c), await all(c, 'portal-key-requests')))
      .filter((d) => d.body.status === 'issued')
      .map(presentKey),
  );

const deleteKey: Handler = async (c) => {
  const org = orgOf(c);
  const keyId = c.params[0] ?? '';
  return c.deps.store.write(org, async (tx) => {
    const req = (await tx.list(org, 'portal-key-requests')).items.find(
      (d) => d.body.status === 'issued' && d.body.key_id === keyId,
    );
    if (req === undefined) return fail(404, 'Key not found');
    const at = c.deps.now();
    await revokeKey(tx, at, actorOf(c), org, keyId);
    await putAudited(tx, at, actorOf(c), org, 'portal-key-requests', req.id, req, {
      ...req.body,
      status: 'revoked',
    });
    return ok('Key revoked');
  });
};

// Subscriptions.

/** A subscription as answered: never its secret. */
export function presentSubscription(d: Doc): Record<string, unknown> {
  const { secret: _secret, ...rest } = d.body;
  return { ...rest, id: d.id, created: d.created };
}

const listSubscriptions: Handler = async (c) =>
  listed(c, 'subscriptions', (await all(c, 'portal-subscriptions')).map(presentSubscription));

const deleteSubscription: Handler = async (c) => {
  const org = orgOf(c);
  return c.deps.store.write(org, async (tx) => {
    const before = await tx.get(org, 'portal-subscriptions', c.params[0] ?? '');
    if (before === undefined) return fail(404, 'Subscription not found');
    await putAudited(tx, c.deps.now(), actorOf(c), org, 'portal-subscriptions', before.id, before, undefined);
    return ok('Subscription deleted');
  });
};

const r = (h: Handler): Action => ({ handler: h, need: READ });
const w = (h: Handler): Action => ({ handler: h, need: WRITE });

/** The admin routes, in the dashboard's route list. */
export const PORTAL_ADMIN_ROUTES: readonly PortalRoute[] = [
  {
    name: 'portal_config',
    path: /^\/api\/portal\/config$/,
    auth: 'user',
    methods: { GET: r(getConfig), PUT: w(putConfig) },
  },
  {
    name: 'portal_products',
    path: /^\/api\/portal\/products$/,
    auth: 'user',
    methods: { GET: r(listProducts), POST: w(writeProduct('create')) },
  },
  {
    name: 'portal_product_feed_secret',
    path: /^\/api\/portal\/products\/([^/]+)\/actions\/feed-secret$/,
    auth: 'user',
    methods: { POST: w(newFeedSecret) },
  },
  {
    name: 'portal_product',
    path: /^\/api\/portal\/products\/([^/]+)$/,
    auth: 'user',
    methods: { GET: r(getProduct), PUT: w(writeProduct('put')), DELETE: w(deleteProduct) },
  },
  {
    name: 'portal_catalogues',
    path: /^\/api\/portal\/catalogues$/,
    auth: 'user',
    methods: { GET: r(listCatalogues), POST: w(writeCatalogue('create')) },
  },
  {
    name: 'portal_catalogue',
    path: /^\/api\/portal\/catalogues\/([^/]+)$/,
    auth: 'user',
    methods: { GET: r(getCatalogue), PUT: w(writeCatalogue('put')), DELETE: w(deleteCatalogue) },
  },
  {
    name: 'portal_developers',
    path: /^\/api\/portal\/developers$/,
    auth: 'user',
    methods: { GET: r(listDevelopers) },
  },
  {
    name: 'portal_developer',
    path: /^\/api\/portal\/developers\/([^/]+)$/,
    auth: 'user',
    methods: { GET: r(getDeveloper), PUT: w(putDeveloper), DELETE: w(deleteDeveloper) },
  },
  {
    name: 'portal_key_requests',
    path: /^\/api\/portal\/key-requests$/,
    auth: 'user',
    methods: { GET: r(listRequests) },
  },
  {
    name: 'portal_key_request_approve',
    path: /^\/api\/portal\/key-requests\/([^/]+)\/approve$/,
    auth: 'user',
    methods: { POST: w(decide('approved')) },
  },
  {
    name: 'portal_key_request_reject',
    path: /^\/api\/portal\/key-requests\/([^/]+)\/reject$/,
    auth: 'user',
    methods: { POST: w(decide('rejected')) },
  },
  { name: 'portal_keys', path: /^\/api\/portal\/keys$/, auth: 'user', methods: { GET: r(listKeys) } },
  {
    name: 'portal_key',
    path: /^\/api\/portal\/keys\/([^/]+)$/,
    auth: 'user',
    methods: { DELETE: w(deleteKey) },
  },
  {
    name: 'portal_subscriptions',
    path: /^\/api\/portal\/subscriptions$/,
    auth: 'user',
    methods: { GET: r(listSubscriptions) },
  },
  {
    name: 'portal_subscription',
    path: /^\/api\/portal\/subscriptions\/([^/]+)$/,
    auth: 'user',
    methods: { DELETE: w(deleteSubscription) },
  },
];

export type { Product };
