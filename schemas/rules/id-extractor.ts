/**
 * The identity extractor of a gRPC plugin server's auth_check (`custom_middleware.id_extractor`),
 * as the reference gateway runs it: before the hook is asked, an identity is read from the
 * request (a header, a form parameter, or the body: the whole value, or a match of a regular
 * expression in it); a request without one is refused 400 `Authorization field missing`. The
 * session the hook answers is the session of that identity, and while the deadline the hook set
 * in it (`id_extractor_deadline`, Unix seconds) is ahead, later requests with the same identity
 * get that session without the hook being asked (gateway/plugins/coprocess/id-extractor.ts).
 * XPath extraction is not built yet and is refused by name.
 */
import type { CustomMiddleware, MiddlewareIdExtractor } from '../generated/models.ts';
import { quote, type FieldProblem } from './field-problem.ts';
import { GRPC_PLUGIN_DRIVER, customAuthHook, pluginDriverOf } from './plugins.ts';
import { hasContent, isTrue, model, problem, text, type ClassicApiInput } from './read.ts';
import { HEADER_NAME, regexProblem } from './values.ts';

/** Where the identity is read from. */
export const ID_SOURCES = ['header', 'form', 'body'] as const;
/** How it is read: the whole value, or a match of a regular expression. */
export const ID_EXTRACTORS = ['value', 'regex'] as const;

/** An identity extractor the gateway runs. */
export type IdExtractor = (
  { from: 'header'; headerName: string } | { from: 'form'; paramName: string } | { from: 'body' }
) &
  ({ with: 'value' } | { with: 'regex'; expression: string; matchIndex: number });

const AT = 'custom_middleware.id_extractor';

function extractorOf(api: ClassicApiInput) {
  const raw = model<MiddlewareIdExtractor>(model<CustomMiddleware>(api.custom_middleware)?.id_extractor);
  // The empty shape exported definitions carry (`extract_from: ""`, ...) is no extractor.
  return raw === undefined || isTrue(raw.disabled) || !hasContent(raw) ? undefined : raw;
}

/** Every problem of the identity extractor of `api` (none when it has none, or it is disabled). */
export function idExtractorProblems(api: ClassicApiInput): FieldProblem[] {
  const raw = extractorOf(api);
  if (raw === undefined) return [];
  // xpath_expression is refused as not supported yet (the model says so); the rest is checked
  // once it is gone.
  if (hasContent(model<Record<string, unknown>>(raw.extractor_config)?.xpath_expression)) return [];
  const out: FieldProblem[] = [];
  if (pluginDriverOf(api) !== GRPC_PLUGIN_DRIVER || customAuthHook(api) === undefined) {
    out.push(
      problem(
        AT,
        'Invalid',
        `the identity extractor keeps the sessions a gRPC plugin server's auth_check answers: set custom_middleware.driver to ${GRPC_PLUGIN_DRIVER} with an auth_check hook, or remove id_extractor`,
      ),
    );
  }
  const from = text(raw.extract_from) ?? '';
  const how = text(raw.extract_with) ?? '';
  const config = model<Record<string, unknown>>(raw.extractor_config) ?? {};
  if (!(ID_SOURCES as readonly string[]).includes(from)) {
    out.push(
      problem(
        `${AT}.extract_from`,
        from === '' ? 'Required' : 'NotSupported',
        `${from === '' ? '' : `${quote(from)}: `}write one of ${ID_SOURCES.join(', ')}`,
      ),
    );
  }
  if (how === 'xpath') {
    out.push(
      problem(
        `${AT}.extract_with`,
        'NotSupported',
        'xpath: reading the identity with an XPath expression is not built yet: use regex (a regular expression over the value) or value',
      ),
    );
  } else if (!(ID_EXTRACTORS as readonly string[]).includes(how)) {
    out.push(
      problem(
        `${AT}.extract_with`,
        how === '' ? 'Required' : 'NotSupported',
        `${how === '' ? '' : `${quote(how)}: `}write one of ${ID_EXTRACTORS.join(', ')}`,
      ),
    );
  }
  const cfg = `${AT}.extractor_config`;
  if (from === 'header') {
    const name = text(config.header_name) ?? '';
    if (!HEADER_NAME.test(name)) {
      out.push(
        problem(
          `${cfg}.header_name`,
          name === '' ? 'Required' : 'Invalid',
          name === ''
            ? 'the header the identity is read from, such as Authorization'
            : `${quote(name)} is not a header name`,
        ),
      );
    }
  }
  if (from === 'form' && (text(config.param_name) ?? '') === '') {
    out.push(problem(`${cfg}.param_name`, 'Required', 'the form parameter the identity is read from'));
  }
  if (from === 'body' && how === 'value') {
    out.push(
      problem(
        `${AT}.extract_with`,
        'Invalid',
        'value reads a header or a form parameter (as the reference does); the body is read with regex: set extract_with to regex with a regex_expression',
      ),
    );
  }
  // A setting of the extractor the chosen source and method do not read is refused, not ignored.
  const reads = new Set([
    ...(from === 'header' ? ['header_name'] : from === 'form' ? ['param_name'] : []),
    ...(how === 'regex' ? ['regex_expression', 'regex_match_index'] : []),
  ]);
  const known = (ID_SOURCES as readonly string[]).includes(from) && [...ID_EXTRACTORS, 'xpath'].includes(how);
  for (const key of known ? Object.keys(config) : []) {
    if (!reads.has(key) && hasContent(config[key])) {
      out.push(
        problem(
          `${cfg}.${key}`,
          'Invalid',
          `not read when extract_from is ${quote(from)} and extract_with ${quote(how)}: remove it`,
        ),
      );
    }
  }
  if (how === 'regex') {
    const expression = text(config.regex_expression) ?? '';
    const bad = expression === '' ? undefined : regexProblem(expression);
    if (expression === '' || bad !== undefined) {
      out.push(
        problem(
          `${cfg}.regex_expression`,
          expression === '' ? 'Required' : 'Invalid',
          bad ?? 'the regular expression whose match is the identity',
        ),
      );
    }
    const index = config.regex_match_index;
    if (index !== undefined && !(Number.isInteger(index) && (index as number) >= 0)) {
      out.push(
        problem(
          `${cfg}.regex_match_index`,
          'Invalid',
          `${quote(index)}: which match is the identity, counted from 0`,
        ),
      );
    }
  }
  return out;
}

/** The identity extractor of `api` the gateway runs, or undefined (none, disabled, or invalid). */
export function idExtractorOf(api: ClassicApiInput): IdExtractor | undefined {
  const raw = extractorOf(api);
  if (raw === undefined || idExtractorProblems(api).length > 0) return undefined;
  const config = model<Record<string, unknown>>(raw.extractor_config) ?? {};
  const how =
    text(raw.extract_with) === 'regex'
      ? {
          with: 'regex' as const,
          expression: text(config.regex_expression) ?? '',
          matchIndex: typeof config.regex_match_index === 'number' ? config.regex_match_index : 0,
        }
      : { with: 'value' as const };
  switch (text(raw.extract_from)) {
    case 'header':
      return { from: 'header', headerName: text(config.header_name) ?? '', ...how };
    case 'form':
      return { from: 'form', paramName: text(config.param_name) ?? '', ...how };
    default:
      return { from: 'body', ...how };
  }
}
