/**
 * The developer API of an organisation's portal (docs/portal.md): sign-up, sign-in, the
 * catalogue, key requests, the developer's own keys and webhook subscriptions. A developer is
 * authenticated by a session token (cookie `svc_portal` or `Authorization: Bearer`), kept as its
 * SHA-256 and compared in constant time; every read and write is of the portal's organisation
 * and, below the catalogue, of the developer's own documents (another's are not found).
 */
import { seal, unseal } from '../../lib/seal.ts';
import { newId, putAudited } from '../api/documents.ts';
import { fail, json, ok, readObject, Refusal, type Reply } from '../api/http.ts';
import { hashPassword, verifyPassword } from '../../lib/password.ts';
import type { DashboardDeps } from '../api/http.ts';
import type { Doc, StoreReader } from '../store/store.ts';
import { presentDeveloper, presentKey, presentRequest, presentSubscription } from './admin.ts';
import {
  developerNameProblem,
  emailProblem,
  isHttpUrl,
  MAX_WEBHOOK_URL_LENGTH,
  passwordProblem,
} from '../../schemas/rules/portal.ts';
import { settingsOf, type Product } from './model.ts';
import { emailLookup, issueKey, newSecret, revokeKey, sameSecret, sha256, withKeyTruth } from './records.ts';
import { addressKey, type SignInLimits } from './sign-in-limit.ts';
import type { IncomingMessage } from 'node:http';

/**
 * Purpose of a webhook subscription's signing secret at rest (lib/seal.ts, under the admin
 * secret): it must be read back to sign deliveries, so it is sealed rather than hashed.
 */
const SUBSCRIPTION_SECRET_AT_REST = 'portal webhook secrets at rest v1';

/** The cookie of a developer's session. */
export const SESSION_COOKIE = 'svc_portal';

/** One call of the developer API. */
export interface PortalCall {
  req: IncomingMessage;
  url: URL;
  deps: DashboardDeps;
  org: string;
  /** The portal's path prefix (`/portal/{org}` or `''` on its domain). */
  base: string;
  /** The path below `<base>/api`. */
  path: string;
  /** The sign-in and sign-up limits of this process. */
  limits: SignInLimits;
}

/** A path segment decoded, or '' when its percent-encoding is broken (then nothing is found: 404). */
export function segment(s: string | undefined): string {
  try {
    return decodeURIComponent(s ?? '');
  } catch {
    return '';
  }
}

/** 429 with Retry-After: the caller waits `ms` (whole seconds, at least one). */
function tooMany(ms: number): Reply {
  const s = Math.max(1, Math.ceil(ms / 1000));
  return {
    ...fail(429, `Too many attempts: try again in ${String(s)} seconds`),
    headers: { 'retry-after': String(s) },
  };
}

// A stored hash to check a password against when the e-mail is unknown, so that both cost the same.
const DUMMY_HASH = hashPassword('not a password of anyone');

/** The session token a request carries: the Bearer token, else the cookie. */
function tokenOf(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && /^Bearer\s+/i.test(auth)) return auth.replace(/^Bearer\s+/i, '').trim();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === SESSION_COOKIE) return v.join('=');
  }
  return undefined;
}

/** The signed-in developer of `call`, or undefined (expired, another organisation's, not active). */
async function developerOf(call: PortalCall): Promise<{ developer: Doc; session: string } | undefined> {
  const token = tokenOf(call.req);
  if (token === undefined || token === '') return undefined;
  const hash = sha256(token);
  const found = await call.deps.store.findByLookup('portal-sessions', hash);
  if (found?.org !== call.org || !sameSecret(found.lookup, hash)) return undefined;
  if (Number(found.doc.body.expires) <= call.deps.now()) return undefined;
  const dev = await call.deps.store.get(call.org, 'portal-developers', String(found.doc.body.developer_id));
  if (dev?.body.status !== 'active') return undefined;
  return { developer: dev, session: found.doc.id };
}

/** The products developers of `org` see: `show`, in at least one catalogue. */
async function catalogue(store: StoreReader, org: string): Promise<Doc[]> {
  const listed = new Set<string>();
  for (const c of (await store.list(org, 'portal-catalogues')).items) {
    for (const id of Array.isArray(c.body.apis) ? (c.body.apis as unknown[]) : []) {
      if (typeof id === 'string') listed.add(id);
    }
  }
  return (await store.list(org, 'portal-products')).items.filter(
    (p) => listed.has(p.id) && p.body.show !== false,
  );
}

/** The catalogue's product `productId` names (a request's `product_id`), or the answer why not. */
async function listedProduct(store: StoreReader, org: string, productId: unknown): Promise<Doc | Reply> {
  if (typeof productId !== 'string')
    return fail(400, 'product_id: Required value: a product of the catalogue');
  const p = (await catalogue(store, org)).find((d) => d.id === productId);
  return p ?? fail(404, 'Product not found');
}

function presentProduct(d: Doc): Record<string, unknown> {
  const p = d.body as unknown as Product;
  return {
    id: d.id,
    name: p.name,
    description: p.description ?? '',
    auth_type: p.auth_type,
    key_approval: p.key_approval,
    subscribable_events: p.subscribable_events,
    has_docs: p.docs !== undefined,
  };
}

/** The cookie that sets (or, with `token` undefined, clears) the session. */
function cookie(call: PortalCall, token: string | undefined, maxAge: number): string {
  const path = call.base === '' ? '/' : `${call.base}/`;
  return `${SESSION_COOKIE}=${token ?? ''}; Path=${path}; HttpOnly; SameSite=Strict; Max-Age=${token === undefined ? 0 : maxAge}`;
}

const MAX_DOC_BYTES = 4 * 1024 * 1024;

/** The OAS document of a product: held, or read from its URL (bounded in time and size). */
async function docsOf(p: Product): Promise<Reply> {
  if (p.docs?.documentation !== undefined) return json(p.docs.documentation);
  const url = p.docs?.url;
  if (url === undefined || !isHttpUrl(url)) return fail(404, 'The product has no documentation');
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000), redirect: 'error' });
    const text = await res.text();
    if (!res.ok || text.length > MAX_DOC_BYTES)
      return fail(502, 'The documentation could not be read from its URL');
    const { parse } = await import('yaml');
    return json(parse(text) as unknown);
  } catch {
    return fail(502, 'The documentation could not be read from its URL');
  }
}

/** The developer API: the reply to `call`. */
export async function developerApi(call: PortalCall): Promise<Reply> {
  const { deps, org, path } = call;
  const method = call.req.method === 'HEAD' ? 'GET' : (call.req.method ?? 'GET');
  const store = deps.store;
  const now = deps.now();

  if (path === '/portal' && method === 'GET') {
    const o = await store.getOrg(org);
    const s = await settingsOf(store, org);
    return json({ org_id: org, name: o?.body.owner_name ?? org, signup_enabled: s.signup_enabled });
  }
  if (path === '/register' && method === 'POST') {
    const settings = await settingsOf(store, org);
    if (!settings.signup_enabled) return fail(403, 'Sign-up is off for this portal: ask its organisation');
    const body = await readObject(call.req);
    const problems: string[] = [];
    const badEmail = emailProblem(body.email);
    if (badEmail !== undefined) problems.push(`email: ${badEmail}`);
    const badPassword = passwordProblem(body.password);
    if (badPassword !== undefined) problems.push(`password: ${badPassword}`);
    const badName = developerNameProblem(body.name);
    if (badName !== undefined) problems.push(`name: ${badName}`);
    if (problems.length > 0)
      return fail(400, `Validation of Developer failed. Reason: ${problems.join('; ')}`);
    const email = String(body.email).trim().toLowerCase();
    const lookup = emailLookup(org, email);
    const address = addressKey(call.req.socket.remoteAddress);
    const wait = call.limits.signUpWait(lookup, address);
    if (wait > 0) return tooMany(wait);
    call.limits.signedUp(lookup, address);
    const hash = await hashPassword(String(body.password));
    const id = newId();
    const status = settings.developer_approval === 'auto' ? 'active' : 'pending';
    return store.write(org, async (tx) => {
      if ((await tx.findByLookup('portal-developers', lookup)) !== undefined) {
        return fail(409, 'A developer with this e-mail already exists');
      }
      const dev = { email, name: typeof body.name === 'string' ? body.name : '', status, password: hash };
      await putAudited(tx, now, `developer:${id}`, org, 'portal-developers', id, undefined, dev, lookup);
      return json({ id, email, status });
    });
  }
  if (path === '/login' && method === 'POST') {
    const body = await readObject(call.req);
    const email = typeof body.email === 'string' ? body.email : '';
    const password = typeof body.password === 'string' ? body.password : '';
    const lookup = emailLookup(org, email);
    const address = addressKey(call.req.socket.remoteAddress);
    const wait = call.limits.signInWait(lookup, address);
    if (wait > 0) return tooMany(wait);
    const found = await store.findByLookup('portal-developers', lookup);
    const dev = found?.org === org ? found.doc : undefined;
    const stored = typeof dev?.body.password === 'string' ? dev.body.password : await DUMMY_HASH;
    const matches = await verifyPassword(password, stored);
    if (dev === undefined || !matches) {
      call.limits.failed(lookup, address);
      return fail(401, 'Wrong e-mail or password');
    }
    call.limits.succeeded(lookup, address);
    if (dev.body.status !== 'active') {
      return fail(403, `Your account is ${String(dev.body.status)}: the organisation has to approve it`);
    }
    const settings = await settingsOf(store, org);
    const token = newSecret();
    const expires = now + settings.session_lifetime_s * 1000;
    await store.write(org, async (tx) => {
      // Expired sessions of the organisation go as a new one is made, so they do not pile up.
      for (const old of (await tx.list(org, 'portal-sessions')).items) {
        if (Number(old.body.expires) <= now) await tx.delete(org, 'portal-sessions', old.id);
      }
      await tx.put(org, 'portal-sessions', newId(), { developer_id: dev.id, expires }, sha256(token));
    });
    return {
      status: 200,
      body: { token, expires },
      headers: { 'set-cookie': cookie(call, token, settings.session_lifetime_s) },
    };
  }

  const who = await developerOf(call);
  if (who === undefined) return fail(401, 'Not signed in: sign in to the portal');
  const dev = who.developer;
  const actor = `developer:${dev.id}`;

  if (path === '/logout' && method === 'POST') {
    await store.write(org, (tx) => tx.delete(org, 'portal-sessions', who.session));
    return { ...ok('Signed out'), headers: { 'set-cookie': cookie(call, undefined, 0) } };
  }
  if (path === '/me' && method === 'GET') return json(presentDeveloper(dev));
  if (path === '/catalogue' && method === 'GET') {
    return json({ products: (await catalogue(store, org)).map(presentProduct) });
  }
  const product = /^\/catalogue\/([^/]+)(\/docs)?$/.exec(path);
  if (product !== null && method === 'GET') {
    const id = segment(product[1]);
    const p = (await catalogue(store, org)).find((d) => d.id === id);
    if (p === undefined) return fail(404, 'Product not found');
    return product[2] === undefined ? json(presentProduct(p)) : docsOf(p.body as unknown as Product);
  }

  /** The developer's key requests, an issued one whose key has gone answered revoked. */
  const requestsOf = async (): Promise<Doc[]> =>
    withKeyTruth(
      store,
      org,
      (await store.list(org, 'portal-key-requests')).items.filter((d) => d.body.developer_id === dev.id),
    );
  if (path === '/key-requests' && method === 'GET') {
    return json({ key_requests: (await requestsOf()).map(presentRequest) });
  }
  if (path === '/key-requests' && method === 'POST') {
    const body = await readObject(call.req);
    const p = await listedProduct(store, org, body.product_id);
    if ('status' in p) return p;
    const productId = p.id;
    const prod = p.body as unknown as Product;
    if (prod.auth_type !== 'authToken')
      return fail(400, `product_id: the product is ${prod.auth_type}: it issues no keys`);
    const id = newId();
    return store.write(org, async (tx) => {
      // One open request or key per product and developer: a second is a 409 naming the first.
      const mine = await withKeyTruth(
        tx,
        org,
        (await tx.list(org, 'portal-key-requests')).items.filter(
          (d) => d.body.developer_id === dev.id && d.body.product_id === productId,
        ),
      );
      const open = mine.find((d) => ['pending', 'approved', 'issued'].includes(String(d.body.status)));
      if (open !== undefined) {
        const what =
          open.body.status === 'issued'
            ? `you hold its key ${String(open.body.key_id)}: revoke it to request another`
            : open.body.status === 'approved'
              ? `your request ${open.id} is approved: claim its key`
              : `your request ${open.id} is pending: the organisation has to approve it`;
        return fail(409, `A key of this product is requested already: ${what}`);
      }
      const auto = prod.key_approval === 'auto';
      let reqBody: Record<string, unknown> = {
        developer_id: dev.id,
        product_id: productId,
        status: auto ? 'approved' : 'pending',
      };
      let key: string | undefined;
      if (auto) {
        const issued = await issueKey(tx, now, org, { id: p.id, body: prod }, dev, id);
        key = issued.key;
        reqBody = { ...reqBody, status: 'issued', key_id: issued.keyId, decided_by: 'auto' };
      }
      await putAudited(tx, now, actor, org, 'portal-key-requests', id, undefined, reqBody);
      return json({
        ...presentRequest({ id, body: reqBody, created: now, updated: now }),
        ...(key === undefined ? {} : { key }),
      });
    });
  }
  const claim = /^\/key-requests\/([^/]+)\/key$/.exec(path);
  if (claim !== null && method === 'POST') {
    const id = segment(claim[1]);
    return store.write(org, async (tx) => {
      const before = await tx.get(org, 'portal-key-requests', id);
      if (before?.body.developer_id !== dev.id) return fail(404, 'Key request not found');
      if (before.body.status !== 'approved') {
        return fail(
          409,
          `The key request is ${String(before.body.status)}: only an approved request gives a key, once`,
        );
      }
      const p = await tx.get(org, 'portal-products', String(before.body.product_id));
      if (p === undefined) throw new Refusal(409, 'The product no longer exists');
      const issued = await issueKey(tx, now, org, { id: p.id, body: p.body as unknown as Product }, dev, id);
      const after = { ...before.body, status: 'issued', key_id: issued.keyId };
      await putAudited(tx, now, actor, org, 'portal-key-requests', id, before, after);
      return json({ key: issued.key, key_id: issued.keyId, request_id: id });
    });
  }

  const issuedOf = async (): Promise<Doc[]> => (await requestsOf()).filter((d) => d.body.status === 'issued');
  if (path === '/keys' && method === 'GET') return json({ keys: (await issuedOf()).map(presentKey) });
  const key = /^\/keys\/([0-9a-f]{64})(\/usage)?$/.exec(path);
  if (key !== null) {
    const keyId = key[1] ?? '';
    const req = (await requestsOf()).find((d) => d.body.key_id === keyId);
    if (req === undefined) return fail(404, 'Key not found');
    if (req.body.status !== 'issued') {
      if (key[2] === undefined && method === 'DELETE') {
        // Deleted by the organisation: the request says so from now on.
        await store.write(org, async (tx) => {
          const before = await tx.get(org, 'portal-key-requests', req.id);
          if (before?.body.status !== 'issued') return;
          await putAudited(tx, now, actor, org, 'portal-key-requests', req.id, before, {
            ...before.body,
            status: 'revoked',
          });
        });
        return fail(410, 'The key is already revoked (by you or by the organisation): no gateway accepts it');
      }
      return fail(404, 'Key not found: it was revoked');
    }
    if (key[2] !== undefined && method === 'GET') {
      const to = Number(call.url.searchParams.get('to') ?? now);
      const from = Number(call.url.searchParams.get('from') ?? to - 24 * 3_600_000);
      if (!Number.isFinite(from) || !Number.isFinite(to) || from >= to)
        return fail(400, 'from: must be before to');
      const step = 3_600_000;
      const q = { org, period: 'hour' as const, from: Math.floor(from / step) * step, to, name: keyId };
      const [total] = await store.analytics.sum(q, 'key', 'name');
      const series = await store.analytics.sum(q, 'key', 'at');
      return json({
        key_id: keyId,
        from: q.from,
        to,
        requests: Math.round(total?.requests ?? 0),
        errors: Math.round(total?.errors ?? 0),
        series: series.map((g) => ({
          at: g.at,
          requests: Math.round(g.requests),
          errors: Math.round(g.errors),
        })),
      });
    }
    if (key[2] === undefined && method === 'DELETE') {
      await store.write(org, async (tx) => {
        const before = await tx.get(org, 'portal-key-requests', req.id);
        if (before === undefined) return;
        await revokeKey(tx, now, actor, org, keyId);
        await putAudited(tx, now, actor, org, 'portal-key-requests', req.id, before, {
          ...before.body,
          status: 'revoked',
        });
      });
      return ok('Key revoked');
    }
  }

  if (path === '/subscriptions' && method === 'GET') {
    const mine = (await store.list(org, 'portal-subscriptions')).items.filter(
      (d) => d.body.developer_id === dev.id,
    );
    return json({ subscriptions: mine.map(presentSubscription) });
  }
  if (path === '/subscriptions' && method === 'POST') {
    const body = await readObject(call.req);
    const p = await listedProduct(store, org, body.product_id);
    if ('status' in p) return p;
    const productId = p.id;
    if (!(await issuedOf()).some((d) => d.body.product_id === productId)) {
      return fail(403, 'Subscribing needs a key of the product: request one first');
    }
    const allowed = (p.body as unknown as Product).subscribable_events;
    const problems: string[] = [];
    if (!isHttpUrl(body.url)) problems.push('url: Required value: an http or https URL');
    else if (body.url.length > MAX_WEBHOOK_URL_LENGTH)
      problems.push(`url: Invalid value: at most ${String(MAX_WEBHOOK_URL_LENGTH)} characters`);
    const events = body.events;
    if (!Array.isArray(events) || events.length === 0) {
      problems.push(
        `events: Required value: one or more of ${allowed.join(', ') || '(the product lists no events)'}`,
      );
    } else {
      events.forEach((e, i) => {
        if (typeof e !== 'string' || !allowed.includes(e)) {
          problems.push(
            `events[${i}]: Unsupported value: ${JSON.stringify(e)} is not an event of the product (${allowed.join(', ')})`,
          );
        }
      });
    }
    for (const k of Object.keys(body)) {
      if (!['product_id', 'url', 'events'].includes(k))
        problems.push(`${k}: Unsupported field: use product_id, url, events`);
    }
    if (problems.length > 0)
      return fail(400, `Validation of Subscription failed. Reason: ${problems.join('; ')}`);
    const id = newId();
    const secret = newSecret();
    const sub = {
      developer_id: dev.id,
      product_id: productId,
      url: String(body.url),
      events: [...new Set(events as string[])],
      secret: seal(secret, deps.config.admin_secret, SUBSCRIPTION_SECRET_AT_REST),
    };
    await store.write(org, (tx) =>
      putAudited(tx, now, actor, org, 'portal-subscriptions', id, undefined, sub),
    );
    return json({ ...presentSubscription({ id, body: sub, created: now, updated: now }), secret });
  }
  const sub = /^\/subscriptions\/([^/]+)$/.exec(path);
  if (sub !== null && method === 'DELETE') {
    const id = segment(sub[1]);
    return store.write(org, async (tx) => {
      const before = await tx.get(org, 'portal-subscriptions', id);
      if (before?.body.developer_id !== dev.id) return fail(404, 'Subscription not found');
      await putAudited(tx, now, actor, org, 'portal-subscriptions', id, before, undefined);
      return ok('Subscription deleted');
    });
  }
  return fail(404, 'Not found');
}

/**
 * `GET <base>/webhooks/{product}`: the product's subscriptions for its `portal_webhook` outputs,
 * behind the product's feed secret (docs/portal.md).
 */
export async function feed(
  deps: DashboardDeps,
  req: IncomingMessage,
  org: string,
  productId: string,
): Promise<Reply> {
  const p = await deps.store.get(org, 'portal-products', productId);
  const auth = req.headers.authorization;
  const given = typeof auth === 'string' ? auth.replace(/^Bearer\s+/i, '').trim() : '';
  const want = p?.body.feed_secret_hash;
  if (p === undefined || typeof want !== 'string' || given === '' || !sameSecret(sha256(given), want)) {
    return fail(401, "Not authorised: send the product's feed secret as a Bearer token");
  }
  const events = new Set((p.body as unknown as Product).subscribable_events);
  const active = new Set(
    (await deps.store.list(org, 'portal-developers')).items
      .filter((d) => d.body.status === 'active')
      .map((d) => d.id),
  );
  const subscriptions = (await deps.store.list(org, 'portal-subscriptions')).items
    .filter((s) => s.body.product_id === productId && active.has(String(s.body.developer_id)))
    .flatMap((s) => {
      const secret =
        typeof s.body.secret === 'string'
          ? unseal(s.body.secret, deps.config.admin_secret, SUBSCRIPTION_SECRET_AT_REST)
          : undefined;
      if (secret === undefined) {
        // Sealed under another admin secret: it cannot sign, so it is not delivered to.
        deps.log.warn('portal subscription secret unreadable', { org_id: org, subscription_id: s.id });
        return [];
      }
      return [{ ...s, secret }];
    })
    .map((s) => ({
      id: s.id,
      url: s.body.url,
      secret: s.secret,
      events: (Array.isArray(s.body.events) ? (s.body.events as string[]) : []).filter((e) => events.has(e)),
    }))
    .filter((s) => s.events.length > 0);
  return json({ subscriptions });
}
