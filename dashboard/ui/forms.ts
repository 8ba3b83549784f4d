/**
 * The web UI's forms for policies and users, through the same `/api/...` calls and RBAC as any
 * tool: create a policy and edit one (`POST` / `PUT /api/portal/policies`), create a user (its key
 * shown once, `POST /api/users`) and reset a user's key (the new one shown once,
 * `POST /api/users/{id}/actions/key/reset`). Served as /ui/forms.ts, imported by app.ts, which
 * hands it how to call the dashboard and draw the page again.
 */

import { h as el, obj, selectOf, str, type Json } from './dom.ts';

/** What app.ts gives the forms. */
export interface FormEnv {
  /** Calls the dashboard with the signed-in key (throws the dashboard's refusal). */
  call(method: string, path: string, body?: unknown): Promise<Json>;
  /** Shows an error above the page. */
  showError(err: unknown): void;
  /** Draws the current tab again. */
  rerender(): Promise<void>;
}

function input(
  id: string,
  label: string,
  attrs: Record<string, string> = {},
): [HTMLElement, HTMLInputElement] {
  const i = el('input', { id, name: id, ...attrs }) as HTMLInputElement;
  return [el('label', {}, `${label} `, i), i];
}

/** A secret shown once (a user's key), by the next drawing of its tab, then forgotten. */
let shownSecret: { title: string; value: string } | undefined;

/** The note that shows a secret once, with a copy button; null when there is none. */
export function secretNote(env: FormEnv): HTMLElement | null {
  const s = shownSecret;
  shownSecret = undefined;
  if (s === undefined) return null;
  const copy = el('button', { type: 'button', id: 'copy-secret' }, 'Copy') as HTMLButtonElement;
  copy.addEventListener('click', () => {
    navigator.clipboard.writeText(s.value).then(
      () => {
        copy.textContent = 'Copied';
      },
      (err: unknown) => {
        env.showError(err);
      },
    );
  });
  return el(
    'p',
    { class: 'note', id: 'secret-shown' },
    `${s.title} Shown this once (the dashboard keeps only its hash): `,
    el('code', { id: 'secret-value' }, s.value),
    ' ',
    copy,
  );
}

/** Draws the page again once `done` succeeds; shows the refusal when it fails. */
export function thenRerender(env: FormEnv, done: Promise<unknown>): void {
  done.then(
    () => env.rerender(),
    (err: unknown) => {
      env.showError(err);
    },
  );
}

/** Runs a form's action when it is sent: errors shown, the page drawn again after success. */
export function submit(env: FormEnv, form: HTMLFormElement, action: () => Promise<unknown>): void {
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    thenRerender(env, action());
  });
}

const number = (i: HTMLInputElement): number => (i.value.trim() === '' ? -1 : Number(i.value));

/**
 * The policy form: empty, it creates a policy; `editing` (a policy as listed) fills it and saves
 * the whole policy again with the fields changed. APIs are given by ID, comma-separated; each
 * gets access to its default version.
 */
export function policyForm(env: FormEnv, editing?: Json): HTMLElement {
  const id = str(editing?._id ?? editing?.id);
  const [nameL, name] = input('policy-name', 'Name', { required: '', value: str(editing?.name) });
  const [rateL, rate] = input('policy-rate', 'Rate', {
    type: 'number',
    min: '0',
    value: str(editing?.rate ?? 100),
  });
  const [perL, per] = input('policy-per', 'per (s)', {
    type: 'number',
    min: '1',
    value: str(editing?.per ?? 60),
  });
  const [quotaL, quota] = input('policy-quota', 'Quota (-1: none)', {
    type: 'number',
    min: '-1',
    value: str(editing?.quota_max ?? -1),
  });
  const [renewL, renew] = input('policy-renewal', 'renewed every (s)', {
    type: 'number',
    min: '0',
    value: str(editing?.quota_renewal_rate ?? 3600),
  });
  const [apisL, apis] = input('policy-apis', 'API IDs', {
    required: '',
    value: Object.keys(obj(editing?.access_rights)).join(', '),
  });
  const form = el(
    'form',
    { id: 'policy-form', class: 'inline-form', 'data-editing': id },
    el('h3', {}, editing === undefined ? 'Create a policy' : `Edit policy ${id}`),
    nameL,
    ' ',
    rateL,
    ' ',
    perL,
    ' ',
    quotaL,
    ' ',
    renewL,
    ' ',
    apisL,
    ' ',
    el('button', { type: 'submit' }, editing === undefined ? 'Create policy' : 'Save policy'),
  ) as HTMLFormElement;
  submit(env, form, async () => {
    const before = obj(editing);
    const rights = obj(before.access_rights);
    const access_rights = Object.fromEntries(
      apis.value
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '')
        .map((api) => [api, rights[api] ?? { api_id: api, api_name: api, versions: ['Default'] }]),
    );
    const { _id: _ignored, ...kept } = before;
    const body = {
      state: 'active',
      ...kept,
      name: name.value,
      rate: Number(rate.value),
      per: Number(per.value),
      quota_max: number(quota),
      quota_renewal_rate: Number(renew.value),
      access_rights,
    };
    if (editing === undefined) await env.call('POST', '/api/portal/policies', body);
    else await env.call('PUT', `/api/portal/policies/${encodeURIComponent(id)}`, { ...body, id });
  });
  return form;
}

/** The permissions a user form offers, each read, write or deny. */
const RESOURCES = ['apis', 'keys', 'policies', 'users', 'certs', 'streams', 'analytics', 'portal'] as const;

/** The user form: an email address and a permission per resource; the new user's key is shown once. */
export function userForm(env: FormEnv): HTMLElement {
  const [emailL, email] = input('user-email', 'Email', { type: 'email', required: '' });
  const selects = RESOURCES.map((r) => {
    const s = selectOf(
      { id: `user-perm-${r}`, name: r },
      ['deny', 'read', 'write'].map((v) => [v, v] as const),
    );
    return [r, s, el('label', {}, `${r} `, s)] as const;
  });
  const form = el(
    'form',
    { id: 'user-form', class: 'inline-form' },
    el('h3', {}, 'Create a user'),
    emailL,
    ' ',
    ...selects.flatMap(([, , label]) => [label, ' ']),
    el('button', { type: 'submit' }, 'Create user'),
  ) as HTMLFormElement;
  submit(env, form, async () => {
    const user_permissions = Object.fromEntries(selects.map(([r, s]) => [r, s.value]));
    const r = await env.call('POST', '/api/users', { email_address: email.value, user_permissions });
    const meta = obj(r.Meta);
    shownSecret = { title: `User ${email.value} created; its key.`, value: str(meta.access_key) };
  });
  return form;
}

/** The button that resets a user's key, after a confirmation; the new key is shown once. */
export function resetUserKeyButton(env: FormEnv, id: string, email: string): HTMLElement {
  const b = el('button', { type: 'button', 'data-reset-user': id }, 'Reset key') as HTMLButtonElement;
  b.addEventListener('click', () => {
    if (!window.confirm(`Reset the key of ${email}? The old key stops working at once.`)) return;
    env
      .call('POST', `/api/users/${encodeURIComponent(id)}/actions/key/reset`)
      .then(async (r) => {
        shownSecret = { title: `New key of ${email}.`, value: str(obj(r.Meta).access_key) };
        await env.rerender();
      })
      .catch((err: unknown) => {
        env.showError(err);
      });
  });
  return b;
}
