/**
 * The web UI (`dashboard/ui/`): `/` redirects to `/ui/`, which serves the page, its style sheet,
 * its script and the charting library it imports (uPlot, from node_modules). The script is written
 * in TypeScript and served as an ES module after Node's type stripping (ui-files.ts: no build step,
 * no framework, nothing fetched from other hosts). `/api/me` tells the signed-in page who its key
 * belongs to.
 */
import type { ServerResponse } from 'node:http';
import { RESOURCES } from '../rbac/rbac.ts';
import { callerOf, json, type Ctx, type Reply } from './http.ts';
import { UI_HEADERS, loadUiFile, type UiFile } from './ui-files.ts';

/** The files under /ui/: path -> source file, content type, and whether it is TypeScript. */
const FILES: Readonly<Record<string, UiFile>> = {
  '/ui/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/ui/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/ui/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
  '/ui/app.js': { file: 'app.ts', type: 'text/javascript; charset=utf-8', ts: true },
  '/ui/request-log.ts': { file: 'request-log.ts', type: 'text/javascript; charset=utf-8', ts: true },
  '/ui/quota-usage.ts': { file: 'quota-usage.ts', type: 'text/javascript; charset=utf-8', ts: true },
  '/ui/forms.ts': { file: 'forms.ts', type: 'text/javascript; charset=utf-8', ts: true },
  '/ui/dom.ts': { file: 'dom.ts', type: 'text/javascript; charset=utf-8', ts: true },
  '/ui/analytics.ts': { file: 'analytics.ts', type: 'text/javascript; charset=utf-8', ts: true },
  '/ui/portal-admin.ts': { file: 'portal-admin.ts', type: 'text/javascript; charset=utf-8', ts: true },
  '/ui/call.ts': { file: 'call.ts', type: 'text/javascript; charset=utf-8', ts: true },
  '/ui/lists.ts': { file: 'lists.ts', type: 'text/javascript; charset=utf-8', ts: true },
  '/ui/keys.ts': { file: 'keys.ts', type: 'text/javascript; charset=utf-8', ts: true },
  // uPlot (MIT, package.json), the charts of the analytics view, served from node_modules.
  '/ui/vendor/uplot.js': {
    file: '../../node_modules/uplot/dist/uPlot.esm.js',
    type: 'text/javascript; charset=utf-8',
  },
  '/ui/vendor/uplot.css': {
    file: '../../node_modules/uplot/dist/uPlot.min.css',
    type: 'text/css; charset=utf-8',
  },
};

/**
 * Answers `/`, `/ui` and `/ui/...` (GET and HEAD); false for any other path, which the API
 * router then takes.
 */
export async function serveUi(method: string, pathname: string, res: ServerResponse): Promise<boolean> {
  if (pathname !== '/' && pathname !== '/ui' && !pathname.startsWith('/ui/')) return false;
  if (method !== 'GET' && method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' });
    res.end('Method not allowed\n');
    return true;
  }
  if (pathname === '/' || pathname === '/ui') {
    res.writeHead(302, { location: '/ui/', 'content-length': 0 });
    res.end();
    return true;
  }
  const entry = FILES[pathname];
  if (entry === undefined) {
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('Not found\n');
    return true;
  }
  const body = await loadUiFile(entry);
  res.writeHead(200, {
    ...UI_HEADERS,
    'content-type': entry.type,
    'content-length': Buffer.byteLength(body),
  });
  res.end(method === 'HEAD' ? '' : body);
  return true;
}

/** GET /api/me: the caller (`{org_id, org_name, user_id, email_address, admin, system_user, permissions}`). */
export async function me(c: Ctx): Promise<Reply> {
  const caller = callerOf(c);
  const [org, user] = await Promise.all([
    c.deps.store.getOrg(caller.org),
    c.deps.store.get(caller.org, 'users', caller.userId),
  ]);
  return json({
    org_id: caller.org,
    org_name: typeof org?.body.owner_name === 'string' ? org.body.owner_name : caller.org,
    user_id: caller.userId,
    email_address: user?.body.email_address ?? '',
    admin: caller.admin,
    system_user: caller.system,
    permissions: Object.fromEntries(
      RESOURCES.map((r) => [r, caller.admin ? 'write' : caller.permissions[r]]),
    ),
  });
}
