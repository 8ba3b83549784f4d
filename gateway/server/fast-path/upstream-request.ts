/**
 * The request head the fast path writes to an upstream, from the request's context as the chain
 * left it: the method and path of the upstream plan (`ctx.upstream`), the context's query, and
 * the headers by the rules of upstream/headers.ts (the same function node:http's path uses). A
 * head the chain changed is checked before it goes out: a target or a header that could not be
 * sent as it is fails the request (500), never reaches the upstream.
 */
import type { RequestContext } from '../../pipeline/context.ts';
import type { Target } from '../../pipeline/route.ts';
import { upstreamRequestHeaders } from '../../upstream/headers.ts';
import { upstreamPathOf } from '../../upstream/proxy.ts';
import { BAD_TARGET, BAD_VALUE, TOKEN } from './head-parser.ts';

/**
 * The upstream request head for `ctx` sent to `target`, ending with its empty line. `checked`:
 * middleware ran, so what they may have changed is checked (throws when it cannot be sent). The
 * body's framing is the client's Content-Length (`contentLength` when `hasLength`), whatever the
 * chain did to the headers.
 */
export function upstreamRequestHead(
  ctx: RequestContext,
  target: Target,
  checked: boolean,
  hasLength: boolean,
  contentLength: number,
): string {
  const route = ctx.route;
  const path = upstreamPathOf(target, route, ctx.path, ctx.query, ctx.upstream.path, ctx.listenPathAdded);
  if (checked && BAD_TARGET.test(path)) throw new Error('the chain left an invalid request target');
  const headers = upstreamRequestHeaders(ctx, target.host, route.api.proxy.preserve_host_header === true);
  let out = `${ctx.upstream.method ?? ctx.method} ${path} HTTP/1.1\r\n`;
  // Every name and every value, each run together, for one check of each (not one per header).
  let names = '';
  let values = '';
  for (const name in headers) {
    if (name === 'content-length') continue;
    const v = headers[name];
    if (v === undefined) continue;
    if (typeof v === 'string') {
      out += `${name}: ${v}\r\n`;
      if (checked) values += v;
    } else {
      for (const x of v) {
        out += `${name}: ${x}\r\n`;
        if (checked) values += x;
      }
    }
    if (checked) names += name;
  }
  if (checked && ((names !== '' && !TOKEN.test(names)) || BAD_VALUE.test(values))) {
    throw new Error('the chain left a header that cannot be sent');
  }
  if (hasLength) out += `content-length: ${String(contentLength)}\r\n`;
  return `${out}\r\n`;
}
