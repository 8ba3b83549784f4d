/**
 * Per-path middleware of a classic API's versions (`extended_paths`), as the reference's classic
 * model writes them. Each field says whether svc enforces it (`x-svc-support`): a not-supported
 * field is accepted at its neutral value (empty, false, 0) and refused otherwise.
 */
import type { JsonSchema } from '../../json-schema.ts';
import { httpMethod, resourceRef } from '../../common.ts';
import { notYet, enforced, strings, stringMap, closedObject } from '../builders.ts';

const path: JsonSchema = {
  type: 'string',
  description: 'Path of the endpoint, relative to the listen path.',
};
const method: JsonSchema = { ...httpMethod, description: 'HTTP method of the endpoint.' };
/** `disabled` of every entry of an endpoint list. */
const disabled: JsonSchema = { type: 'boolean', description: 'Skips the entry.' };

/** A path with a method: the shape most endpoint lists share. */
const endpoint = (title: string, description: string, extra: Record<string, JsonSchema> = {}): JsonSchema =>
  closedObject({ title, description }, { path, method, ...extra });

const endpointMethodMeta: JsonSchema = closedObject(
  { title: 'EndpointMethodMeta', description: 'What an endpoint list does for one method.' },
  {
    action: {
      type: 'string',
      enum: ['no_action', 'reply'],
      description:
        '`no_action` lets the request through; `reply` answers with `code` (default 200), `data` and `headers` instead of the upstream (a mock response; in `ignored` and `white_list`).',
    },
    code: { type: 'integer', description: 'Status of a `reply`.' },
    data: { type: 'string', description: 'Body of a `reply`.' },
    headers: stringMap('Headers of a `reply`.'),
  },
);

const endpointMeta: JsonSchema = closedObject(
  { title: 'EndPointMeta', description: 'An endpoint of an allow, block or ignore list.' },
  {
    path: { type: 'string', description: 'Path (a regular expression) relative to the listen path.' },
    method: { ...httpMethod, description: 'HTTP method (newer definitions use `method_actions`).' },
    ignore_case: { type: 'boolean', description: 'Match the path case-insensitively.' },
    disabled,
    method_actions: {
      type: 'object',
      additionalProperties: endpointMethodMeta,
      description: 'What to do per method.',
    },
  },
);

const templateData: JsonSchema = closedObject(
  { title: 'TemplateData', description: 'A body template.' },
  {
    input_type: {
      type: 'string',
      enum: ['', 'json', 'xml'],
      description:
        'Format of the body the template reads: `json` (the default), or `xml`, read into a map as the reference reads it (docs/gateway.md, "Body transforms").',
    },
    template_mode: {
      type: 'string',
      enum: ['', 'blob', 'file'],
      description:
        '`blob`: `template_source` is the base64 template; `file` (a file path) is not supported yet.',
    },
    enable_session: {
      type: 'boolean',
      description: "Make the session's `meta_data` available to the template as `._tyk_meta`.",
    },
    template_source: { type: 'string', description: 'The template (base64 in `blob` mode) or its file.' },
    from_dashboard: {
      type: 'boolean',
      description: 'Kept for definitions written by a dashboard; has no effect.',
    },
  },
);

const templateMeta = endpoint('TemplateMeta', 'A body transform of one endpoint.', {
  template_data: templateData,
  disabled,
});

const transformJq = endpoint('TransformJQMeta', 'A jq body transform of one endpoint.', {
  filter: { type: 'string', description: 'The jq filter.' },
});

const headerInjection = endpoint('HeaderInjectionMeta', 'Headers added and removed on one endpoint.', {
  add_headers: stringMap('Headers added.'),
  delete_headers: strings('Headers removed.'),
  act_on: { type: 'boolean', description: 'Act on the response instead of the request.' },
  disabled,
});

const stringRegexMap: JsonSchema = closedObject(
  { title: 'StringRegexMap', description: 'A regular expression a value must match.' },
  {
    match_rx: { type: 'string', description: 'The regular expression.' },
    reverse: { type: 'boolean', description: 'Trigger when the value does not match.' },
  },
);

const regexMap = (what: string): JsonSchema => ({
  type: 'object',
  additionalProperties: stringRegexMap,
  description: `${what} -> the regular expression its value must match.`,
});

/** An internal target: another API of the gateway, by reference, with a path and query. */
const internalTarget = (title: string, description: string): JsonSchema => ({
  title,
  description,
  type: 'object',
  additionalProperties: false,
  properties: {
    target: resourceRef("The ApiDefinition to send the request to (the gateway's model takes its API ID)"),
    path: { type: 'string', description: 'Path on the target API (no query).' },
    query: { type: 'string', description: 'Query added to the request, such as `check_limits=true`.' },
  },
});

const routingTrigger: JsonSchema = closedObject(
  { title: 'RoutingTrigger', description: 'A condition that rewrites the URL to another target.' },
  {
    on: { type: 'string', enum: ['all', 'any'], description: 'Whether all options or any must match.' },
    options: closedObject(
      { title: 'RoutingTriggerOptions', description: 'What the trigger matches.' },
      {
        header_matches: regexMap('Header name'),
        query_val_matches: regexMap('Query parameter'),
        path_part_matches: regexMap('Path part'),
        session_meta_matches: regexMap('Session metadata key'),
        request_context_matches: regexMap('Request context variable'),
        payload_matches: stringRegexMap,
      },
    ),
    rewrite_to: {
      type: 'string',
      description:
        "Where the request goes when the trigger matches (instead of the entry's `rewrite_to`); the same forms.",
    },
    rewrite_to_internal: enforced(
      internalTarget(
        'RewriteToInternal',
        "Another API of the gateway to rewrite to (instead of the trigger's `rewrite_to`): `svc://<api_id>/<path>?<query>`.",
      ),
    ),
  },
);

const urlRewrite = endpoint('URLRewriteMeta', 'A URL rewrite of one endpoint.', {
  match_pattern: {
    type: 'string',
    description:
      'Regular expression over the path after the listen path, with the query (`/books/1?x=2`); nothing is rewritten unless it matches. Its groups are `$1`, `$2`, ...',
  },
  rewrite_to: {
    type: 'string',
    description:
      "The path sent upstream after the target's path (`$1`... the groups of `match_pattern`; `$tyk_context.` and `$tyk_meta.` variables; a `?` part replaces the query), an http(s) URL naming another host, or `svc://<api_id>/<path>` naming another API of the gateway.",
  },
  rewrite_to_internal: enforced(
    internalTarget(
      'RewriteToInternal',
      'Another API of the gateway to rewrite to (instead of `rewrite_to`): the request goes through its chain as `svc://<api_id>/<path>?<query>`.',
    ),
  ),
  triggers: {
    type: 'array',
    items: routingTrigger,
    description:
      'Conditions checked in order when `match_pattern` matches: the first that holds rewrites to its own `rewrite_to`.',
  },
  disabled,
});

const virtualMeta = endpoint(
  'VirtualMeta',
  'A virtual endpoint: a function answers instead of the upstream.',
  {
    response_function_name: {
      type: 'string',
      description: 'Name of the function the source defines (a JavaScript identifier).',
    },
    function_source_type: {
      type: 'string',
      enum: ['blob', 'file'],
      description: '`blob` (the source in `function_source_uri`, base64) or `file`.',
    },
    function_source_uri: {
      type: 'string',
      description:
        "The source (base64), or its `.js` file: a path relative to the gateway's `plugin_dir` that stays inside it.",
    },
    use_session: {
      type: 'boolean',
      description: "Pass the key's session to the function (else it gets an empty one).",
    },
    proxy_on_error: {
      type: 'boolean',
      description:
        'When the function throws or times out, send the request upstream instead of answering 500.',
    },
    disabled,
  },
);

const circuitBreaker = endpoint('CircuitBreakerMeta', 'A circuit breaker of one endpoint.', {
  threshold_percent: {
    type: 'string',
    pattern: '^(0(\\.\\d+)?|1(\\.0+)?)$',
    description:
      'Share of failed requests (0 to 1, written as a string such as "0.5") that trips the breaker.',
  },
  samples: { type: 'integer', minimum: 0, description: 'Requests the share is computed over.' },
  return_to_service_after: {
    type: 'integer',
    minimum: 0,
    description: 'Seconds before the endpoint is tried again.',
  },
  disable_half_open_state: {
    type: 'boolean',
    description: 'Return to service at once instead of on trial requests.',
  },
  disabled,
});

const validateJson = endpoint(
  'ValidatePathMeta',
  'JSON Schema validation of request bodies on one endpoint.',
  {
    schema: {
      type: 'object',
      description: 'The JSON Schema the body must match.',
      'x-kubernetes-preserve-unknown-fields': true,
    },
    schema_b64: { type: 'string', description: 'The JSON Schema, base64 encoded (older definitions).' },
    error_response_code: {
      type: 'integer',
      minimum: 400,
      maximum: 599,
      description: 'Status of a refused body (default 422).',
    },
    disabled,
  },
);

const cacheMeta = endpoint('CacheMeta', 'Advanced cache settings of one endpoint (GET, HEAD and OPTIONS).', {
  cache_key_regex: notYet(
    {
      type: 'string',
      description: 'Regular expression over the body whose match joins the cache key.',
    },
    'not built yet: the cache key holds the API, the key, the method, the path, the query and `cache_by_headers`, never the body',
  ),
  cache_response_codes: {
    type: 'array',
    items: { type: 'integer' },
    description: 'Statuses that are cached.',
  },
  timeout: { type: 'integer', minimum: 0, description: 'Seconds a response stays cached.' },
  disabled,
});

const trackEndpointMeta = endpoint('TrackEndpointMeta', 'An endpoint of a tracking list.', { disabled });

const endpointList = (items: JsonSchema, description: string, reason: string): JsonSchema =>
  notYet({ type: 'array', items, description }, reason);
const supportedList = (items: JsonSchema, description: string): JsonSchema =>
  enforced({ type: 'array', items, description });

/**
 * Per-path middleware of a version. A list not supported yet is accepted empty; a path is a
 * regular expression with `{name}` parameters, matched from the start of the path after the listen
 * path up to a segment boundary (schemas/rules/endpoints.ts).
 */
export const extendedPaths: JsonSchema = closedObject(
  { title: 'ExtendedPathsSet', description: 'Per-path middleware of the version.' },
  {
    ignored: supportedList(
      endpointMeta,
      'Endpoints served without authentication (no key asked, no key limits counted).',
    ),
    white_list: supportedList(
      endpointMeta,
      'The only endpoints served; any other gets 403 `Requested endpoint is forbidden`.',
    ),
    black_list: supportedList(endpointMeta, 'Endpoints refused with 403 `Requested endpoint is forbidden`.'),
    cache: supportedList(
      { type: 'string' },
      'Paths whose GET, HEAD and OPTIONS requests are cached (with `cache_options.enable_cache`).',
    ),
    advance_cache_config: supportedList(
      cacheMeta,
      'Cache settings per endpoint: the first entry matching caches with its `timeout` and `cache_response_codes`.',
    ),
    transform: supportedList(
      templateMeta,
      'Request body templates: the first entry matching the method and path rewrites the JSON or XML body sent upstream (docs/gateway.md, "Body transforms").',
    ),
    transform_response: supportedList(
      templateMeta,
      "Response body templates: the first entry matching the request's method and path rewrites the upstream's JSON or XML body (buffered, at most 1 MiB).",
    ),
    transform_jq: endpointList(
      transformJq,
      'Request jq transforms.',
      'needs a jq engine, which svc does not embed (none runs in Node.js without a native build): use body templates (`transform`, `transform_response`)',
    ),
    transform_jq_response: endpointList(
      transformJq,
      'Response jq transforms.',
      'needs a jq engine, which svc does not embed (none runs in Node.js without a native build): use body templates (`transform`, `transform_response`)',
    ),
    transform_headers: supportedList(
      headerInjection,
      'Request header changes per endpoint: the first entry matching removes `delete_headers`, then sets `add_headers`.',
    ),
    transform_response_headers: supportedList(
      headerInjection,
      'Response header changes per endpoint: the first entry matching removes `delete_headers`, then sets `add_headers`.',
    ),
    hard_timeouts: supportedList(
      endpoint('HardTimeoutMeta', 'A timeout of one endpoint.', {
        timeout: {
          type: 'number',
          minimum: 0,
          description:
            'Seconds the upstream has to start its response; past them 504 (0: none). A fraction counts to the millisecond (`0.5` is 500 ms): an svc extension, the reference takes whole seconds.',
        },
        disabled,
      }),
      'Upstream timeouts per endpoint: the first entry matching applies.',
    ),
    circuit_breakers: supportedList(
      circuitBreaker,
      'Circuit breakers per endpoint, per gateway process: while open, 503 `Service temporarily unavailable.`',
    ),
    url_rewrites: supportedList(
      urlRewrite,
      'URL rewrites per endpoint: the first entry matching the method and path rewrites the path sent upstream.',
    ),
    virtual: supportedList(
      virtualMeta,
      'Virtual endpoints: the first entry matching the method and path is answered by its JavaScript function (the reference\'s contract: `function f(request, session, config) { return SvcJsResponse({Body, Headers, Code}, session.meta_data) }`, `TykJsResponse` accepted), run in a worker of its own bounded by the gateway\'s `plugin_timeout_ms` (docs/gateway.md, "Virtual endpoints").',
    ),
    size_limits: supportedList(
      endpoint('RequestSizeMeta', 'A request size limit of one endpoint.', {
        size_limit: {
          type: 'integer',
          minimum: 0,
          description: 'Largest request body in bytes (0: no body); past it 413.',
        },
        disabled,
      }),
      'Request size limits per endpoint (with `global_size_limit`, the smaller applies).',
    ),
    method_transforms: supportedList(
      endpoint('MethodTransformMeta', 'A method change of one endpoint.', {
        to_method: { ...httpMethod, description: 'Method sent upstream (not HEAD).' },
        disabled,
      }),
      'Method changes per endpoint: the first entry matching sends the request upstream with `to_method`.',
    ),
    track_endpoints: supportedList(
      trackEndpointMeta,
      'Endpoints tracked one by one: the request metrics of a request matching an entry carry the entry\'s `path` as their `endpoint` label (docs/gateway.md, "Metrics").',
    ),
    do_not_track_endpoints: supportedList(
      trackEndpointMeta,
      'Endpoints left out of the request metrics, as `do_not_track` leaves out a whole API (it wins over `track_endpoints`).',
    ),
    validate_json: supportedList(
      validateJson,
      'JSON Schema validation of request bodies per endpoint (ajv): the first error answers, with `error_response_code`.',
    ),
    internal: supportedList(
      endpoint(
        'InternalMeta',
        'An endpoint reachable only through internal targets (`svc://self/...` from the same API, `svc://<api>/...` from another).',
        { disabled },
      ),
      'Endpoints reachable only through internal targets of the gateway (`svc://`: a `target_url`, a URL rewrite); a client calling one directly gets 403 `Requested endpoint is forbidden`.',
    ),
    mock_response: supportedList(
      endpoint('MockResponseMeta', 'A mock answer of one endpoint.', {
        code: { type: 'integer', description: 'Status (default 200).' },
        body: { type: 'string', description: 'Body.' },
        headers: stringMap('Headers.'),
        disabled,
      }),
      'Mock answers per endpoint: the gateway answers instead of the upstream.',
    ),
    go_plugin: endpointList(
      endpoint('GoPluginMeta', 'A compiled plugin of one endpoint.', {
        plugin_path: { type: 'string', description: 'Plugin file.' },
        func_name: { type: 'string', description: 'Function name.' },
        disabled,
      }),
      'Compiled plugins per endpoint.',
      'Go plugins are shared objects loaded into a Go process and cannot run in a Node.js gateway: use JavaScript or TypeScript plugins (`custom_middleware`)',
    ),
    persist_graphql: endpointList(
      endpoint('PersistGraphQLMeta', 'A REST endpoint answered by a stored GraphQL operation.', {
        operation: { type: 'string', description: 'The GraphQL operation.' },
        variables: {
          type: 'object',
          description: 'Variables of the operation.',
          'x-kubernetes-preserve-unknown-fields': true,
        },
      }),
      'Stored GraphQL operations per endpoint.',
      'not built yet: turning a REST request into a stored GraphQL operation sent to the upstream is not implemented',
    ),
    rate_limit: endpointList(
      endpoint('RateLimitMeta', 'A rate limit of one endpoint.', {
        rate: { type: 'number', minimum: 0, description: 'Requests per `per` seconds.' },
        per: { type: 'number', minimum: 0, description: 'Window in seconds.' },
        disabled,
      }),
      'Rate limits per endpoint (API-wide, all clients together).',
      'not built yet: API-wide limits are per API (`global_rate_limit`); per-endpoint limits are per key (`access_rights.<api>.endpoints` of keys and policies)',
    ),
  },
);
