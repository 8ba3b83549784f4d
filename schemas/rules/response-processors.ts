/**
 * `response_processors`, the reference's API-level list of response middleware, as svc serves
 * it: `header_injector` (its `options.add_headers` and `options.remove_headers` change every
 * response of the API: gateway/middleware/headers) and `response_body_transform` (a name for the
 * endpoints' `transform_response` templates, which svc applies whether it is listed or not, as
 * the reference does since its response middleware turns itself on). Any other processor is
 * refused by name at write time, with what to use instead: never stored and ignored.
 */
import type { ResponseProcessor, ResponseProcessorOptions } from '../generated/models.ts';
import { NOT_SUPPORTED_YET } from '../support.ts';
import { headerProblems } from './endpoints.ts';
import { quote, type FieldProblem } from './field-problem.ts';
import { hasContent, list, model, problem, text, type ClassicApiInput } from './read.ts';

/** The processors svc serves. */
export const RESPONSE_PROCESSORS = ['header_injector', 'response_body_transform'] as const;

/** The options `header_injector` reads. */
const INJECTOR_OPTIONS: ReadonlySet<string> = new Set(['add_headers', 'remove_headers']);

/** Processors of the reference svc does not serve, and what to write instead. */
const REFUSED: Readonly<Record<string, { type: 'NotSupported' | 'NotSupportedYet'; message: string }>> = {
  response_body_transform_jq: {
    type: 'NotSupportedYet',
    message: `${NOT_SUPPORTED_YET}: jq needs an engine svc does not embed (none runs in Node.js without a native build): use body templates (\`transform_response\`, named by response_body_transform)`,
  },
  header_transform: {
    type: 'NotSupportedYet',
    message: `${NOT_SUPPORTED_YET}: rewriting the upstream's host in response headers (\`rev_proxy_header_cleanup\`) is not built; set fixed values with header_injector's add_headers`,
  },
  custom_mw_res_hook: {
    type: 'NotSupported',
    message:
      "the reference's internal name of response plugins: list a JavaScript or TypeScript plugin in custom_middleware.response instead",
  },
  goplugin_res_hook: {
    type: 'NotSupported',
    message:
      'Go plugins cannot run in a Node.js gateway: list a JavaScript or TypeScript plugin in custom_middleware.response instead',
  },
};

/** Every problem of `response_processors`, with paths under the definition. */
export function responseProcessorProblems(api: ClassicApiInput): FieldProblem[] {
  const out: FieldProblem[] = [];
  list(api.response_processors).forEach((p, i) => {
    const entry = model<ResponseProcessor>(p);
    if (entry === undefined) return; // the schema reports it
    const at = `response_processors[${String(i)}]`;
    const name = text(entry.name) ?? '';
    const options = model<ResponseProcessorOptions>(entry.options) ?? {};
    if (name === 'header_injector') {
      for (const key of Object.keys(options)) {
        if (!INJECTOR_OPTIONS.has(key) && hasContent(options[key])) {
          out.push(
            problem(
              `${at}.options.${key}`,
              'Invalid',
              'header_injector reads add_headers and remove_headers only: remove this option',
            ),
          );
        }
      }
      out.push(
        ...headerProblems(`${at}.options.add_headers`, options.add_headers, undefined),
        ...headerProblems(`${at}.options.remove_headers`, undefined, options.remove_headers),
      );
    } else if (name === 'response_body_transform') {
      const set = Object.keys(options).filter((k) => hasContent(options[k]));
      if (set.length > 0) {
        out.push(
          problem(
            `${at}.options`,
            'Invalid',
            `response_body_transform takes no options (${set.map((k) => quote(k)).join(', ')}): its templates are the endpoints' transform_response entries`,
          ),
        );
      }
    } else if (name === '') {
      out.push(problem(`${at}.name`, 'Required', `name the processor: ${RESPONSE_PROCESSORS.join(' or ')}`));
    } else {
      const refused = REFUSED[name];
      out.push(
        problem(
          `${at}.name`,
          refused?.type ?? 'NotSupported',
          refused?.message ??
            `${quote(name)} is not a response processor svc knows: use ${RESPONSE_PROCESSORS.join(' or ')}`,
        ),
      );
    }
  });
  return out;
}
