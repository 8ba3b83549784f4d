/**
 * `middleware.operations.<operationId>` of the extension: each enabled setting of an operation
 * becomes an entry of the classic version's `extended_paths` (allow and block lists, size limits,
 * header, method, URL and body transforms, request validation, mocks, timeouts, circuit breakers,
 * tracking, caching), the more specific paths first.
 */
import { quote } from '../rules/field-problem.ts';
import { list } from '../rules/read.ts';
import {
  EXT,
  HTTP_METHODS,
  nonEmpty,
  obj,
  resolveRefs,
  saysSomething,
  type Conversion,
  type Json,
  type Part,
} from './document.ts';
import { GLOBAL } from './global.ts';

/** The classic version an OAS API's operations become (`version_data.versions.Default`). */
const VERSION = 'version_data.versions.Default';
const EXTENDED = `${VERSION}.extended_paths`;
const OPERATIONS: readonly Part[] = [EXT, 'middleware', 'operations'];

/** An operation of the document: its path (as an endpoint path) and method. */
interface Operation {
  id: string;
  path: string;
  method: string;
}

/**
 * An OAS path as an endpoint path: literal text escaped, `{name}` parameters kept (the endpoint
 * path syntax reads them as one segment).
 */
export function oasEndpointPath(path: string): string {
  return path
    .split(/(\{[^{}/]*\})/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&')))
    .join('');
}

/** The document's operations by `operationId`, the more specific paths first. */
function operationsById(c: Conversion): Map<string, Operation> {
  const out = new Map<string, Operation>();
  for (const [path, item] of Object.entries(obj(c.peek(['paths'])) ?? {})) {
    for (const [method, op] of Object.entries(obj(item) ?? {})) {
      const id = nonEmpty(obj(op)?.operationId);
      if (!HTTP_METHODS.has(method) || id === undefined || out.has(id)) continue;
      out.set(id, { id, path, method: method.toUpperCase() });
    }
  }
  return out;
}

/** Specificity order: more segments first, then fewer parameters (`/pets/mine` before `/pets/{id}`). */
function specificity(a: Operation, b: Operation): number {
  const segments = (p: string): number => p.split('/').filter((s) => s !== '').length;
  const params = (p: string): number => (p.match(/\{[^{}/]*\}/g) ?? []).length;
  return segments(b.path) - segments(a.path) || params(a.path) - params(b.path);
}

/** Entries of `extended_paths` lists being built, with where each came from. */
class ExtendedPaths {
  readonly lists: Record<string, Json[]> = {};
  readonly #c: Conversion;
  constructor(c: Conversion) {
    this.#c = c;
  }
  /** Adds an entry; `fields` maps classic fields of the entry to document fields (for problems). */
  add(list: string, entry: Json, from: readonly Part[], fields: Record<string, Part> = {}): void {
    const entries = (this.lists[list] ??= []);
    const at = `${EXTENDED}.${list}[${entries.length}]`;
    entries.push(entry);
    this.#c.set(at, undefined, from);
    for (const [classic, field] of Object.entries(fields))
      this.#c.set(`${at}.${classic}`, undefined, [...from, field]);
  }
}

const headerMap = (v: unknown): Json =>
  Object.fromEntries(
    list(v).flatMap((h) => {
      const name = nonEmpty(obj(h)?.name);
      return name === undefined ? [] : [[name, obj(h)?.value ?? '']];
    }),
  );

const REWRITE_IN: Record<string, string> = {
  header: 'header_matches',
  query: 'query_val_matches',
  path: 'path_part_matches',
  sessionMetadata: 'session_meta_matches',
  requestContext: 'request_context_matches',
};

/** `middleware.operations.<operationId>`: entries of the classic version's `extended_paths`. */
export function readOperations(c: Conversion): void {
  const configured = obj(c.peek(OPERATIONS));
  if (configured === undefined) return;
  const ops = operationsById(c);
  const named: Operation[] = [];
  for (const id of Object.keys(configured)) {
    const op = ops.get(id);
    if (op !== undefined) {
      named.push(op);
      continue;
    }
    if (!saysSomething(configured[id])) continue;
    c.problem(
      [...OPERATIONS, id],
      'Invalid',
      `no operation in paths has the operationId ${quote(id)}: set it on the operation (paths.<path>.<method>.operationId), or remove this entry`,
    );
    c.take([...OPERATIONS, id]);
  }
  const x = new ExtendedPaths(c);
  let cacheAt: readonly Part[] | undefined;
  for (const op of named.sort(specificity)) {
    const at = [...OPERATIONS, op.id];
    const base = { path: oasEndpointPath(op.path), method: op.method };
    for (const [name, classic] of [
      ['allow', 'white_list'],
      ['block', 'black_list'],
      ['ignoreAuthentication', 'ignored'],
    ] as const) {
      const here = [...at, name];
      if (!c.enabled(here)) continue;
      const ignoreCase = c.take([...here, 'ignoreCase']) === true;
      x.add(classic, { ...base, ...(ignoreCase ? { ignore_case: true } : {}) }, here);
    }
    let here = [...at, 'internal'];
    if (c.enabled(here)) x.add('internal', { ...base }, here);
    here = [...at, 'requestSizeLimit'];
    if (c.enabled(here))
      x.add('size_limits', { ...base, size_limit: c.take([...here, 'value']) ?? 0 }, here, {
        size_limit: 'value',
      });
    for (const [name, classic] of [
      ['transformRequestHeaders', 'transform_headers'],
      ['transformResponseHeaders', 'transform_response_headers'],
    ] as const) {
      here = [...at, name];
      if (!c.enabled(here)) continue;
      x.add(
        classic,
        {
          ...base,
          add_headers: headerMap(c.take([...here, 'add'])),
          delete_headers: list(c.take([...here, 'remove'])),
        },
        here,
        { add_headers: 'add', delete_headers: 'remove' },
      );
    }
    here = [...at, 'transformRequestMethod'];
    if (c.enabled(here)) {
      const to = c.take([...here, 'toMethod']);
      x.add(
        'method_transforms',
        { ...base, to_method: typeof to === 'string' ? to.toUpperCase() : to },
        here,
        { to_method: 'toMethod' },
      );
    }
    readUrlRewrite(c, x, base, [...at, 'urlRewrite']);
    for (const [name, classic] of [
      ['transformRequestBody', 'transform'],
      ['transformResponseBody', 'transform_response'],
    ] as const) {
      here = [...at, name];
      if (!c.enabled(here)) continue;
      const body = nonEmpty(c.take([...here, 'body']));
      const file = nonEmpty(c.take([...here, 'path']));
      const format = c.take([...here, 'format']) ?? 'json';
      if ((body === undefined) === (file === undefined)) {
        c.problem(
          here,
          'Required',
          'set one of body (the template, base64) and path (its file), or set enabled to false',
        );
      }
      x.add(
        classic,
        {
          ...base,
          template_data: {
            input_type: format,
            template_mode: body === undefined ? 'file' : 'blob',
            template_source: body ?? file ?? '',
          },
        },
        here,
        {
          'template_data.input_type': 'format',
          'template_data.template_source': body === undefined ? 'path' : 'body',
        },
      );
    }
    here = [...at, 'validateRequest'];
    if (c.enabled(here)) {
      const code = c.take([...here, 'errorResponseCode']);
      const content = [
        'paths',
        op.path,
        op.method.toLowerCase(),
        'requestBody',
        'content',
        'application/json',
        'schema',
      ];
      const schema = c.peek(content);
      if (obj(schema) === undefined) {
        c.problem(
          here,
          'Required',
          `the operation ${quote(op.id)} has no requestBody.content.application/json.schema to validate against: add one, or set enabled to false`,
        );
      } else {
        x.add(
          'validate_json',
          {
            ...base,
            schema: resolveRefs(c, schema, content),
            ...(code === undefined ? {} : { error_response_code: code }),
          },
          here,
          { error_response_code: 'errorResponseCode' },
        );
      }
    }
    here = [...at, 'mockResponse'];
    if (c.enabled(here)) {
      const code = c.take([...here, 'code']);
      const body = c.take([...here, 'body']);
      x.add(
        'mock_response',
        {
          ...base,
          code: code ?? 200,
          body: body ?? '',
          headers: headerMap(c.take([...here, 'headers'])),
        },
        here,
        { code: 'code', body: 'body', headers: 'headers' },
      );
    }
    here = [...at, 'enforceTimeout'];
    if (c.enabled(here))
      x.add('hard_timeouts', { ...base, timeout: c.take([...here, 'value']) ?? 0 }, here, {
        timeout: 'value',
      });
    here = [...at, 'circuitBreaker'];
    if (c.enabled(here)) {
      const threshold = c.take([...here, 'threshold']);
      x.add(
        'circuit_breakers',
        {
          ...base,
          threshold_percent: typeof threshold === 'number' ? String(threshold) : threshold,
          samples: c.take([...here, 'sampleSize']),
          return_to_service_after: c.take([...here, 'coolDownPeriod']),
          disable_half_open_state: c.take([...here, 'halfOpenStateEnabled']) !== true,
        },
        here,
        { threshold_percent: 'threshold', samples: 'sampleSize', return_to_service_after: 'coolDownPeriod' },
      );
    }
    for (const [name, classic] of [
      ['trackEndpoint', 'track_endpoints'],
      ['doNotTrackEndpoint', 'do_not_track_endpoints'],
    ] as const) {
      here = [...at, name];
      if (c.enabled(here)) x.add(classic, base, here);
    }
    here = [...at, 'cache'];
    if (c.enabled(here)) {
      cacheAt ??= here;
      const timeout = c.take([...here, 'timeout']);
      const codes = c.take([...here, 'cacheResponseCodes']);
      x.add(
        'advance_cache_config',
        {
          ...base,
          ...(timeout === undefined ? {} : { timeout }),
          ...(codes === undefined ? {} : { cache_response_codes: codes }),
        },
        here,
        { timeout: 'timeout', cache_response_codes: 'cacheResponseCodes' },
      );
    }
  }
  if (cacheAt !== undefined && obj(c.peek([...GLOBAL, 'cache']))?.enabled !== true) {
    c.problem(
      [...cacheAt, 'enabled'],
      'Required',
      'caching per operation needs the API cache: enable middleware.global.cache as well',
    );
  }
  if (Object.keys(x.lists).length === 0) return;
  c.set('version_data.not_versioned', true, OPERATIONS);
  c.set(`${VERSION}.name`, 'Default', OPERATIONS);
  c.set(`${VERSION}.use_extended_paths`, true, OPERATIONS);
  for (const [name, entries] of Object.entries(x.lists)) {
    const listPath = `${EXTENDED}.${name}`;
    const keys = listPath.split('.');
    const last = keys.pop() ?? '';
    let at = c.api;
    for (const k of keys) at = at[k] = obj(at[k]) ?? {};
    at[last] = entries;
  }
}

function readUrlRewrite(c: Conversion, x: ExtendedPaths, base: Json, here: readonly Part[]): void {
  if (!c.enabled(here)) return;
  const triggers = list(c.take([...here, 'triggers'])).map((t, i) => {
    const trigger = obj(t) ?? {};
    const options: Json = {};
    list(trigger.rules).forEach((r, j) => {
      const rule = obj(r) ?? {};
      const match = { match_rx: rule.pattern, ...(rule.negate === true ? { reverse: true } : {}) };
      if (rule.in === 'requestBody') {
        if (options.payload_matches !== undefined) {
          c.problem(
            [...here, 'triggers', i, 'rules', j],
            'NotSupported',
            'one requestBody rule per trigger is supported',
          );
        }
        options.payload_matches = match;
        return;
      }
      const key = REWRITE_IN[String(rule.in)];
      const name = nonEmpty(rule.name);
      if (key === undefined) return;
      if (name === undefined) {
        c.problem(
          [...here, 'triggers', i, 'rules', j, 'name'],
          'Required',
          `set the name of the ${String(rule.in)} value to match`,
        );
        return;
      }
      const map = (options[key] = obj(options[key]) ?? {});
      if (map[name] !== undefined) {
        c.problem(
          [...here, 'triggers', i, 'rules', j],
          'NotSupported',
          `one rule per ${String(rule.in)} ${quote(name)} in a trigger is supported`,
        );
      }
      map[name] = match;
    });
    return { on: trigger.condition ?? 'any', options, rewrite_to: trigger.rewriteTo };
  });
  x.add(
    'url_rewrites',
    {
      ...base,
      match_pattern: c.take([...here, 'pattern']),
      rewrite_to: c.take([...here, 'rewriteTo']),
      ...(triggers.length > 0 ? { triggers } : {}),
    },
    here,
    { match_pattern: 'pattern', rewrite_to: 'rewriteTo', triggers: 'triggers' },
  );
}
