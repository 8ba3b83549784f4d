/**
 * Versions of a classic API (`version_data`) and how a request names its version (`definition`).
 */
import type { JsonSchema } from '../../json-schema.ts';
import { notYet, enforced, strings, stringMap, closedObject } from '../builders.ts';
import { extendedPaths } from './endpoints.ts';

/**
 * The header changes a version makes on every request (`global_headers`) or every response
 * (`global_response_headers`): headers set, removed and appended, and the switch that turns the
 * three off.
 */
const headerChanges = (
  field: string,
  words: { set: string; remove: string; append: string },
): Record<string, JsonSchema> => ({
  [field]: enforced(stringMap(words.set)),
  [`${field}_remove`]: enforced(strings(words.remove)),
  [`${field}_append`]: enforced(stringMap(words.append)),
  [`${field}_disabled`]: enforced({
    type: 'boolean',
    description: `Turns \`${field}\`, \`${field}_remove\` and \`${field}_append\` off.`,
  }),
});

const versionInfo: JsonSchema = closedObject(
  { title: 'VersionInfo', description: 'One version of the API.' },
  {
    name: enforced({ type: 'string', description: 'Version name.' }),
    expires: enforced({
      type: 'string',
      description:
        'When the version expires (`2006-01-02 15:04`, UTC); from then on requests get 403. Empty: never.',
    }),
    paths: enforced(
      closedObject(
        { title: 'VersionInfoPaths', description: 'Older endpoint lists: plain paths, every method.' },
        {
          ignored: strings('Paths served without authentication.'),
          white_list: strings('The only paths served.'),
          black_list: strings('Paths refused.'),
        },
      ),
    ),
    use_extended_paths: enforced({
      type: 'boolean',
      description:
        'Use `extended_paths` (accepted either way: the lists of extended_paths say what is not supported).',
    }),
    extended_paths: extendedPaths,
    ...headerChanges('global_headers', {
      set: "Headers set on every upstream request (replacing the client's).",
      remove: 'Headers removed from every upstream request.',
      append:
        "Headers appended to every upstream request: a header the request has keeps its value and gets this one after a comma; one it lacks is set. Applied after `global_headers`. An svc extension (the Gateway API's `RequestHeaderModifier.add`).",
    }),
    ...headerChanges('global_response_headers', {
      set: "Headers set on every response (replacing the upstream's).",
      remove: 'Headers removed from every response.',
      append:
        "Headers appended to every response: the upstream's header is kept and this value sent after it (as another line of the same header); one the upstream lacks is set. Applied after `global_response_headers`. An svc extension (the Gateway API's `ResponseHeaderModifier.add`).",
    }),
    ignore_endpoint_case: enforced({
      type: 'boolean',
      description: 'Match endpoint paths case-insensitively.',
    }),
    global_size_limit: enforced({
      type: 'integer',
      minimum: 0,
      description: 'Largest request body in bytes for every endpoint (past it 413); 0 no limit.',
    }),
    global_size_limit_disabled: enforced({ type: 'boolean', description: 'Turns `global_size_limit` off.' }),
    override_target: enforced({
      type: 'string',
      description:
        'Upstream of this version, instead of `proxy.target_url` (a URL without a scheme means http://).',
    }),
  },
);

/** Versions of a classic API. */
export const versionData: JsonSchema = closedObject(
  {
    title: 'VersionData',
    description: 'Versions of the API. A new API has one version, `Default`, and is not versioned.',
    'x-svc-support': 'supported',
  },
  {
    not_versioned: {
      type: 'boolean',
      default: true,
      description:
        'Serve one version only (`default_version`, else `Default`, else the only one); false chooses the version per request, as `definition` says.',
    },
    default_version: {
      type: 'string',
      description:
        'Version used when a request names none (without one, such a request of a versioned API gets 403 `Version information not found`).',
    },
    versions: {
      type: 'object',
      additionalProperties: versionInfo,
      description: 'Versions by name.',
    },
  },
);

const VERSIONS_ELSEWHERE =
  "versions served by separate APIs (a base API naming child APIs) are not built yet: list the versions in one API's `version_data.versions`";

/** How a request names its version (`definition`). */
export const versionDefinition: JsonSchema = closedObject(
  {
    title: 'VersionDefinition',
    description: 'Where a request names its version.',
    'x-svc-support': 'supported',
  },
  {
    enabled: notYet(
      {
        type: 'boolean',
        description: 'Versions served by other APIs (the base API of `versions`).',
      },
      VERSIONS_ELSEWHERE,
    ),
    name: notYet(
      {
        type: 'string',
        description: 'Name of the base version (versions served by other APIs).',
      },
      VERSIONS_ELSEWHERE,
    ),
    default: notYet(
      {
        type: 'string',
        description:
          'Default version among versions served by other APIs (here: `version_data.default_version`).',
      },
      VERSIONS_ELSEWHERE,
    ),
    location: {
      type: 'string',
      enum: ['', 'header', 'url-param', 'url'],
      description:
        'Where a request of an API with `not_versioned: false` names its version: a header, a query parameter, or the first path segment after the listen path.',
    },
    key: { type: 'string', description: 'Header or query parameter name (`header`, `url-param`).' },
    strip_path: {
      type: 'boolean',
      description: 'With `url`: remove the version segment from the path sent upstream.',
    },
    strip_versioning_data: {
      type: 'boolean',
      description:
        'Remove the version (header, query parameter or path segment) from the request sent upstream.',
    },
    url_versioning_pattern: {
      type: 'string',
      description:
        'With `url`: a first segment that does not match this regular expression names no version.',
    },
    fallback_to_default: {
      type: 'boolean',
      description: 'Serve an unknown version with `default_version` instead of 403.',
    },
    versions: notYet(stringMap('Version name -> ID of the API that serves it.'), VERSIONS_ELSEWHERE),
  },
);
