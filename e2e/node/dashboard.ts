/**
 * The dashboard on the node, for dashboard.node.ts: its chart installed and timed to every pod
 * Ready, its Secrets, its pod replaced, and calls to its API through `kubectl port-forward` of its
 * Service (an organisation with its users made, and what a reader sees of them).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { freePort, waitFor } from '../../lib/testing/wait.ts';
import { toolsDir } from '../harness/control-plane.ts';
import { cluster, helm, kubectl, repoRoot, waitForPodsReady } from './helpers.ts';

const ADMIN_SECRET = randomBytes(16).toString('hex');
export const NODE_SECRET = randomBytes(16).toString('hex');

/** The port-forwards running (the suite's after hook kills what is left). */
export const forwards = new Set<ChildProcess>();
/** helm install -> every pod Ready, per release (reported on stderr). */
export const timings: string[] = [];

/** `helm upgrade --install --wait`, timed from the command to every pod of the release Ready. */
export async function install(release: string, ns: string, chart: string, args: string[]): Promise<void> {
  const start = Date.now();
  await helm([
    'upgrade',
    '--install',
    release,
    path.join(repoRoot, 'charts', chart),
    '-n',
    ns,
    ...args,
    '--wait',
    '--timeout=5m',
  ]);
  await waitForPodsReady(ns, 240_000, `app.kubernetes.io/instance=${release}`);
  timings.push(
    `${chart} (${release}, ${ns}): helm install to Ready ${((Date.now() - start) / 1000).toFixed(1)} s`,
  );
}

/** The one pod of the dashboard's Deployment that is Ready and not being deleted. */
async function dashboardPod(ns: string, not?: string): Promise<string> {
  return waitFor(
    `a Ready dashboard pod in ${ns}${not === undefined ? '' : ` other than ${not}`}`,
    async () => {
      const out = await kubectl([
        '-n',
        ns,
        'get',
        'pods',
        '-l',
        'app.kubernetes.io/instance=svc-dashboard',
        '-o',
        'jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp} {.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
      ]);
      const ready = out
        .trim()
        .split('\n')
        .map((l) => l.split(' '))
        .filter(([name, deleting, status]) => name !== not && deleting === '' && status === 'True');
      return ready.length === 1 ? ready[0]?.[0] : undefined;
    },
    240_000,
    1000,
  );
}

/** A JSON call to the dashboard through `kubectl port-forward` of its Service. */
export type Call = (
  method: string,
  p: string,
  opts?: { auth?: string; body?: unknown },
) => Promise<{ status: number; body: Record<string, unknown>; text: string }>;

/** Runs `fn` with calls to the dashboard Service of `ns` through a fresh port-forward. */
export async function withDashboard<T>(ns: string, fn: (call: Call) => Promise<T>): Promise<T> {
  const { kubeconfig } = await cluster();
  const local = await freePort();
  const pf = spawn(
    path.join(toolsDir(), 'kubectl'),
    [
      `--kubeconfig=${kubeconfig}`,
      'port-forward',
      '-n',
      ns,
      'svc/svc-dashboard',
      `${String(local)}:3000`,
      '--address',
      '127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  forwards.add(pf);
  const base = `http://127.0.0.1:${String(local)}`;
  try {
    await waitFor(
      `port-forward to ${ns}/svc-dashboard`,
      async () => {
        try {
          return (await fetch(`${base}/ready`)).status === 200;
        } catch {
          return false;
        }
      },
      60_000,
      250,
    );
    return await fn(async (method, p, opts = {}) => {
      const headers: Record<string, string> = {};
      if (opts.auth === undefined) headers['admin-auth'] = ADMIN_SECRET;
      else headers.authorization = opts.auth;
      if (opts.body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(base + p, {
        method,
        headers,
        ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
      });
      const text = await res.text();
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // not JSON
      }
      return { status: res.status, body, text };
    });
  } finally {
    pf.kill();
    forwards.delete(pf);
  }
}

/** An organisation, its operator (a system admin user) and a read-only human, made through the admin API. */
export interface Tenant {
  org: string;
  system: { id: string; key: string };
  reader: { id: string; key: string };
}

export async function createTenant(call: Call, org: string): Promise<Tenant> {
  const o = await call('POST', '/admin/organisations', {
    body: { id: org, owner_name: org, cname: `${org}.example.com` },
  });
  assert.equal(o.status, 200, o.text);
  const user = async (email: string, body: Record<string, unknown>): Promise<{ id: string; key: string }> => {
    const r = await call('POST', '/admin/users', { body: { org_id: org, email_address: email, ...body } });
    assert.equal(r.status, 200, r.text);
    const meta = r.body.Meta as Record<string, unknown>;
    return { id: String(meta.id), key: String(meta.access_key) };
  };
  const read = Object.fromEntries(
    ['apis', 'keys', 'policies', 'users', 'certs', 'streams'].map((r) => [r, 'read']),
  );
  return {
    org,
    system: await user(`operator@${org}.example.com`, {
      user_permissions: { IsAdmin: 'admin' },
      system_user: true,
    }),
    reader: await user(`reader@${org}.example.com`, { user_permissions: read }),
  };
}

/** What a tenant's data looks like through the API: its organisation and its users' e-mail addresses. */
export async function tenantSeen(call: Call, t: Tenant): Promise<{ org: number; users: string[] }> {
  const org = await call('GET', `/admin/organisations/${t.org}`);
  const users = await call('GET', '/api/users', { auth: t.reader.key });
  assert.equal(users.status, 200, users.text);
  return {
    org: org.status,
    users: (users.body.users as { email_address: string }[]).map((u) => u.email_address).sort(),
  };
}

/** Deletes the dashboard's pod and returns its Ready successor. */
export async function replaceDashboardPod(ns: string): Promise<string> {
  const old = await dashboardPod(ns);
  await kubectl(['-n', ns, 'delete', 'pod', old, '--wait=true', '--timeout=120s']);
  const next = await dashboardPod(ns, old);
  assert.notEqual(next, old);
  return next;
}

/** The Secrets the dashboard chart reads (it creates none). */
export function dashboardSecrets(ns: string): object[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'svc-dashboard-admin', namespace: ns },
      stringData: { secret: ADMIN_SECRET },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'svc-dashboard-node', namespace: ns },
      stringData: { secret: NODE_SECRET },
    },
  ];
}
