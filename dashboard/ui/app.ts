/**
 * The dashboard's web UI: one ES module, served after type stripping (dashboard/api/ui.ts). It
 * signs in with a user's key (kept in sessionStorage, sent in the Authorization header) and shows
 * the organisation's APIs (with the OAuth clients of OAuth APIs), policies, keys (masked), users,
 * audit log, streams APIs and traffic analytics (charts drawn with uPlot, each with its table) through the same `/api/...` endpoints as any tool, so the
 * dashboard's RBAC decides what the page may do: a refused call shows the dashboard's own message. Views are built with DOM calls and textContent
 * (never HTML from data). Routing is the location hash: `#apis`, `#api/<id>`, `#policies`, ...
 */

import { viewAnalytics, stopAnalytics, type AnalyticsEnv } from './analytics.ts';
import { arr, byId, h, obj, str, table, type Json } from './dom.ts';
import { attempt, call, CallError, clearError, key, KEY_STORAGE, onSubmit, showError } from './call.ts';
import { policyForm, resetUserKeyButton, secretNote, userForm, type FormEnv } from './forms.ts';
import { viewPortalAdmin } from './portal-admin.ts';
import { viewKeys } from './keys.ts';
import { searchable } from './lists.ts';

/** The answer of `/api/me`. */
interface Me {
  org_id: string;
  org_name: string;
  user_id: string;
  email_address: string;
  admin: boolean;
  system_user: boolean;
  permissions: Record<string, string>;
}

/**
 * The cluster resource that manages an API, if the operator wrote it: the operator derives an
 * API's ID from the resource's `namespace/name` (base64url) and sets the OperatorContext's
 * `user_owners` on every object it creates.
 */
function managedBy(id: string, owners: unknown[], kind: string): string | undefined {
  let decoded: string;
  try {
    const b64 = id.replaceAll('-', '+').replaceAll('_', '/');
    decoded = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  } catch {
    decoded = '';
  }
  const dns = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
  const [ns, name, extra] = decoded.split('/');
  if (extra !== undefined || ns === undefined || name === undefined || !dns.test(ns) || !dns.test(name)) {
    return owners.length > 0 ? 'operator (OperatorContext owners)' : undefined;
  }
  return `${kind} ${ns}/${name}`;
}

/**
 * The command that edits the cluster resource `managedBy` names (`ApiDefinition ns/name`), or
 * undefined when it names none.
 */
function kubectlHint(managed: string | undefined): string | undefined {
  const m = /^(\w+) ([^/ ]+)\/([^/ ]+)$/.exec(managed ?? '');
  if (m === null) return undefined;
  return `kubectl -n ${m[2] ?? ''} edit ${(m[1] ?? '').toLowerCase()}/${m[3] ?? ''}`;
}

/** Who manages an object, with the command that edits its cluster resource beneath. */
function managedCell(managed: string | undefined): HTMLElement {
  const hint = kubectlHint(managed);
  return h(
    'span',
    { class: 'managed' },
    managed ?? 'dashboard',
    hint === undefined ? null : h('br'),
    hint === undefined ? null : h('code', { class: 'kubectl-hint' }, hint),
  );
}

/** One API as the list and the detail view show it, from the classic form of `/api/apis`. */
interface ApiRow {
  id: string;
  name: string;
  listenPath: string;
  active: boolean;
  oas: boolean;
  managedBy: string | undefined;
  record: Json;
}

function apiRow(record: Json): ApiRow {
  const def = obj(record.api_definition);
  const oas = def.is_oas === true;
  const id = str(def.api_id);
  return {
    id,
    name: str(def.name, id),
    listenPath: str(obj(def.proxy).listen_path),
    active: def.active !== false,
    oas,
    managedBy: managedBy(id, arr(record.user_owners), oas ? 'SvcOasApiDefinition' : 'ApiDefinition'),
    record,
  };
}

const stateCell = (active: boolean): HTMLElement =>
  h('span', { class: active ? 'state-active' : 'state-inactive' }, active ? 'active' : 'inactive');

async function viewApis(): Promise<Node> {
  const list = await call('GET', '/api/apis?p=-1');
  const rows = arr(list.apis).map((r) => apiRow(obj(r)));
  return h(
    'section',
    {},
    h('h2', {}, 'APIs'),
    searchable(
      table(
        ['Name', 'Listen path', 'Type', 'State', 'Managed by'],
        rows.map((a) => [
          h('a', { href: `#api/${encodeURIComponent(a.id)}`, 'data-api-id': a.id }, a.name),
          h('code', {}, a.listenPath),
          a.oas ? 'OAS' : 'classic',
          stateCell(a.active),
          managedCell(a.managedBy),
        ]),
        'apis',
      ),
    ),
  );
}

/** A client's secret just registered: shown once, by the next render of its API, then forgotten. */
let shownSecret: { apiId: string; clientId: string; secret: string } | undefined;

/**
 * The OAuth clients of an API with `use_oauth2`: the list, a form that registers one (its secret
 * shown once), and a delete button per client. A user who may not read keys sees the refusal here,
 * the rest of the API's page still shown.
 */
async function oauthClients(apiId: string): Promise<Node> {
  const base = `/api/apis/oauth/${encodeURIComponent(apiId)}`;
  const title = h('h3', {}, 'OAuth clients');
  let apps: Json[];
  try {
    apps = arr((await call('GET', `${base}?p=-1`)).apps).map(obj);
  } catch (err) {
    const message = err instanceof CallError ? `${String(err.status)}: ${err.message}` : String(err);
    return h('section', { id: 'oauth-clients' }, title, h('p', { class: 'note' }, message));
  }
  const secret = shownSecret?.apiId === apiId ? shownSecret : undefined;
  shownSecret = undefined;
  const rows = apps.map((c) => {
    const clientId = str(c.client_id);
    const del = h(
      'button',
      { type: 'button', 'data-delete-client': clientId },
      'Delete',
    ) as HTMLButtonElement;
    del.addEventListener('click', () => {
      clearError();
      del.disabled = true;
      void call('DELETE', `${base}/${encodeURIComponent(clientId)}`).then(render, (err: unknown) => {
        showError(err);
        del.disabled = false;
      });
    });
    return [
      h('code', {}, clientId),
      str(c.description),
      h('code', {}, str(c.policy_id)),
      str(c.redirect_uri),
      del,
    ];
  });
  const policy = h('input', {
    id: 'oauth-policy',
    name: 'policy_id',
    placeholder: 'policy ID',
    required: '',
  });
  const description = h('input', {
    id: 'oauth-description',
    name: 'description',
    placeholder: 'description',
  });
  const form = h(
    'form',
    { id: 'oauth-register' },
    policy,
    ' ',
    description,
    ' ',
    h('button', { type: 'submit' }, 'Register client'),
  );
  onSubmit(form, async () => {
    const made = await call('POST', base, {
      policy_id: (policy as HTMLInputElement).value.trim(),
      description: (description as HTMLInputElement).value.trim(),
    });
    shownSecret = { apiId, clientId: str(made.client_id), secret: str(made.secret) };
    await render();
  });
  return h(
    'section',
    { id: 'oauth-clients' },
    title,
    secret === undefined
      ? null
      : h(
          'p',
          { class: 'note', id: 'oauth-secret' },
          `Client ${secret.clientId} registered. Its secret, shown this once (the dashboard keeps only a hash): `,
          h('code', {}, secret.secret),
        ),
    apps.length > 0
      ? table(['Client ID', 'Description', 'Policy', 'Redirect URI', ''], rows, 'oauth-clients')
      : h('p', {}, 'No OAuth clients.'),
    form,
  );
}

async function viewApi(id: string): Promise<Node> {
  const a = apiRow(await call('GET', `/api/apis/${encodeURIComponent(id)}`));
  const path = a.oas ? `/api/apis/oas/${encodeURIComponent(id)}` : `/api/apis/${encodeURIComponent(id)}`;
  const full = a.oas ? await call('GET', path) : a.record;
  const toggle = h(
    'button',
    { type: 'button', id: 'toggle-active' },
    a.active ? 'Deactivate' : 'Activate',
  ) as HTMLButtonElement;
  if (a.managedBy !== undefined) toggle.disabled = true;
  toggle.addEventListener('click', () => {
    toggle.disabled = true;
    attempt(
      async () => {
        if (a.oas) {
          const doc = await call('GET', path);
          const info = obj(obj(doc['x-svc-api-gateway']).info);
          info.state = { ...obj(info.state), active: !a.active };
          await call('PUT', path, doc);
        } else {
          const def = { ...obj(a.record.api_definition), active: !a.active };
          await call('PUT', path, {
            api_definition: def,
            user_owners: arr(a.record.user_owners),
            user_group_owners: arr(a.record.user_group_owners),
          });
        }
        await render();
      },
      () => {
        toggle.disabled = false;
      },
    );
  });
  return h(
    'section',
    { 'data-testid': 'api' },
    h('p', {}, h('a', { href: '#apis' }, '← APIs')),
    h('h2', {}, a.name),
    h(
      'dl',
      {},
      h('dt', {}, 'ID'),
      h('dd', {}, h('code', {}, a.id)),
      h('dt', {}, 'Listen path'),
      h('dd', {}, h('code', {}, a.listenPath)),
      h('dt', {}, 'Type'),
      h('dd', {}, a.oas ? 'OAS' : 'classic'),
      h('dt', {}, 'State'),
      h('dd', { id: 'api-state' }, stateCell(a.active)),
      h('dt', {}, 'Managed by'),
      h('dd', { id: 'api-managed-by' }, managedCell(a.managedBy)),
      h('dt', {}, 'Owners'),
      h(
        'dd',
        {},
        arr(a.record.user_owners)
          .map((o) => str(o))
          .join(', ') || 'none',
      ),
    ),
    a.managedBy !== undefined
      ? h(
          'p',
          { class: 'note', id: 'read-only' },
          `Read-only here: managed in the cluster by ${a.managedBy}. Edit the resource; the operator reverts edits made in the dashboard.`,
          kubectlHint(a.managedBy) === undefined ? null : ' ',
          kubectlHint(a.managedBy) === undefined
            ? null
            : h('code', { id: 'kubectl-hint' }, kubectlHint(a.managedBy) ?? ''),
        )
      : null,
    h('p', {}, toggle),
    obj(a.record.api_definition).use_oauth2 === true ? await oauthClients(a.id) : null,
    h('h3', {}, 'Definition'),
    h('pre', {}, JSON.stringify(full, null, 2)),
  );
}

/** The forms' way to the dashboard (forms.ts). */
const formEnv: FormEnv = { call, showError, rerender: () => render() };

/** The policy being edited (its Edit button), until it is saved or the tab is left. */
let editingPolicy: Json | undefined;

async function viewPolicies(): Promise<Node> {
  const list = await call('GET', '/api/portal/policies?p=-1');
  const editing = editingPolicy;
  editingPolicy = undefined;
  return h(
    'section',
    {},
    h('h2', {}, 'Policies'),
    policyForm(formEnv, editing),
    searchable(
      table(
        ['Name', 'ID', 'State', 'Rate', 'Quota', 'APIs', ''],
        arr(list.Data).map((x) => {
          const p = obj(x);
          const edit = h('button', { type: 'button', 'data-edit-policy': str(p._id ?? p.id) }, 'Edit');
          edit.addEventListener('click', () => {
            editingPolicy = p;
            void render();
          });
          return [
            str(p.name),
            h('code', {}, str(p._id ?? p.id)),
            str(p.state, 'active'),
            `${str(p.rate, '-')} / ${str(p.per, '-')} s`,
            str(p.quota_max, '-'),
            Object.keys(obj(p.access_rights)).join(', '),
            edit,
          ];
        }),
        'policies',
      ),
    ),
  );
}

function permissionsText(p: unknown): string {
  const perms = obj(p);
  if (perms.IsAdmin === 'admin') return 'admin';
  return Object.entries(perms)
    .map(([k, v]) => `${k}: ${str(v)}`)
    .join(', ');
}

async function viewUsers(): Promise<Node> {
  const list = await call('GET', '/api/users?p=-1');
  return h(
    'section',
    {},
    h('h2', {}, 'Users'),
    secretNote(formEnv),
    userForm(formEnv),
    searchable(
      table(
        ['Email', 'ID', 'Permissions', 'System user', 'State', ''],
        arr(list.users).map((x) => {
          const u = obj(x);
          return [
            str(u.email_address),
            h('code', {}, str(u.id)),
            permissionsText(u.user_permissions),
            u.system_user === true ? 'yes' : 'no',
            u.active === false ? 'inactive' : 'active',
            resetUserKeyButton(formEnv, str(u.id), str(u.email_address)),
          ];
        }),
        'users',
      ),
    ),
  );
}

async function viewAudit(): Promise<Node> {
  const list = await call('GET', '/api/audit?p=-1');
  const entries = arr(list.entries).map(obj).reverse();
  return h(
    'section',
    {},
    h('h2', {}, 'Audit log'),
    searchable(
      table(
        ['When', 'Who', 'Action', 'Kind', 'Object', 'Before', 'After'],
        entries.map((e) => [
          str(e.at),
          str(e.actor),
          str(e.action),
          str(e.kind),
          h('code', {}, str(e.object_id)),
          h('code', {}, str(e.before_hash).slice(0, 12) || '-'),
          h('code', {}, str(e.after_hash).slice(0, 12) || '-'),
        ]),
        'audit',
      ),
    ),
  );
}

async function viewStreams(): Promise<Node> {
  const list = await call('GET', '/api/apis/streams?p=-1');
  const sections = arr(list.apis).map((x) => {
    const doc = obj(x);
    const ext = obj(doc['x-svc-api-gateway']);
    const info = obj(ext.info);
    const streams = obj(obj(doc['x-svc-streaming']).streams);
    const kindOf = (v: unknown): string => Object.keys(obj(v)).join(', ') || '-';
    return h(
      'section',
      { class: 'streams-api' },
      h('h3', {}, str(info.name, str(obj(doc.info).title))),
      h('p', {}, 'Listen path: ', h('code', {}, str(obj(obj(ext.server).listenPath).value))),
      table(
        ['Stream', 'Input', 'Output'],
        Object.entries(streams).map(([name, s]) => [name, kindOf(obj(s).input), kindOf(obj(s).output)]),
        'streams',
      ),
    );
  });
  return h(
    'section',
    {},
    h('h2', {}, 'Streams APIs'),
    ...(sections.length > 0 ? sections : [h('p', {}, 'No streams APIs.')]),
  );
}

/** The analytics view's way to the dashboard (analytics.ts). */
const analyticsEnv: AnalyticsEnv = {
  call,
  rerender: () => render(),
  orgName: () => me?.org_name ?? '',
};

const TABS: readonly { hash: string; label: string; view: () => Promise<Node> }[] = [
  { hash: 'apis', label: 'APIs', view: viewApis },
  { hash: 'policies', label: 'Policies', view: viewPolicies },
  { hash: 'keys', label: 'Keys', view: () => viewKeys(() => render()) },
  { hash: 'users', label: 'Users', view: viewUsers },
  { hash: 'audit', label: 'Audit log', view: viewAudit },
  { hash: 'streams', label: 'Streams', view: viewStreams },
  { hash: 'analytics', label: 'Analytics', view: () => viewAnalytics(analyticsEnv) },
  { hash: 'portal', label: 'Portal', view: () => viewPortalAdmin(formEnv) },
];

let me: Me | undefined;

function signedOut(message?: string): void {
  me = undefined;
  sessionStorage.removeItem(KEY_STORAGE);
  byId('sign-in').hidden = false;
  byId('tabs').hidden = true;
  byId('sign-out').hidden = true;
  byId('who').textContent = '';
  byId('view').replaceChildren();
  if (message === undefined) clearError();
  else showError(new Error(message));
}

async function render(): Promise<void> {
  const view = byId('view');
  if (key() === null) {
    signedOut();
    return;
  }
  try {
    me ??= (await call('GET', '/api/me')) as unknown as Me;
  } catch (err) {
    signedOut(
      err instanceof CallError && err.status === 401
        ? 'Sign-in refused: this key is not a user key of this dashboard'
        : `Sign-in failed: ${err instanceof Error ? err.message : String(err)}`,
    );
    return;
  }
  byId('sign-in').hidden = true;
  byId('sign-out').hidden = false;
  byId('who').textContent =
    `${me.email_address} · organisation ${me.org_name} (${me.org_id})${me.admin ? ' · admin' : ''}`;
  const hash = decodeURIComponent(location.hash.replace(/^#/, '')) || 'apis';
  const tabs = byId('tabs');
  tabs.hidden = false;
  tabs.replaceChildren(
    ...TABS.map((t) =>
      h(
        'a',
        {
          href: `#${t.hash}`,
          class:
            hash.split('?')[0] === t.hash || (t.hash === 'apis' && hash.startsWith('api/')) ? 'current' : '',
        },
        t.label,
      ),
    ),
  );
  stopAnalytics();
  try {
    const tab = TABS.find((t) => t.hash === hash.split('?')[0]);
    const node = hash.startsWith('api/') ? await viewApi(hash.slice(4)) : await (tab?.view ?? viewApis)();
    view.replaceChildren(node);
  } catch (err) {
    view.replaceChildren();
    showError(err);
  }
}

byId('sign-in').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = byId('key') as HTMLInputElement;
  const value = input.value.trim();
  if (value === '') return;
  sessionStorage.setItem(KEY_STORAGE, value);
  input.value = '';
  clearError();
  void render();
});
byId('sign-out').addEventListener('click', () => {
  signedOut();
});
window.addEventListener('hashchange', () => {
  clearError();
  void render();
});
void render();
