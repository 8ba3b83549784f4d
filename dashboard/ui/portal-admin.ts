/**
 * The Portal tab of the dashboard's web UI: the organisation's developer portal as its admins
 * run it (docs/portal.md), through the admin API `/api/portal/...` (RBAC resource `portal`): the
 * settings, developers (approve, disable, delete), key requests (approve, reject), API products
 * (create or replace, with the policy or API its keys grant, approval and subscribable events;
 * delete; a new feed secret shown once), catalogues, the keys issued through the portal (revoke)
 * and webhook subscriptions. Served as /ui/portal-admin.ts, imported by app.ts, which hands it
 * how to call the dashboard and draw the page again.
 */

import { arr, h, obj, pushButton, selectOf, str, table, type Json } from './dom.ts';
import { submit, thenRerender, type FormEnv } from './forms.ts';

/** A button that runs `action`, shows a refusal, and draws the tab again after success. */
function action(
  env: FormEnv,
  label: string,
  run: () => Promise<void>,
  attrs: Record<string, string> = {},
): HTMLElement {
  return pushButton(label, attrs, () => {
    thenRerender(env, run());
  });
}

/** A secret shown once after an action, until the tab is drawn again after another. */
let shown: { title: string; value: string } | undefined;

function field(id: string, label: string, control: HTMLElement): HTMLElement {
  return h('label', { for: id }, `${label} `, control);
}

function settingsForm(env: FormEnv, settings: Json): HTMLElement {
  const signup = h('input', { id: 'portal-signup', type: 'checkbox' }) as HTMLInputElement;
  signup.checked = settings.signup_enabled === true;
  const approval = selectOf({ id: 'portal-approval' }, [
    ['manual', 'approved by an admin'],
    ['auto', 'active at once'],
  ]);
  approval.value = str(settings.developer_approval, 'manual');
  const form = h(
    'form',
    { id: 'portal-settings', class: 'inline' },
    field('portal-signup', 'Developers may sign up', signup),
    field('portal-approval', 'New developers are', approval),
    h('button', { type: 'submit' }, 'Save settings'),
  ) as HTMLFormElement;
  submit(env, form, () =>
    env.call('PUT', '/api/portal/config', {
      signup_enabled: signup.checked,
      developer_approval: approval.value,
      session_lifetime_s: settings.session_lifetime_s,
    }),
  );
  return form;
}

function productForm(env: FormEnv): HTMLElement {
  const id = h('input', { id: 'product-id', required: '', placeholder: 'orders' }) as HTMLInputElement;
  const name = h('input', {
    id: 'product-name',
    required: '',
    placeholder: 'Orders API',
  }) as HTMLInputElement;
  const grants = selectOf({ id: 'product-grants' }, [
    ['policy_id', 'policy'],
    ['api_id', 'API'],
  ]);
  const target = h('input', {
    id: 'product-target',
    required: '',
    placeholder: 'its ID',
  }) as HTMLInputElement;
  const approval = selectOf({ id: 'product-approval' }, [
    ['manual', 'by an admin'],
    ['auto', 'automatically'],
  ]);
  const events = h('input', {
    id: 'product-events',
    placeholder: 'order.created, order.shipped',
  }) as HTMLInputElement;
  const oas = h('textarea', { id: 'product-oas', rows: '4', placeholder: 'OpenAPI document (JSON or YAML)' });
  const form = h(
    'form',
    { id: 'product-form' },
    field('product-id', 'ID', id),
    field('product-name', 'Name', name),
    field('product-grants', 'Keys grant a', grants),
    target,
    field('product-approval', 'Keys approved', approval),
    field('product-events', 'Subscribable events', events),
    field('product-oas', 'Documentation', oas),
    h('button', { type: 'submit' }, 'Save product'),
  ) as HTMLFormElement;
  submit(env, form, () => {
    const doc = (oas as HTMLTextAreaElement).value.trim();
    const body: Json = {
      name: name.value,
      [grants.value]: target.value,
      key_approval: approval.value,
      subscribable_events: events.value
        .split(',')
        .map((e) => e.trim())
        .filter((e) => e !== ''),
      ...(doc === '' ? {} : { docs: { doc_type: 'oas', documentation: doc } }),
    };
    return env.call('PUT', `/api/portal/products/${encodeURIComponent(id.value)}`, body);
  });
  return form;
}

function catalogueForm(env: FormEnv, products: Json[], current: Json | undefined): HTMLElement {
  const listed = new Set(arr(current?.apis).map((a) => str(a)));
  const boxes = products.map((p) => {
    const box = h('input', { type: 'checkbox', name: 'catalogue-api', value: str(p.id) }) as HTMLInputElement;
    box.checked = listed.has(str(p.id));
    return h('label', {}, box, ` ${str(p.name)}`);
  });
  const form = h(
    'form',
    { id: 'catalogue-form' },
    h('fieldset', {}, h('legend', {}, 'Products developers see'), ...boxes),
    h('button', { type: 'submit' }, 'Save catalogue'),
  ) as HTMLFormElement;
  submit(env, form, () => {
    const apis = [...form.querySelectorAll<HTMLInputElement>('input[name=catalogue-api]:checked')].map(
      (b) => b.value,
    );
    const id = str(current?.id, 'default');
    return env.call('PUT', `/api/portal/catalogues/${encodeURIComponent(id)}`, {
      name: str(current?.name, 'Default'),
      apis,
    });
  });
  return form;
}

/** The Portal tab. */
export async function viewPortalAdmin(env: FormEnv): Promise<Node> {
  const [settings, developers, requests, products, catalogues, keys, subs] = await Promise.all([
    env.call('GET', '/api/portal/config'),
    env.call('GET', '/api/portal/developers?p=-1'),
    env.call('GET', '/api/portal/key-requests?p=-1'),
    env.call('GET', '/api/portal/products?p=-1'),
    env.call('GET', '/api/portal/catalogues?p=-1'),
    env.call('GET', '/api/portal/keys?p=-1'),
    env.call('GET', '/api/portal/subscriptions?p=-1'),
  ]);
  const devs = arr(developers.developers).map(obj);
  const emailOf = (id: unknown): string => str(devs.find((d) => d.id === id)?.email, str(id));
  const prods = arr(products.products).map(obj);
  const secret = shown;
  shown = undefined;

  const devRows = devs.map((d) => {
    const path = `/api/portal/developers/${encodeURIComponent(str(d.id))}`;
    return [
      str(d.email),
      str(d.name),
      h('span', { 'data-testid': `developer-status-${str(d.email)}` }, str(d.status)),
      d.status === 'active'
        ? action(env, 'Disable', () => env.call('PUT', path, { status: 'disabled' }).then(() => undefined))
        : action(env, 'Approve', () => env.call('PUT', path, { status: 'active' }).then(() => undefined)),
      action(env, 'Delete', () => env.call('DELETE', path).then(() => undefined)),
    ];
  });
  const requestRows = arr(requests.key_requests)
    .map(obj)
    .map((r) => {
      const path = `/api/portal/key-requests/${encodeURIComponent(str(r.id))}`;
      return [
        emailOf(r.developer_id),
        str(r.product_id),
        h('span', { 'data-testid': `request-status-${str(r.id)}` }, str(r.status)),
        r.status === 'pending'
          ? h(
              'span',
              {},
              action(env, 'Approve', () => env.call('POST', `${path}/approve`).then(() => undefined)),
              ' ',
              action(env, 'Reject', () => env.call('POST', `${path}/reject`).then(() => undefined)),
            )
          : '',
      ];
    });
  const productRows = prods.map((p) => {
    const path = `/api/portal/products/${encodeURIComponent(str(p.id))}`;
    return [
      str(p.id),
      str(p.name),
      str(p.policy_id) === '' ? `API ${str(p.api_id)}` : `policy ${str(p.policy_id)}`,
      str(p.key_approval),
      arr(p.subscribable_events)
        .map((e) => str(e))
        .join(', '),
      h('code', {}, str(p.feed_url)),
      action(env, 'New feed secret', async () => {
        const r = await env.call('POST', `${path}/actions/feed-secret`);
        shown = { title: `Feed secret of ${str(p.id)}:`, value: str(r.feed_secret) };
      }),
      action(env, 'Delete', () => env.call('DELETE', path).then(() => undefined)),
    ];
  });
  const keyRows = arr(keys.keys)
    .map(obj)
    .map((k) => [
      h('code', {}, `${str(k.key_id).slice(0, 12)}…`),
      emailOf(k.developer_id),
      str(k.product_id),
      action(env, 'Revoke', () =>
        env.call('DELETE', `/api/portal/keys/${encodeURIComponent(str(k.key_id))}`).then(() => undefined),
      ),
    ]);
  const subRows = arr(subs.subscriptions)
    .map(obj)
    .map((s) => [
      emailOf(s.developer_id),
      str(s.product_id),
      h('code', {}, str(s.url)),
      arr(s.events)
        .map((e) => str(e))
        .join(', '),
      action(env, 'Delete', () =>
        env
          .call('DELETE', `/api/portal/subscriptions/${encodeURIComponent(str(s.id))}`)
          .then(() => undefined),
      ),
    ]);
  const cats = arr(catalogues.catalogues).map(obj);
  return h(
    'section',
    { id: 'portal-admin' },
    h('h2', {}, 'Developer portal'),
    secret === undefined
      ? null
      : h(
          'p',
          { class: 'note', id: 'secret-shown' },
          `${secret.title} shown this once (the dashboard keeps only its hash): `,
          h('code', { id: 'secret-value' }, secret.value),
        ),
    settingsForm(env, settings),
    h('h3', {}, 'Developers'),
    table(['E-mail', 'Name', 'Status', '', ''], devRows, 'portal-developers'),
    h('h3', {}, 'Key requests'),
    table(['Developer', 'Product', 'Status', ''], requestRows, 'portal-requests'),
    h('h3', {}, 'API products'),
    table(['ID', 'Name', 'Keys grant', 'Approval', 'Events', 'Feed', '', ''], productRows, 'portal-products'),
    productForm(env),
    h('h3', {}, 'Catalogue'),
    catalogueForm(env, prods, cats.find((c) => c.id === 'default') ?? cats[0]),
    h('h3', {}, 'Keys issued'),
    table(['Key', 'Developer', 'Product', ''], keyRows, 'portal-keys'),
    h('h3', {}, 'Webhook subscriptions'),
    table(['Developer', 'Product', 'URL', 'Events', ''], subRows, 'portal-subscriptions'),
  );
}
