/** A dashboard on a free port over a given store, and a small client, for tests. */
import assert from 'node:assert/strict';
import { recordingLogger, type LoggedLine } from '../../lib/testing/log.ts';
import type { DashboardConfig } from '../config/schema.ts';
import { startDashboard, type DashboardServer } from '../server.ts';
import type { Store } from '../store/store.ts';
import { sqliteFixture, type StoreFixture } from './stores.ts';

/** The admin secret of test dashboards. */
export const ADMIN_SECRET = 'test-admin-secret-0123456789';

/** A response as a test looks at it. */
export interface Res {
  status: number;
  body: Record<string, unknown>;
  text: string;
  headers: Headers;
}

/** A running test dashboard. */
export interface TestDashboard {
  url: string;
  lines: LoggedLine[];
  /** Calls the dashboard; `auth` is a user key, `{ admin: true }` sends the admin secret. */
  call(
    method: string,
    path: string,
    opts?: { auth?: string | { admin: true }; body?: unknown; contentType?: string },
  ): Promise<Res>;
  close(): Promise<void>;
}

/** Starts a dashboard on 127.0.0.1:0 over `store` with `config` on top of test defaults. */
export async function startTestDashboard(
  store: Store,
  config: Partial<DashboardConfig> = {},
): Promise<TestDashboard> {
  const log = recordingLogger();
  const full: DashboardConfig = {
    admin_secret: ADMIN_SECRET,
    listen_address: '127.0.0.1',
    listen_port: 0,
    storage: store.kind,
    data_dir: 'unused',
    page_size: 10,
    streaming_enabled: true,
    allow_explicit_policy_id: true,
    enable_duplicate_slugs: false,
    api_writes_system_users_only: false,
    metrics_enabled: true,
    analytics_minute_retention_hours: 48,
    analytics_hour_retention_days: 90,
    analytics_detail_retention_hours: 24,
    analytics_detail_max_records: 1000,
    log_level: 'info',
    shutdown_timeout_ms: 1000,
    ...config,
  };
  const server: DashboardServer = await startDashboard({
    config: full,
    store,
    log,
    version: 'test',
    now: Date.now,
  });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    url,
    lines: log.lines,
    call: async (method, path, opts = {}) => {
      const headers: Record<string, string> = {};
      if (typeof opts.auth === 'string') headers.authorization = opts.auth;
      else if (opts.auth !== undefined) headers['admin-auth'] = ADMIN_SECRET;
      let body: string | undefined;
      if (opts.body !== undefined) {
        body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
        headers['content-type'] = opts.contentType ?? 'application/json';
      }
      const r = await fetch(url + path, { method, headers, ...(body === undefined ? {} : { body }) });
      const text = await r.text();
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // not JSON (metrics)
      }
      return { status: r.status, body: parsed, text, headers: r.headers };
    },
    close: () => server.close(),
  };
}

/**
 * Creates the organisation `org` (with the admin secret) and an admin user in it; returns the
 * user's access key, what a test sends as `auth` to act as that organisation's admin.
 */
export async function orgAdmin(d: TestDashboard, org: string): Promise<string> {
  const created = await d.call('POST', '/admin/organisations', {
    auth: { admin: true },
    body: { id: org, owner_name: org },
  });
  if (created.status !== 200)
    throw new Error(`organisation ${org}: ${String(created.status)} ${created.text}`);
  const user = await d.call('POST', '/admin/users', {
    auth: { admin: true },
    body: { org_id: org, email_address: `admin@${org}`, user_permissions: { IsAdmin: 'admin' } },
  });
  if (user.status !== 200) throw new Error(`admin user of ${org}: ${String(user.status)} ${user.text}`);
  return String((user.body.Meta as Record<string, unknown>).access_key);
}

/** A test dashboard over its own fresh store, and how to end both. */
export interface FreshDashboard {
  d: TestDashboard;
  store: Store;
  /** Stops the dashboard, closes the store and stops the fixture (removing its data). */
  close: () => Promise<void>;
}

/**
 * A dashboard over a fresh store of `fx` (SQLite by default) with `config` on top of the test
 * defaults: what a file of tests starts in its `before` hook and ends with `close` in `after`.
 */
export async function startFreshDashboard(
  fx: StoreFixture = sqliteFixture(),
  config: Partial<DashboardConfig> = {},
): Promise<FreshDashboard> {
  const store = await fx.open(await fx.fresh());
  const d = await startTestDashboard(store, config);
  return {
    d,
    store,
    close: async () => {
      await d.close();
      await store.close();
      await fx.stop();
    },
  };
}

/**
 * A dashboard over a fresh SQLite store with the organisation `org` (owner `owner`, cname
 * `<org>.example.com`); `user` creates a user of it (addUser). What a file of web UI tests starts
 * in its `before` hook.
 */
export async function startTenantDashboard(
  org: string,
  owner: string,
): Promise<
  FreshDashboard & {
    user: (perms: Record<string, string>, extra?: Record<string, unknown>) => Promise<string>;
  }
> {
  const world = await startFreshDashboard();
  const { d } = world;
  const created = await d.call('POST', '/admin/organisations', {
    auth: { admin: true },
    body: { id: org, owner_name: owner, cname: `${org}.example.com` },
  });
  assert.equal(created.status, 200, created.text);
  return { ...world, user: (perms, extra = {}) => addUser(d, org, perms, extra) };
}

let users = 0;

/**
 * Creates a user of the organisation `org` with `perms` (and `extra` fields of the user, such as
 * `system_user`) through the admin API, asserting it is created; returns the user's access key.
 * Each user gets its own e-mail address (`u<n>@<org>`).
 */
export async function addUser(
  d: TestDashboard,
  org: string,
  perms: Record<string, string>,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const r = await d.call('POST', '/admin/users', {
    auth: { admin: true },
    body: { org_id: org, email_address: `u${String(++users)}@${org}`, user_permissions: perms, ...extra },
  });
  assert.equal(r.status, 200, r.text);
  return String((r.body.Meta as Record<string, unknown>).access_key);
}

/**
 * The API `id` of the caller `auth`'s organisation, OAuth with client credentials (keyless when
 * `oauth` is false), and the policy `<id>-clients` granting it (100 requests a minute, no quota,
 * with `policy` on top), both asserted written: what an OAuth client is registered against.
 */
export async function addOauthApi(
  d: TestDashboard,
  auth: string,
  id: string,
  opts: { oauth?: boolean; policy?: Record<string, unknown> } = {},
): Promise<{ apiId: string; policyId: string }> {
  const oauth = opts.oauth ?? true;
  const api = await d.call('POST', '/api/apis', {
    auth,
    body: {
      api_definition: {
        api_id: id,
        name: id,
        use_keyless: !oauth,
        ...(oauth ? { use_oauth2: true, oauth_meta: { allowed_access_types: ['client_credentials'] } } : {}),
        proxy: { listen_path: `/${id}/`, target_url: 'http://upstream.test', strip_listen_path: true },
      },
    },
  });
  assert.equal(api.status, 200, api.text);
  const policy = await d.call('POST', '/api/portal/policies', {
    auth,
    body: {
      id: `${id}-clients`,
      name: `${id} clients`,
      state: 'active',
      rate: 100,
      per: 60,
      quota_max: -1,
      access_rights: { [id]: { api_id: id, api_name: id, versions: ['Default'] } },
      ...opts.policy,
    },
  });
  assert.equal(policy.status, 200, policy.text);
  return { apiId: id, policyId: `${id}-clients` };
}

/**
 * A dashboard over a fresh SQLite store with the organisation `org` and its admin (`orgAdmin`):
 * what a file of tests against one organisation starts in its `before` hook; `close` stops the
 * dashboard and removes the store.
 */
export async function startOrgDashboard(
  org: string,
): Promise<{ d: TestDashboard; admin: string; close: () => Promise<void> }> {
  const { d, close } = await startFreshDashboard();
  return { d, admin: await orgAdmin(d, org), close };
}
