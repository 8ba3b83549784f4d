/**
 * The files of the GraphQL playground: GraphiQL's browser build and the React builds it runs on,
 * read once from node_modules (the `graphiql`, `react` and `react-dom` packages), plus the
 * page's own script and style. Each is served under a name holding a hash of its content, so
 * browsers may keep it for a year, and is gzipped once here rather than per request.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';

const gzip = promisify(gzipCallback);

/** One file as served. */
export interface PlaygroundAsset {
  /** The name under `{playground path}/assets/`, such as `graphiql.3f2a9c01d4.js`. */
  readonly name: string;
  readonly contentType: string;
  readonly body: Buffer;
  /** The body gzipped, for clients that accept it. */
  readonly gzipped: Buffer;
  /** A strong validator: the content hash, quoted. */
  readonly etag: string;
}

/** The assets a page links to, by role, and all of them by name. */
export interface PlaygroundAssets {
  readonly react: PlaygroundAsset;
  readonly reactDom: PlaygroundAsset;
  readonly graphiql: PlaygroundAsset;
  readonly graphiqlCss: PlaygroundAsset;
  readonly script: PlaygroundAsset;
  readonly style: PlaygroundAsset;
  readonly byName: ReadonlyMap<string, PlaygroundAsset>;
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/**
 * The page's script: it reads the endpoint from the page's JSON block and renders GraphiQL with
 * a fetcher that posts to that endpoint with the headers of GraphiQL's headers editor. A refusal
 * that is not a GraphQL response (a 401 from authentication, a 429) is shown as a GraphQL error
 * naming the status. Served as a file so the page's policy allows scripts from 'self' only.
 */
const SCRIPT = `'use strict';
(function () {
  var config = JSON.parse(document.getElementById('playground-config').textContent);
  // Saved tabs and queries are kept per API, as APIs on one gateway share an origin.
  var prefix = 'svc-playground:' + config.endpoint + ':';
  function keys() {
    var out = [];
    for (var i = 0; i < localStorage.length; i++) {
      var k = localStorage.key(i);
      if (k !== null && k.indexOf(prefix) === 0) out.push(k);
    }
    return out;
  }
  var storage = {
    getItem: function (k) { return localStorage.getItem(prefix + k); },
    setItem: function (k, v) { localStorage.setItem(prefix + k, v); },
    removeItem: function (k) { localStorage.removeItem(prefix + k); },
    clear: function () { keys().forEach(function (k) { localStorage.removeItem(k); }); },
    get length() { return keys().length; },
  };
  async function fetcher(params, options) {
    var headers = new Headers({
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
    });
    var given = (options && options.headers) || {};
    Object.keys(given).forEach(function (name) { headers.set(name, String(given[name])); });
    var res = await fetch(config.endpoint, { method: 'POST', headers: headers, body: JSON.stringify(params) });
    var text = await res.text();
    var body;
    try { body = JSON.parse(text); } catch (e) { body = undefined; }
    if (body !== null && typeof body === 'object' && !Array.isArray(body) && ('data' in body || 'errors' in body)) {
      return body;
    }
    var detail = body !== null && typeof body === 'object' && typeof body.error === 'string' ? ': ' + body.error : '';
    return {
      errors: [{
        message: 'HTTP ' + res.status + (res.statusText ? ' ' + res.statusText : '') + detail,
        extensions: { status: res.status, body: body === undefined ? text : body },
      }],
    };
  }
  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      storage: storage,
      defaultQuery: '{ __typename }\\n',
      isHeadersEditorEnabled: true,
      defaultEditorToolsVisibility: 'headers',
      // Keys typed in the headers editor stay out of the browser's storage.
      shouldPersistHeaders: false,
    }),
  );
})();
`;

const STYLE = 'html, body, #graphiql { height: 100%; margin: 0; }\n';

/** The directory of an installed package, found the way `import` finds it. */
function packageDir(name: string): string {
  return dirname(fileURLToPath(import.meta.resolve(`${name}/package.json`)));
}

async function asset(base: string, ext: 'js' | 'css', body: Buffer): Promise<PlaygroundAsset> {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  return {
    name: `${base}.${hash}.${ext}`,
    contentType: ext === 'js' ? JS : CSS,
    body,
    gzipped: await gzip(body),
    etag: `"${hash}"`,
  };
}

async function fromPackage(
  pkg: string,
  file: string,
  base: string,
  ext: 'js' | 'css',
): Promise<PlaygroundAsset> {
  return asset(base, ext, await readFile(join(packageDir(pkg), file)));
}

async function load(): Promise<PlaygroundAssets> {
  const [react, reactDom, graphiql, graphiqlCss, script, style] = await Promise.all([
    fromPackage('react', 'umd/react.production.min.js', 'react', 'js'),
    fromPackage('react-dom', 'umd/react-dom.production.min.js', 'react-dom', 'js'),
    fromPackage('graphiql', 'graphiql.min.js', 'graphiql', 'js'),
    fromPackage('graphiql', 'graphiql.min.css', 'graphiql', 'css'),
    asset('playground', 'js', Buffer.from(SCRIPT)),
    asset('playground', 'css', Buffer.from(STYLE)),
  ]);
  const all = [react, reactDom, graphiql, graphiqlCss, script, style];
  return {
    react,
    reactDom,
    graphiql,
    graphiqlCss,
    script,
    style,
    byName: new Map(all.map((a) => [a.name, a])),
  };
}

let loaded: Promise<PlaygroundAssets> | undefined;

/** The assets, read on the first call (the first API with a playground) and kept for the process. */
export function playgroundAssets(): Promise<PlaygroundAssets> {
  loaded ??= load().catch((err: unknown) => {
    loaded = undefined;
    throw new Error('the GraphQL playground could not read its files from node_modules', { cause: err });
  });
  return loaded;
}
