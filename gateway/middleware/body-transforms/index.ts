/**
 * Body templates of the request's version (`extended_paths.transform` and
 * `transform_response`, which the reference's `response_body_transform` processor names), as the
 * reference gateway applies them: the first entry matching the request's method and path runs
 * its template (the subset of Go's text/template in schemas/rules/body-template.ts, parsed once
 * when routes load; run by ./template.ts) over the body, read as JSON or, with
 * `template_data.input_type: xml`, as XML (./xml.ts):
 * - `transform`: the request body (read whole, at most 1 MiB, else 413) becomes the template's
 *   output, sent upstream with its length;
 * - `transform_response`: the upstream's body (buffered, at most 1 MiB, else 502; gzip, deflate
 *   and br decoded) becomes the output, sent with its length and without `Content-Encoding`.
 * The data is the parsed body (an empty JSON body is `{}`, a JSON list is under `array`; an XML
 * body is a map under its root element's name, an empty one `{"_": ""}`), plus
 * `_tyk_meta` (the session's `meta_data`, with `enable_session`) and `_tyk_context` (the
 * request's context variables, with the API's `enable_context_vars`). A body that does not
 * parse, or a template that fails on it, leaves the body unchanged (logged). As
 * both read bodies, a route with them is served by node:http.
 */
import type { TemplateMeta, VersionInfo } from '../../../schemas/generated/models.ts';
import {
  parseBodyTemplate,
  templateSource,
  type BodyTemplate,
} from '../../../schemas/rules/body-template.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { MAX_READ_BODY, type RequestContext } from '../../pipeline/context.ts';
import {
  compileEndpointEntries,
  matchingEntry,
  perVersion,
  perVersionMiddleware,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import { renderBodyTemplate } from './template.ts';
import { xmlToMap } from './xml.ts';

interface Entry {
  endpoint: CompiledEndpoint;
  template: BodyTemplate;
  session: boolean;
  /** The body is XML (`input_type: xml`), else JSON. */
  xml: boolean;
}

interface VersionTransforms {
  request: Entry[];
  response: Entry[];
}

function entries(v: VersionInfo, list: readonly TemplateMeta[] | undefined, what: string): Entry[] {
  const out = compileEndpointEntries(v, list, (e) => {
    if (e.template_data === undefined) return undefined;
    let template: BodyTemplate;
    try {
      template = parseBodyTemplate(templateSource(e.template_data));
    } catch (err) {
      throw new Error(`${what}: the template of ${e.path} does not parse: ${String(err)}`, { cause: err });
    }
    return {
      template,
      session: e.template_data.enable_session === true,
      xml: e.template_data.input_type === 'xml',
    };
  });
  return out ?? [];
}

/** The body transforms of a version, compiled; undefined when it has none. */
export function compileBodyTransforms(v: VersionInfo): VersionTransforms | undefined {
  const t = {
    request: entries(v, v.extended_paths?.transform, 'transform'),
    response: entries(v, v.extended_paths?.transform_response, 'transform_response'),
  };
  return t.request.length === 0 && t.response.length === 0 ? undefined : t;
}

/** The request's context variables, as the reference hands them to templates. */
function contextData(ctx: RequestContext): Record<string, unknown> {
  const data: Record<string, unknown> = {
    path: ctx.requestPath,
    path_parts: ctx.requestPath.split('/').filter((p) => p !== ''),
    remote_addr: ctx.clientIp,
    request_id: ctx.requestId,
  };
  const query: Record<string, string[]> = {};
  for (const [k, v] of new URLSearchParams(ctx.query)) (query[k] ??= []).push(v);
  data.request_data = query;
  for (const [name, value] of Object.entries(ctx.headers)) {
    if (value === undefined) continue;
    const canonical = name.replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
    data[`headers_${canonical.replaceAll('-', '_')}`] = Array.isArray(value) ? value.join(',') : value;
  }
  for (const part of (ctx.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) data[`cookies_${part.slice(0, eq).trim().replaceAll('-', '_')}`] = part.slice(eq + 1).trim();
  }
  for (const [k, v] of Object.entries(ctx.state.vars ?? {})) data[k] = v;
  return data;
}

/** The data a template reads from `body`, or why the body does not parse. */
function bodyData(body: Buffer, xml: boolean): Record<string, unknown> | string {
  if (xml) {
    try {
      return xmlToMap(body);
    } catch (err) {
      return `the body is not XML (${err instanceof Error ? err.message : String(err)})`;
    }
  }
  let parsed: unknown;
  try {
    parsed = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
  } catch {
    return 'the body is not JSON';
  }
  return Array.isArray(parsed)
    ? { array: parsed }
    : parsed !== null && typeof parsed === 'object'
      ? { ...(parsed as Record<string, unknown>) }
      : {};
}

/** Runs `entry` over `body`; undefined when the body does not parse or the template fails. */
function transform(
  ctx: RequestContext,
  entry: Entry,
  body: Buffer,
  contextVars: boolean,
  what: string,
): Buffer | undefined {
  const data = bodyData(body, entry.xml);
  if (typeof data === 'string') {
    ctx.log.warn(`${what}: ${data}, sent unchanged`);
    return undefined;
  }
  if (entry.session && ctx.session !== undefined) data._tyk_meta = ctx.session.meta_data ?? {};
  if (contextVars) data._tyk_context = contextData(ctx);
  try {
    return Buffer.from(renderBodyTemplate(entry.template, data), 'utf8');
  } catch (err) {
    ctx.log.warn(`${what}: the template failed, body sent unchanged`, { error: String(err) });
    return undefined;
  }
}

/** See the module comment. */
export const bodyTransforms: GatewayMiddleware = {
  ...perVersionMiddleware('body-transforms', 'them', compileBodyTransforms, (of, _deps, api) => {
    const contextVars = api.enable_context_vars === true;
    return around(async (ctx, next) => {
      const t = of(ctx);
      if (t !== undefined) {
        const req = matchingEntry(t.request, ctx);
        if (req !== undefined) {
          const body = await ctx.readBody(MAX_READ_BODY);
          if (body === undefined) return reject(ctx, GatewayError.bodyTooLarge());
          const out = transform(ctx, req, body, contextVars, 'transform');
          if (out !== undefined) ctx.upstream.body = out;
        }
        const res = matchingEntry(t.response, ctx);
        if (res !== undefined) {
          ctx.upstream.transformResponse = (body) =>
            transform(ctx, res, body, contextVars, 'transform_response');
        }
      }
      await next();
      return undefined;
    });
  }),
  // The response transform buffers the upstream's body: node:http only, as for the request's.
  readsBody: (api) => perVersion(api, compileBodyTransforms) !== undefined,
};
