/**
 * A real dashboard process (mode pro) for suites: `node dashboard/main.ts` on a free port over
 * SQLite (a data directory) or PostgreSQL (a URL), and the admin calls that set up tenants.
 */
import { generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import { freePort, httpRequest, startNode, waitFor, type Proc } from './processes.ts';

/**
 * A license for an operator in mode pro, signed with a key pair made here, and the operator
 * environment that carries it: the key and the public key it is verified with (unsigned keys
 * are refused, and a signed one needs the public key).
 */
export async function signedLicense(
  subject: string,
): Promise<{ SVC_OPERATOR_LICENSEKEY: string; SVC_OPERATOR_LICENSE_PUBLIC_KEY: string }> {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const key = await new SignJWT({ sub: subject })
    .setProtectedHeader({ alg: 'ES256' })
    .setIssuedAt()
    .setExpirationTime('1d')
    .sign(pair.privateKey);
  return {
    SVC_OPERATOR_LICENSEKEY: key,
    SVC_OPERATOR_LICENSE_PUBLIC_KEY: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** The admin secret of suite dashboards. */
export const DASHBOARD_ADMIN_SECRET = 'e2e-dashboard-admin-secret-0123';

/** A running dashboard process. */
export interface DashboardProc extends Proc {
  url: string;
  port: number;
}

/** Starts a dashboard and waits until `/ready` answers 200. */
export async function startDashboardProc(opts: {
  name: string;
  logDir: string;
  /** SQLite data directory (default storage). */
  dataDir?: string;
  /** PostgreSQL URL: the storage is PostgreSQL. */
  postgresUrl?: string;
  port?: number;
  args?: string[];
}): Promise<DashboardProc> {
  const port = opts.port ?? (await freePort());
  const storage =
    opts.postgresUrl === undefined
      ? ['--data-dir', opts.dataDir ?? 'data']
      : ['--storage', 'postgres', '--postgres-url', opts.postgresUrl];
  const proc = startNode({
    name: opts.name,
    script: 'dashboard/main.ts',
    args: [
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      ...storage,
      '--allow-explicit-policy-id=true',
      '--enable-duplicate-slugs=true',
      '--streaming-enabled=true',
      ...(opts.args ?? []),
    ],
    env: { SVC_DB_ADMIN_SECRET: DASHBOARD_ADMIN_SECRET },
    logDir: opts.logDir,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${opts.name} /ready (log ${proc.logFile})`, async () => {
    try {
      return (await httpRequest(`${url}/ready`)).status === 200;
    } catch {
      return false;
    }
  });
  return { ...proc, url, port };
}

/** A JSON call to a dashboard; `auth` is a user key or `admin`. */
export async function dashboardCall(
  url: string,
  method: string,
  path: string,
  opts: { auth?: string; admin?: boolean; body?: unknown; contentType?: string } = {},
): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const headers: Record<string, string> = {};
  if (opts.admin === true) headers['admin-auth'] = DASHBOARD_ADMIN_SECRET;
  if (opts.auth !== undefined) headers.authorization = opts.auth;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] = opts.contentType ?? 'application/json';
  }
  const r = await httpRequest(url + path, { method, headers, ...(body === undefined ? {} : { body }) });
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(r.body) as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return { status: r.status, body: parsed, text: r.body };
}

/** A developer's JSON call to a portal's API: its status, body (parsed) and text. */
export type PortalCall = (
  method: string,
  path: string,
  body?: unknown,
  token?: string,
) => Promise<{ status: number; body: Record<string, unknown>; text: string }>;

/**
 * A developer's JSON calls to the portal API of organisation `org` on the dashboard at `url`
 * (`/portal/<org>/api<path>`), with the developer's bearer token when one is given.
 */
export function portalCaller(url: string, org: string): PortalCall {
  const base = `${url}/portal/${org}/api`;
  return async (method, path, body, token) => {
    const r = await httpRequest(`${base}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: r.status, body: JSON.parse(r.body || '{}') as Record<string, unknown>, text: r.body };
  };
}

/** An organisation and its users' keys and IDs. */
export interface DashboardTenant {
  org: string;
  /** The operator's user: system user, admin. */
  system: { id: string; key: string };
  /** A human with read access to everything. */
  reader: { id: string; key: string };
}

/** Creates an organisation with a system user (the operator) and a read-only user. */
export async function createTenant(url: string, org: string): Promise<DashboardTenant> {
  const o = await dashboardCall(url, 'POST', '/admin/organisations', {
    admin: true,
    body: { id: org, owner_name: org, cname: `${org}.example.com` },
  });
  if (o.status !== 200) throw new Error(`organisation ${org}: ${String(o.status)} ${o.text}`);
  const user = async (email: string, body: Record<string, unknown>): Promise<{ id: string; key: string }> => {
    const r = await dashboardCall(url, 'POST', '/admin/users', {
      admin: true,
      body: { org_id: org, email_address: email, ...body },
    });
    if (r.status !== 200) throw new Error(`user ${email}: ${String(r.status)} ${r.text}`);
    const meta = r.body.Meta as Record<string, unknown>;
    return { id: String(meta.id), key: String(meta.access_key) };
  };
  const all = (level: string): Record<string, string> =>
    Object.fromEntries(['apis', 'keys', 'policies', 'users', 'certs', 'streams'].map((r) => [r, level]));
  return {
    org,
    system: await user(`operator@${org}.example.com`, {
      user_permissions: { IsAdmin: 'admin' },
      system_user: true,
    }),
    reader: await user(`reader@${org}.example.com`, { user_permissions: all('read') }),
  };
}
