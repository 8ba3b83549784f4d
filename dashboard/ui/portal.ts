/**
 * The developer portal's web UI (docs/portal.md): one ES module served after type stripping by
 * dashboard/portal/serve.ts, under `/portal/{org}/` or at the root of the organisation's portal
 * domain; every URL it uses is relative, so it works under both. It signs up and signs in (the
 * session is the HttpOnly cookie the portal sets; the page never holds it), and shows the
 * catalogue with each product's OpenAPI document rendered, key requests and keys (a key shown
 * once, revocable, with its usage), and webhook subscriptions (the secret shown once). Views are
 * built with DOM calls and textContent, never HTML from data. Routing is the location hash.
 */

import { arr, byId, h, obj, pushButton, selectOf, str, table, type Child, type Json } from './dom.ts';

class CallError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** Calls the developer API (relative: `api/...`); non-2xx answers throw with the portal's message. */
async function call(method: string, path: string, body?: unknown): Promise<Json> {
  const init: RequestInit = { method, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers = { 'content-type': 'application/json' };
    init.body = JSON.stringify(body);
  }
  const r = await fetch(`api/${path}`, init);
  const text = await r.text();
  let parsed: Json = {};
  try {
    parsed = obj(JSON.parse(text));
  } catch {
    // not JSON
  }
  if (!r.ok) throw new CallError(r.status, str(parsed.Message, `${String(r.status)} ${r.statusText}`));
  return parsed;
}

function showError(err: unknown): void {
  const e = byId('error');
  e.textContent = err instanceof Error ? err.message : String(err);
  e.hidden = false;
}

function notice(...children: Child[]): void {
  const n = byId('notice');
  n.replaceChildren(
    ...children.filter((c): c is Node | string => c !== null && c !== undefined && c !== false),
  );
  n.hidden = false;
}

/** Hides the messages and forgets them (a key or secret shown once is gone from the page). */
function clearMessages(): void {
  for (const id of ['error', 'notice']) {
    const e = byId(id);
    e.hidden = true;
    e.replaceChildren();
  }
}

/** A secret shown once, with a note saying so. */
function shownOnce(label: string, value: string, testId: string): HTMLElement {
  return h(
    'div',
    {},
    h('strong', {}, label),
    ' ',
    h('code', { 'data-testid': testId }, value),
    h('p', {}, 'Copy it now: it is shown once and cannot be shown again.'),
  );
}

function button(
  label: string,
  onClick: () => Promise<void>,
  attrs: Record<string, string> = {},
): HTMLElement {
  return pushButton(label, attrs, () => {
    clearMessages();
    onClick().catch(showError);
  });
}

// The OpenAPI document of a product, rendered as a list of operations (nothing evaluated).
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function renderOas(doc: Json): HTMLElement {
  const info = obj(doc.info);
  const ops: Child[][] = [];
  for (const [path, item] of Object.entries(obj(doc.paths))) {
    for (const [m, op] of Object.entries(obj(item))) {
      if (!METHODS.includes(m)) continue;
      const o = obj(op);
      ops.push([m.toUpperCase(), h('code', {}, path), str(o.summary, str(o.description))]);
    }
  }
  return h(
    'section',
    { class: 'oas', 'data-testid': 'oas' },
    h('h3', {}, `${str(info.title, 'API')} ${str(info.version)}`),
    str(info.description) === '' ? null : h('p', {}, str(info.description)),
    table(['Method', 'Path', 'Summary'], ops, 'oas-operations'),
  );
}

async function viewCatalogue(view: HTMLElement, productId?: string): Promise<void> {
  const products = arr((await call('GET', 'catalogue')).products).map(obj);
  const rows = products.map((p) => [
    h('a', { href: `#product/${encodeURIComponent(str(p.id))}` }, str(p.name)),
    str(p.description),
    str(p.auth_type),
    arr(p.subscribable_events)
      .map((e) => str(e))
      .join(', '),
  ]);
  view.replaceChildren(
    h('h2', {}, 'Catalogue'),
    table(['Product', 'Description', 'Access', 'Events'], rows, 'catalogue'),
  );
  if (productId === undefined) return;
  const p = products.find((x) => str(x.id) === productId);
  if (p === undefined) throw new Error('Product not found');
  const detail = h('section', { 'data-testid': 'product' }, h('h2', {}, str(p.name)));
  if (p.auth_type === 'authToken') {
    detail.append(
      button('Request a key', async () => {
        const r = await call('POST', 'key-requests', { product_id: str(p.id) });
        if (typeof r.key === 'string') notice(shownOnce('Your key:', r.key, 'new-key'));
        else notice('Key requested: the organisation will review it. Its status is under My keys.');
      }),
    );
  }
  if (p.has_docs === true) {
    detail.append(renderOas(await call('GET', `catalogue/${encodeURIComponent(str(p.id))}/docs`)));
  }
  view.append(detail);
}

async function viewKeys(view: HTMLElement): Promise<void> {
  const [reqs, keys] = await Promise.all([call('GET', 'key-requests'), call('GET', 'keys')]);
  const requestRows = arr(reqs.key_requests)
    .map(obj)
    .map((r) => [
      str(r.product_id),
      h('span', { 'data-testid': `request-status-${str(r.product_id)}` }, str(r.status)),
      r.status === 'approved'
        ? button('Get the key', async () => {
            const k = await call('POST', `key-requests/${encodeURIComponent(str(r.id))}/key`);
            notice(shownOnce('Your key:', str(k.key), 'new-key'));
            await route();
          })
        : '',
    ]);
  const keyRows = arr(keys.keys)
    .map(obj)
    .map((k) => {
      const id = str(k.key_id);
      const usage = h('span', { 'data-testid': `usage-${id.slice(0, 12)}` }, '');
      return [
        h('code', {}, `${id.slice(0, 12)}…`),
        str(k.product_id),
        usage,
        button('Usage', async () => {
          const u = await call('GET', `keys/${id}/usage`);
          usage.textContent = `${str(u.requests, '0')} requests, ${str(u.errors, '0')} errors (24 h)`;
        }),
        button('Revoke', async () => {
          await call('DELETE', `keys/${id}`);
          notice('Key revoked.');
          await route();
        }),
      ];
    });
  view.replaceChildren(
    h('h2', {}, 'Key requests'),
    table(['Product', 'Status', ''], requestRows, 'key-requests'),
    h('h2', {}, 'My keys'),
    table(['Key', 'Product', 'Usage', '', ''], keyRows, 'keys'),
  );
}

async function viewWebhooks(view: HTMLElement): Promise<void> {
  const [subs, cat] = await Promise.all([call('GET', 'subscriptions'), call('GET', 'catalogue')]);
  const products = arr(cat.products)
    .map(obj)
    .filter((p) => arr(p.subscribable_events).length > 0);
  const rows = arr(subs.subscriptions)
    .map(obj)
    .map((s) => [
      str(s.product_id),
      h('code', {}, str(s.url)),
      arr(s.events)
        .map((e) => str(e))
        .join(', '),
      button('Delete', async () => {
        await call('DELETE', `subscriptions/${encodeURIComponent(str(s.id))}`);
        await route();
      }),
    ]);
  const select = selectOf(
    { id: 'hook-product', name: 'product' },
    products.map((p) => [str(p.id), str(p.name)] as const),
  );
  const events = h('fieldset', { id: 'hook-events' }, h('legend', {}, 'Events'));
  const fillEvents = (): void => {
    const p = products.find((x) => str(x.id) === select.value);
    events.replaceChildren(
      h('legend', {}, 'Events'),
      ...arr(p?.subscribable_events).map((e) =>
        h('label', {}, h('input', { type: 'checkbox', name: 'event', value: str(e) }), ` ${str(e)}`),
      ),
    );
  };
  select.addEventListener('change', fillEvents);
  fillEvents();
  const url = h('input', { id: 'hook-url', name: 'url', type: 'url', required: '' }) as HTMLInputElement;
  const form = h(
    'form',
    { id: 'subscribe' },
    h('label', { for: 'hook-product' }, 'Product'),
    select,
    h('label', { for: 'hook-url' }, 'URL'),
    url,
    events,
    h('button', { type: 'submit' }, 'Subscribe'),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    clearMessages();
    const chosen = [...form.querySelectorAll<HTMLInputElement>('input[name=event]:checked')].map(
      (i) => i.value,
    );
    call('POST', 'subscriptions', { product_id: select.value, url: url.value, events: chosen })
      .then(async (s) => {
        await route();
        notice(shownOnce('Signing secret:', str(s.secret), 'hook-secret'));
      })
      .catch(showError);
  });
  view.replaceChildren(
    h('h2', {}, 'Webhooks'),
    h(
      'p',
      {},
      'Each delivery is a POST signed X-Svc-Signature: sha256=<HMAC-SHA256 of the body under the secret>.',
    ),
    table(['Product', 'URL', 'Events', ''], rows, 'subscriptions'),
    h('h2', {}, 'Subscribe'),
    form,
  );
}

async function route(): Promise<void> {
  const view = byId('view');
  const hash = location.hash.replace(/^#/, '');
  for (const a of byId('tabs').querySelectorAll('a')) {
    a.classList.toggle('current', a.getAttribute('href') === `#${hash.split('/')[0] ?? ''}`);
  }
  if (hash === 'keys') return viewKeys(view);
  if (hash === 'webhooks') return viewWebhooks(view);
  const product = /^product\/(.+)$/.exec(hash);
  return viewCatalogue(view, product === null ? undefined : decodeURIComponent(product[1] ?? ''));
}

async function start(): Promise<void> {
  clearMessages();
  const info = await call('GET', 'portal');
  byId('portal-name').textContent = `${str(info.name)} developer portal`;
  document.title = `${str(info.name)} developer portal`;
  byId('sign-up').hidden = info.signup_enabled !== true;
  let me: Json | undefined;
  try {
    me = await call('GET', 'me');
  } catch (err) {
    if (!(err instanceof CallError && err.status === 401)) throw err;
  }
  const signedIn = me !== undefined;
  byId('signed-out').hidden = signedIn;
  byId('tabs').hidden = !signedIn;
  byId('sign-out').hidden = !signedIn;
  byId('who').textContent = signedIn ? str(me?.email) : '';
  if (!signedIn) {
    byId('view').replaceChildren();
    return;
  }
  await route();
}

function formValues(form: HTMLFormElement): Record<string, string> {
  return Object.fromEntries(
    [...new FormData(form).entries()].map(([k, v]) => [k, typeof v === 'string' ? v : '']),
  );
}

byId('sign-in').addEventListener('submit', (ev) => {
  ev.preventDefault();
  clearMessages();
  call('POST', 'login', formValues(ev.target as HTMLFormElement))
    .then(start)
    .catch(showError);
});
byId('sign-up').addEventListener('submit', (ev) => {
  ev.preventDefault();
  clearMessages();
  const form = ev.target as HTMLFormElement;
  call('POST', 'register', formValues(form))
    .then((r) => {
      form.reset();
      notice(
        r.status === 'active'
          ? 'Signed up: you can sign in now.'
          : 'Signed up: the organisation will approve your account before you can sign in.',
      );
    })
    .catch(showError);
});
byId('sign-out').addEventListener('click', () => {
  call('POST', 'logout').then(start).catch(showError);
});
window.addEventListener('hashchange', () => {
  clearMessages();
  route().catch(showError);
});
start().catch(showError);
