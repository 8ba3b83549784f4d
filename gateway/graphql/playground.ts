/**
 * The GraphQL playground (`graphql.playground`): a small self-contained IDE page (no script,
 * style or font from any outside host) served at `{listen_path}{path}`. It runs before
 * authentication, as the page itself holds nothing; the queries it sends go to the API's listen
 * path with the headers the user types, through the whole chain like any other request.
 */
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import type { Middleware } from '../pipeline/compose.ts';
import { HttpContext } from '../pipeline/context.ts';

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page, for an API whose queries go to `endpoint`. */
export function playgroundPage(title: string, endpoint: string): string {
  const config = JSON.stringify({ endpoint }).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} · GraphQL playground</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{margin:0;font:14px system-ui,sans-serif;display:grid;grid-template-rows:auto 1fr;height:100vh}
header{display:flex;gap:.5em;align-items:center;padding:.5em;background:#222;color:#eee}
header input{flex:1;font:inherit} main{display:grid;grid-template-columns:1fr 1fr;min-height:0}
section{display:grid;grid-template-rows:2fr 1fr;min-height:0} textarea,pre{margin:0;padding:.5em;
font:13px ui-monospace,monospace;border:1px solid #ccc;overflow:auto;resize:none}
pre{white-space:pre-wrap}
</style></head>
<body>
<header><strong>GraphQL</strong>
<input id="headers" aria-label="Headers (JSON)" placeholder='Headers as JSON, such as {"Authorization": "key"}'>
<button id="run" type="button">Run ▶</button></header>
<main><section>
<textarea id="query" aria-label="Query" spellcheck="false">{ __typename }</textarea>
<textarea id="variables" aria-label="Variables (JSON)" spellcheck="false" placeholder="Variables as JSON"></textarea>
</section><pre id="result" aria-label="Result" aria-live="polite"></pre></main>
<script>
const config = ${config};
const $ = (id) => document.getElementById(id);
async function run() {
  const out = $('result');
  let headers = {}, variables;
  try {
    if ($('headers').value.trim() !== '') headers = JSON.parse($('headers').value);
    if ($('variables').value.trim() !== '') variables = JSON.parse($('variables').value);
  } catch (e) { out.textContent = 'Invalid JSON: ' + e.message; return; }
  out.textContent = '…';
  try {
    const res = await fetch(config.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ query: $('query').value, variables }),
    });
    const text = await res.text();
    try { out.textContent = JSON.stringify(JSON.parse(text), null, 2); } catch { out.textContent = text; }
    out.dataset.status = String(res.status);
  } catch (e) { out.textContent = String(e); }
}
$('run').addEventListener('click', run);
document.addEventListener('keydown', (e) => { if ((e.ctrlKey || e.metaKey) && e.key === 'Enter') run(); });
</script>
</body></html>
`;
}

/** The playground's path under the listen path, when the API serves one. */
function playgroundPath(api: GatewayApiDefinition): string | undefined {
  const g = api.graphql;
  if (g?.enabled !== true || g.playground?.enabled !== true) return undefined;
  const p = g.playground.path ?? '';
  return p === '' ? undefined : p.replace(/\/+$/, '') || '/';
}

/** Serves the playground page; every other request continues along the chain. */
export const graphqlPlayground: Middleware = {
  name: 'graphql-playground',
  enabled: (api) => playgroundPath(api) !== undefined,
  create(api) {
    const path = playgroundPath(api) ?? '';
    let page: Buffer | undefined;
    return async (ctx, next) => {
      const listenPath = ctx.route.listenPath;
      const rest = ctx.path.slice(listenPath.length).replace(/\/+$/, '') || '/';
      if (rest !== path || (ctx.method !== 'GET' && ctx.method !== 'HEAD') || !(ctx instanceof HttpContext)) {
        await next();
        return undefined;
      }
      page ??= Buffer.from(playgroundPage(api.name, listenPath === '' ? '/' : `${listenPath}/`));
      ctx.res.writeHead(200, {
        ...ctx.responseHeaders,
        'content-type': 'text/html; charset=utf-8',
        'content-length': page.length,
        // Nothing the page loads comes from elsewhere; say so to the browser too.
        'content-security-policy':
          "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'",
      });
      ctx.res.end(ctx.method === 'HEAD' ? undefined : page);
      return undefined;
    };
  },
};
