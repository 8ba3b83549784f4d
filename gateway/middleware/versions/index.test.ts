/**
 * Versions chosen per request, as tables (request in; status, body, headers out):
 * `definition.location` (`header`, `url-param`, `url`) with `key`, `default_version`,
 * `fallback_to_default`, `strip_versioning_data` and `strip_path`, the reference's 403s for a
 * missing and an unknown version, `override_target` per version, the endpoint features applied
 * per chosen version (lists, size limits, expiry), a key's access rights to versions. Each table
 * runs against the files and Redis stores with the fast path on and off; on the fast path every
 * row must be served by it.
 */
import { useEcho } from '../../testing/echo.ts';
import { keyed, keyless } from '../../testing/harness.ts';
import { describeProxiedTable, type ProxiedRow } from '../../testing/tables.ts';

const NOT_FOUND = 'Version information not found';
const UNKNOWN = 'This API version does not seem to exist';
const FORBIDDEN = 'Requested endpoint is forbidden';
const EXPIRED = 'Api Version has expired, please check documentation or contact administrator';

const echo = useEcho();
const other = useEcho('other');

const versioned = (
  definition: Record<string, unknown>,
  versions: Record<string, Record<string, unknown>>,
  defaultVersion = '',
): Record<string, unknown> => ({
  definition,
  version_data: {
    not_versioned: false,
    default_version: defaultVersion,
    versions: Object.fromEntries(
      Object.entries(versions).map(([name, v]) => [name, { name, use_extended_paths: true, ...v }]),
    ),
  },
});

const apis = (): Record<string, unknown>[] => [
  keyless(
    'byheader',
    '/byheader/',
    echo().url,
    versioned(
      { location: 'header', key: 'X-Api-Version' },
      {
        v1: { extended_paths: { black_list: [{ path: '/old' }] }, global_size_limit: 3 },
        v2: {
          override_target: other().url,
          global_headers: { 'x-version': 'two' },
          global_response_headers: { 'x-served-by': 'v2' },
        },
        v3: { expires: '2020-01-01 00:00' },
      },
    ),
  ),
  keyless(
    'byparam',
    '/byparam/',
    echo().url,
    versioned(
      { location: 'url-param', key: 'version', strip_versioning_data: true, fallback_to_default: true },
      { v1: {}, v2: { override_target: other().url } },
      'v1',
    ),
  ),
  keyless(
    'byurl',
    '/byurl/',
    echo().url,
    versioned(
      { location: 'url', strip_path: true, url_versioning_pattern: 'v[0-9]+' },
      { v1: { extended_paths: { white_list: [{ path: '/v1/users' }] } }, v2: {} },
      'v2',
    ),
    { strip_listen_path: true },
  ),
  keyless('byurlkeep', '/byurlkeep/', echo().url, versioned({ location: 'url' }, { v1: {} })),
  keyed(
    'keyver',
    '/keyver/',
    echo().url,
    versioned({ location: 'header', key: 'x-v' }, { v1: {}, v2: {} }, 'v1'),
  ),
  keyless('moved', '/moved/', echo().url, {
    version_data: {
      not_versioned: true,
      versions: { Default: { name: 'Default', override_target: other().url } },
    },
  }),
];

const rows: ProxiedRow[] = [
  // A header names the version.
  { name: 'header: no version, no default', path: '/byheader/x', status: 403, error: NOT_FOUND },
  {
    name: 'header: an unknown version',
    path: '/byheader/x',
    headers: { 'x-api-version': 'v9' },
    status: 403,
    error: UNKNOWN,
  },
  {
    name: 'header: v1, proxied with the header kept',
    path: '/byheader/x',
    headers: { 'x-api-version': 'v1' },
    status: 200,
    upstream: 'echo',
    upstreamHeaders: { 'x-api-version': 'v1', 'x-version': undefined },
  },
  {
    name: "header: v1's black list",
    path: '/byheader/old',
    headers: { 'x-api-version': 'v1' },
    status: 403,
    error: FORBIDDEN,
  },
  {
    name: "header: v1's size limit",
    method: 'POST',
    path: '/byheader/x',
    headers: { 'x-api-version': 'v1' },
    body: 'abcd',
    status: 413,
    error: 'Request body too large',
  },
  {
    name: "header: v2 has neither v1's black list nor its size limit",
    method: 'POST',
    path: '/byheader/old',
    headers: { 'x-api-version': 'v2' },
    body: 'abcd',
    status: 200,
    upstream: 'other',
  },
  {
    name: "header: v2's override_target and global headers",
    path: '/byheader/x?a=1',
    headers: { 'x-api-version': 'v2' },
    status: 200,
    upstream: 'other',
    upstreamPath: '/byheader/x',
    upstreamQuery: 'a=1',
    upstreamHeaders: { 'x-version': 'two' },
    responseHeaders: { 'x-served-by': 'v2' },
  },
  {
    name: 'header: v3 has expired',
    path: '/byheader/x',
    headers: { 'x-api-version': 'v3' },
    status: 403,
    error: EXPIRED,
  },
  // A query parameter names it, stripped before proxying; unknown falls back to the default.
  {
    name: 'url-param: none: the default',
    path: '/byparam/x?b=2',
    status: 200,
    upstream: 'echo',
    upstreamQuery: 'b=2',
  },
  {
    name: 'url-param: v2, stripped',
    path: '/byparam/x?version=v2&b=2',
    status: 200,
    upstream: 'other',
    upstreamQuery: 'b=2',
  },
  {
    name: 'url-param: only the version, stripped',
    path: '/byparam/x?version=v2',
    status: 200,
    upstream: 'other',
    upstreamQuery: '',
  },
  {
    name: 'url-param: unknown falls back to the default',
    path: '/byparam/x?version=v7',
    status: 200,
    upstream: 'echo',
    upstreamQuery: '',
  },
  // The first path segment names it, stripped from the upstream path.
  {
    name: 'url: v1 on its white list, the segment stripped',
    path: '/byurl/v1/users/1',
    status: 200,
    upstreamPath: '/users/1',
  },
  { name: "url: outside v1's white list", path: '/byurl/v1/orders', status: 403, error: FORBIDDEN },
  { name: 'url: v2', path: '/byurl/v2/orders', status: 200, upstreamPath: '/orders' },
  {
    name: 'url: a segment outside the pattern names no version: the default',
    path: '/byurl/orders',
    status: 200,
    upstreamPath: '/orders',
  },
  { name: 'url: an unknown version', path: '/byurl/v3/orders', status: 403, error: UNKNOWN },
  { name: 'url: not stripped', path: '/byurlkeep/v1/a', status: 200, upstreamPath: '/byurlkeep/v1/a' },
  { name: 'url: nothing after the listen path', path: '/byurlkeep/', status: 403, error: NOT_FOUND },
  // A key's access rights name the versions it may use.
  {
    name: 'access rights: a version the key may use',
    path: '/keyver/x',
    headers: { authorization: 'ver-key', 'x-v': 'v1' },
    status: 200,
  },
  {
    name: 'access rights: another version',
    path: '/keyver/x',
    headers: { authorization: 'ver-key', 'x-v': 'v2' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  // override_target of a version not versioned by request.
  { name: 'override_target: not versioned', path: '/moved/a', status: 200, upstream: 'other' },
];

describeProxiedTable('versions', apis, rows, {
  'ver-key': {
    access_rights: { keyver: { api_id: 'keyver', versions: ['v1'] } },
  },
});
