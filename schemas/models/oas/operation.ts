/** The middleware of one operation under `x-svc-api-gateway.middleware.operations`. */
import type { JsonSchema } from '../../json-schema.ts';
import { headerList, seconds, statuses, switched } from './parts.ts';
import { strings, objectOf } from '../builders.ts';

const endpointSwitch = (title: string, what: string): JsonSchema =>
  switched(title, what, {
    ignoreCase: { type: 'boolean', description: 'Match the path case-insensitively.' },
  });

const headerTransform = (title: string, what: string): JsonSchema =>
  switched(title, what, {
    add: headerList('Headers set (a header already there is replaced).'),
    remove: strings('Headers removed.'),
  });

const bodyTransform = (title: string, what: string): JsonSchema =>
  switched(title, what, {
    format: {
      type: 'string',
      enum: ['json', 'xml'],
      description:
        'Format of the body the template reads: `json`, or `xml` read into a map as the reference reads it (docs/gateway.md, "Body transforms").',
    },
    body: { type: 'string', description: 'The template, base64-encoded.' },
    path: { type: 'string', description: 'File of the template (instead of `body`).' },
  });

/** One rule of a URL rewrite trigger. */
const oasRewriteRule: JsonSchema = objectOf(
  { title: 'OasUrlRewriteRule', description: 'A condition of a trigger.', required: ['in', 'pattern'] },
  {
    in: {
      type: 'string',
      enum: ['header', 'query', 'path', 'sessionMetadata', 'requestBody', 'requestContext'],
      description: 'Where the value is read.',
    },
    name: { type: 'string', description: 'Name of the header, parameter, path part or key.' },
    pattern: { type: 'string', description: 'Regular expression the value must match.' },
    negate: { type: 'boolean', description: 'Trigger when the value does not match.' },
  },
);

/** Middleware of one operation (`middleware.operations.<operationId>`). */
export const oasOperation: JsonSchema = objectOf(
  {
    title: 'OasOperation',
    description: 'Middleware of one operation (classic: `extended_paths` entries of its path and method).',
    'x-kubernetes-preserve-unknown-fields': true,
  },
  {
    allow: endpointSwitch('OasAllow', 'Only allowed operations are served (classic `white_list`).'),
    block: endpointSwitch('OasBlock', 'Refused with 403 (classic `black_list`).'),
    ignoreAuthentication: endpointSwitch(
      'OasIgnoreAuthentication',
      'Served without authentication (classic `ignored`).',
    ),
    internal: switched(
      'OasInternal',
      'Reachable only through internal targets of the gateway (`svc://self/...`, `svc://<api>/...`); a client calling it directly gets 403 (classic `internal`).',
    ),
    requestSizeLimit: switched('OasRequestSizeLimit', 'Largest request body (classic `size_limits`).', {
      value: { type: 'integer', minimum: 0, description: 'Bytes; past them 413.' },
    }),
    transformRequestHeaders: headerTransform(
      'OasTransformRequestHeaders',
      'Request header changes (classic `transform_headers`).',
    ),
    transformResponseHeaders: headerTransform(
      'OasTransformResponseHeaders',
      'Response header changes (classic `transform_response_headers`).',
    ),
    transformRequestMethod: switched(
      'OasTransformRequestMethod',
      'Method change (classic `method_transforms`).',
      {
        toMethod: { type: 'string', description: 'Method sent upstream.' },
      },
    ),
    urlRewrite: switched('OasUrlRewrite', 'URL rewrite (classic `url_rewrites`).', {
      pattern: { type: 'string', description: 'Regular expression over the path (the basic trigger).' },
      rewriteTo: { type: 'string', description: 'Rewrite target; `$1`... are the groups of `pattern`.' },
      triggers: {
        type: 'array',
        description: 'Advanced triggers; the first that fires gives the target.',
        items: objectOf(
          { title: 'OasUrlRewriteTrigger', description: 'A trigger.', required: ['rules', 'rewriteTo'] },
          {
            condition: { type: 'string', enum: ['any', 'all'], description: 'Any rule or all rules.' },
            rules: { type: 'array', items: oasRewriteRule, description: 'The conditions.' },
            rewriteTo: { type: 'string', description: 'Rewrite target when the trigger fires.' },
          },
        ),
      },
    }),
    transformRequestBody: bodyTransform(
      'OasTransformRequestBody',
      'Request body template (classic `transform`).',
    ),
    transformResponseBody: bodyTransform(
      'OasTransformResponseBody',
      'Response body template (classic `transform_response`).',
    ),
    validateRequest: switched(
      'OasValidateRequest',
      "The JSON body is validated against the operation's `requestBody` schema (classic `validate_json`).",
      {
        errorResponseCode: {
          type: 'integer',
          minimum: 400,
          maximum: 599,
          description: 'Status of a refused body (default 422).',
        },
      },
    ),
    mockResponse: switched(
      'OasMockResponse',
      'The gateway answers instead of the upstream (classic `mock_response`).',
      {
        code: { type: 'integer', description: 'Status (default 200).' },
        body: { type: 'string', description: 'Body.' },
        headers: headerList('Headers.'),
      },
    ),
    enforceTimeout: switched('OasEnforceTimeout', 'Upstream timeout (classic `hard_timeouts`).', {
      value: seconds('Seconds the upstream has to answer; past them 504.'),
    }),
    circuitBreaker: switched('OasCircuitBreaker', 'Circuit breaker (classic `circuit_breakers`).', {
      threshold: {
        type: 'number',
        minimum: 0,
        maximum: 1,
        description: 'Share of failed samples that opens it.',
      },
      sampleSize: { type: 'integer', minimum: 0, description: 'Requests the share is computed over.' },
      coolDownPeriod: seconds('Seconds before the endpoint is tried again.'),
      halfOpenStateEnabled: { type: 'boolean', description: 'Return to service on trial requests.' },
    }),
    cache: switched('OasOperationCache', 'Caching of this operation (classic `advance_cache_config`).', {
      timeout: seconds('Seconds a response stays cached.'),
      cacheResponseCodes: statuses,
    }),
    trackEndpoint: switched(
      'OasTrackEndpoint',
      "The operation's requests are counted under its path in the request metrics' `endpoint` label (classic `track_endpoints`).",
    ),
    doNotTrackEndpoint: switched(
      'OasDoNotTrackEndpoint',
      "The operation's requests are left out of the request metrics (classic `do_not_track_endpoints`).",
    ),
  },
);
