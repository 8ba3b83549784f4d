/**
 * The web UI's Keys tab: the organisation's keys, masked, with their APIs, policies and quota; a
 * key's quota reset and revocation; a new key from a policy, its value shown once with a copy
 * button. Served as /ui/keys.ts, imported by app.ts.
 */

import { call, CallError, clearError, onSubmit, showError } from './call.ts';
import { arr, h, obj, pushButton, selectOf, str, table, type Json } from './dom.ts';
import { searchable } from './lists.ts';

/** A key or hash with its middle masked. */
function masked(k: string): string {
  return k.length <= 10 ? '****' : `${k.slice(0, 6)}****${k.slice(-4)}`;
}

/** A key just created: its value shown once, by the next render of the keys view, then forgotten. */
let shownKey: { value: string; hash: string; policy: string } | undefined;

/** A button that runs `action` (disabled meanwhile), shows a refusal, and draws the view again. */
function actionButton(
  rerender: () => Promise<void>,
  label: string,
  attrs: Record<string, string>,
  action: () => Promise<unknown>,
): HTMLElement {
  return pushButton(label, attrs, (b) => {
    clearError();
    b.disabled = true;
    void action().then(rerender, (err: unknown) => {
      showError(err);
      b.disabled = false;
    });
  });
}

function quotaText(k: Json): string {
  const max = typeof k.quota_max === 'number' ? k.quota_max : -1;
  if (max < 0) return 'unlimited';
  return `${str(k.quota_remaining, String(max))} / ${String(max)}`;
}

/**
 * The form that creates a key from a policy (`POST /api/keys` with `apply_policies`); the new
 * key's value is shown once, with a copy button. A user who may not read policies sees the refusal.
 */
async function keyCreate(rerender: () => Promise<void>): Promise<Node> {
  let policies: Json[];
  try {
    policies = arr((await call('GET', '/api/portal/policies?p=-1')).Data).map(obj);
  } catch (err) {
    const message = err instanceof CallError ? `${String(err.status)}: ${err.message}` : String(err);
    return h('p', { class: 'note', id: 'key-create' }, `Creating a key needs the policies: ${message}`);
  }
  const policy = selectOf({ id: 'key-policy', 'aria-label': 'Policy', required: '' }, [
    ['', 'Policy…'],
    ...policies.map((p) => [str(p._id ?? p.id), `${str(p.name)} (${str(p._id ?? p.id)})`] as const),
  ]);
  const alias = h('input', { id: 'key-alias', name: 'alias', placeholder: 'alias' }) as HTMLInputElement;
  const form = h(
    'form',
    { id: 'key-create' },
    h('label', {}, 'New key from ', policy),
    ' ',
    alias,
    ' ',
    h('button', { type: 'submit' }, 'Create key'),
  );
  onSubmit(form, async () => {
    const made = await call('POST', '/api/keys', {
      apply_policies: [policy.value],
      ...(alias.value.trim() === '' ? {} : { alias: alias.value.trim() }),
    });
    shownKey = { value: str(made.key_id), hash: str(made.key_hash), policy: policy.value };
    await rerender();
  });
  return form;
}

/** The Keys tab: the organisation's keys (masked), their quota reset and revocation, and a new key. */
export async function viewKeys(rerender: () => Promise<void>): Promise<Node> {
  const list = await call('GET', '/api/keys?p=-1');
  const ids = arr(obj(list.data).keys).map((k) => str(k));
  const shown = shownKey;
  shownKey = undefined;
  const rows = await Promise.all(
    ids.slice(0, 100).map(async (id) => {
      const k = obj((await call('GET', `/api/keys/${encodeURIComponent(id)}?hashed=true`)).data);
      const path = `/api/keys/${encodeURIComponent(id)}`;
      return [
        h('code', { class: 'masked-key' }, masked(id)),
        str(k.alias),
        Object.keys(obj(k.access_rights)).join(', '),
        arr(k.apply_policies)
          .map((x) => str(x))
          .join(', '),
        quotaText(k),
        k.is_inactive === true ? 'inactive' : 'active',
        h(
          'span',
          { class: 'actions' },
          actionButton(rerender, 'Reset quota', { 'data-reset-key': id }, () =>
            call('POST', `${path}/reset?hashed=true`),
          ),
          ' ',
          actionButton(rerender, 'Revoke', { 'data-revoke-key': id }, async () => {
            if (
              !window.confirm(
                `Revoke key ${masked(id)}${str(k.alias) === '' ? '' : ` (${str(k.alias)})`}? It stops working at once.`,
              )
            )
              return;
            await call('DELETE', `${path}?hashed=true`);
          }),
        ),
      ];
    }),
  );
  let created: HTMLElement | null = null;
  if (shown !== undefined) {
    const copy = h('button', { type: 'button', id: 'copy-key' }, 'Copy') as HTMLButtonElement;
    copy.addEventListener('click', () => {
      void navigator.clipboard.writeText(shown.value).then(
        () => {
          copy.textContent = 'Copied';
        },
        (err: unknown) => {
          showError(new Error(`Copy failed: ${err instanceof Error ? err.message : String(err)}`));
        },
      );
    });
    created = h(
      'p',
      { class: 'note', id: 'key-created' },
      `Key ${masked(shown.hash)} created from policy ${shown.policy}. Its value, shown this once (the dashboard keeps only its hash): `,
      h('code', { id: 'key-value' }, shown.value),
      ' ',
      copy,
    );
  }
  return h(
    'section',
    {},
    h('h2', {}, 'Keys'),
    created,
    await keyCreate(rerender),
    searchable(table(['Key', 'Alias', 'APIs', 'Policies', 'Quota', 'State', ''], rows, 'keys')),
    ids.length > 100 ? h('p', {}, `First 100 of ${String(ids.length)} keys.`) : null,
  );
}
