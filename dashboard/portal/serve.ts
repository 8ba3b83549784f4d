/**
 * Where the portal is served (docs/portal.md): under `/portal/{org}/` for every organisation,
 * and on an organisation's portal domain (its `cname`), where a request is the portal's alone.
 * Below the prefix: `api/...` (developer.ts), `webhooks/{product}` (the feed of `portal_webhook`
 * outputs) and the web UI (dashboard/ui/portal.html and portal.ts, with the dashboard's style sheet,
 * served like the dashboard's UI: TypeScript stripped of its types, nothing from other hosts).
 */
import type { IncomingMessage } from 'node:http';
import { TextBody } from '../../lib/http/reply-body.ts';
import { portalDomainKey } from '../../schemas/rules/portal.ts';
import { fail, type DashboardDeps, type Reply } from '../api/http.ts';
import { UI_HEADERS, loadUiFile, type UiFile } from '../api/ui-files.ts';
import { developerApi, feed, segment } from './developer.ts';
import { SignInLimits } from './sign-in-limit.ts';

const FILES: Readonly<Record<string, UiFile>> = {
  '/': { file: 'portal.html', type: 'text/html; charset=utf-8' },
  '/portal.js': { file: 'portal.ts', type: 'text/javascript; charset=utf-8', ts: true },
  '/dom.ts': { file: 'dom.ts', type: 'text/javascript; charset=utf-8', ts: true },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};

/**
 * Organisations by portal domain: read again after an organisation changes through this process,
 * and at most every few seconds otherwise (another replica of the dashboard may have changed one).
 */
class Domains {
  #at = -Infinity;
  #generation = 0;
  #map = new Map<string, string>();
  #reading: Promise<Map<string, string>> | undefined;

  /** An organisation was written: the next lookup reads them again. */
  invalidate(): void {
    this.#generation++;
    this.#at = -Infinity;
  }

  async orgOf(deps: DashboardDeps, host: string): Promise<string | undefined> {
    if (deps.now() - this.#at > 5_000) {
      const generation = this.#generation;
      this.#reading ??= deps.store.listOrgs().then((page) => {
        const m = new Map<string, string>();
        for (const o of page.items) {
          if (typeof o.body.cname === 'string' && o.body.cname !== '')
            m.set(portalDomainKey(o.body.cname), o.id);
        }
        return m;
      });
      try {
        this.#map = await this.#reading;
        // A change during the read: the map may predate it, so the next lookup reads again.
        if (generation === this.#generation) this.#at = deps.now();
      } finally {
        this.#reading = undefined;
      }
    }
    // A cname with a port names that port only; one without, every port.
    return this.#map.get(portalDomainKey(host)) ?? this.#map.get(portalDomainKey(host, false));
  }
}

/**
 * The portal's part of a dashboard: `serve` answers a request that is the portal's, else undefined.
 * `onChange` subscribes to the store's committed changes in this process.
 */
export function portal(
  deps: DashboardDeps,
  onChange: (fn: (change: { kind: string }) => void) => void,
): {
  serve(req: IncomingMessage, url: URL): Promise<{ route: string; reply: Reply } | undefined>;
} {
  const domains = new Domains();
  const limits = new SignInLimits(() => deps.now());
  onChange((change) => {
    if (change.kind === 'organisations') domains.invalidate();
  });
  return {
    async serve(req, url) {
      let path = url.pathname;
      while (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
      let org: string | undefined;
      let base: string;
      let rest: string;
      const host = req.headers.host;
      // On a portal domain every path is that portal's: /portal/{other}/ there is not another's.
      const domainOrg = host === undefined || host === '' ? undefined : await domains.orgOf(deps, host);
      const prefixed = /^\/portal\/([^/]+)(\/.*)?$/.exec(path);
      if (domainOrg !== undefined) {
        org = domainOrg;
        base = '';
        rest = path;
      } else if (prefixed !== null) {
        try {
          org = decodeURIComponent(prefixed[1] ?? '');
        } catch {
          return { route: 'portal', reply: fail(404, 'Portal not found') };
        }
        base = `/portal/${prefixed[1] ?? ''}`;
        rest = prefixed[2] ?? '';
      } else return undefined;
      if ((await deps.store.getOrg(org)) === undefined) {
        return { route: 'portal', reply: fail(404, 'Portal not found') };
      }
      const method = req.method ?? 'GET';
      if (rest.startsWith('/api/') || rest === '/api') {
        const reply = await developerApi({ req, url, deps, org, base, path: rest.slice(4), limits });
        return { route: 'portal_api', reply };
      }
      const hook = /^\/webhooks\/([^/]+)$/.exec(rest);
      if (hook !== null && (method === 'GET' || method === 'HEAD')) {
        return { route: 'portal_feed', reply: await feed(deps, req, org, segment(hook[1])) };
      }
      if (method !== 'GET' && method !== 'HEAD') {
        return {
          route: 'portal_ui',
          reply: { ...fail(405, 'Method not allowed'), headers: { allow: 'GET, HEAD' } },
        };
      }
      // The page's relative links need the trailing slash (the dispatcher strips it).
      if (rest === '' && base !== '' && !url.pathname.endsWith('/')) {
        return {
          route: 'portal_ui',
          reply: { status: 302, body: new TextBody('text/plain', ''), headers: { location: `${base}/` } },
        };
      }
      const entry = FILES[rest === '' ? '/' : rest];
      if (entry === undefined) return { route: 'portal_ui', reply: fail(404, 'Not found') };
      const text = await loadUiFile(entry);
      return {
        route: 'portal_ui',
        reply: { status: 200, body: new TextBody(entry.type, text), headers: UI_HEADERS },
      };
    },
  };
}
