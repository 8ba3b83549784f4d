/**
 * The GraphQL playground (`graphql.playground`): GraphiQL, the GraphQL Foundation's IDE, served
 * at `{listen_path}{path}` with its files under `{listen_path}{path}/assets/`, all from the
 * gateway itself (read from node_modules, see playground-assets.ts); the page's
 * Content-Security-Policy lets it load and call nothing but the gateway. It runs before
 * authentication, as the page and its files hold nothing; the queries it sends go to the API's
 * listen path with the headers set in GraphiQL's headers editor, through the whole chain like
 * any other request.
 */
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import type { GatewayMiddleware } from '../middleware/deps.ts';
import { respond } from '../pipeline/compose.ts';
import { before } from '../pipeline/steps.ts';
import { playgroundAssets, type PlaygroundAsset, type PlaygroundAssets } from './playground-assets.ts';

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The page's policy: scripts, styles and calls from the gateway only. GraphiQL's stylesheet
 * embeds its fonts and icons as data: URLs; React sets element styles through the DOM, which
 * style-src does not govern.
 */
export const PLAYGROUND_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "font-src 'self' data:",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'self'",
].join('; ');

/** Assets are named by their content: a changed file is a new name, so they never go stale. */
const ASSET_CACHE = 'public, max-age=31536000, immutable';

/** The page, for an API whose queries go to `endpoint`, with its assets under `assetsPath`. */
export function playgroundPage(
  title: string,
  endpoint: string,
  assetsPath: string,
  assets: PlaygroundAssets,
): string {
  const config = JSON.stringify({ endpoint }).replace(/</g, '\\u003c');
  const src = (a: PlaygroundAsset): string => escapeHtml(`${assetsPath}${a.name}`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} · GraphQL playground</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${src(assets.graphiqlCss)}">
<link rel="stylesheet" href="${src(assets.style)}">
<script id="playground-config" type="application/json">${config}</script>
<script src="${src(assets.react)}" defer></script>
<script src="${src(assets.reactDom)}" defer></script>
<script src="${src(assets.graphiql)}" defer></script>
<script src="${src(assets.script)}" defer></script>
</head>
<body><div id="graphiql"><noscript>The GraphQL playground needs JavaScript.</noscript></div></body></html>
`;
}

/** The playground's path under the listen path, when the API serves one. */
function playgroundPath(api: GatewayApiDefinition): string | undefined {
  const g = api.graphql;
  if (g?.enabled !== true || g.playground?.enabled !== true) return undefined;
  const p = g.playground.path ?? '';
  return p === '' ? undefined : p.replace(/\/+$/, '') || '/';
}

/** Whether the client takes a gzipped body (`gzip` listed, and not with q=0). */
function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  return value.split(',').some((part) => {
    const [coding = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    return (coding === 'gzip' || coding === '*') && !params.some((p) => /^q=0(\.0*)?$/.test(p));
  });
}

/**
 * Serves the playground page and its assets (`respond`, as any answer of the gateway's own, on
 * either entrance); every other request continues along the chain.
 */
export const graphqlPlayground: GatewayMiddleware = {
  name: 'graphql-playground',
  enabled: (api) => playgroundPath(api) !== undefined,
  async create(api) {
    const path = playgroundPath(api) ?? '';
    const assetsDir = `${path === '/' ? '' : path}/assets/`;
    const assets = await playgroundAssets();
    let page: Buffer | undefined;
    return before((ctx) => {
      const listenPath = ctx.route.listenPath;
      const rest = ctx.path.slice(listenPath.length).replace(/\/+$/, '') || '/';
      const asset = rest.startsWith(assetsDir) ? assets.byName.get(rest.slice(assetsDir.length)) : undefined;
      if ((rest !== path && asset === undefined) || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) {
        return undefined;
      }
      // An answer to HEAD carries the body's length only: both entrances leave the body out.
      if (asset !== undefined) {
        const gzipped = acceptsGzip(ctx.headers['accept-encoding']);
        const common = { etag: asset.etag, 'cache-control': ASSET_CACHE, vary: 'accept-encoding' };
        if (ctx.headers['if-none-match']?.includes(asset.etag) === true) {
          return respond(ctx, 304, '', common);
        }
        return respond(ctx, 200, gzipped ? asset.gzipped : asset.body, {
          ...common,
          'content-type': asset.contentType,
          'x-content-type-options': 'nosniff',
          ...(gzipped ? { 'content-encoding': 'gzip' } : {}),
        });
      }
      page ??= Buffer.from(
        playgroundPage(
          api.name,
          listenPath === '' ? '/' : `${listenPath}/`,
          `${listenPath}${assetsDir}`,
          assets,
        ),
      );
      return respond(ctx, 200, page, {
        'content-type': 'text/html; charset=utf-8',
        // The page is small and names the current assets: always ask again.
        'cache-control': 'no-cache',
        'content-security-policy': PLAYGROUND_CSP,
        'x-content-type-options': 'nosniff',
      });
    });
  },
};
