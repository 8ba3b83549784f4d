/**
 * The proxy settings of a classic API: where it listens on the gateway and where it sends
 * requests.
 */
import type { JsonSchema } from '../../json-schema.ts';
import { resourceRef } from '../../common.ts';
import { notYet, enforced, strings, closedObject } from '../builders.ts';

/** Upstream and path settings. */
export const proxy: JsonSchema = closedObject(
  {
    title: 'ProxyConfig',
    description: 'Where the API listens on the gateway and where it sends requests.',
    'x-svc-support': 'supported',
    required: ['listen_path'],
  },
  {
    listen_path: {
      type: 'string',
      // Empty for TCP and TLS APIs, which are reached on their listen_port (schemas/rules/tcp.ts).
      pattern: '^(/|$)',
      description:
        'Base path on the gateway, for example `/orders/`. Must start with `/`; empty for a `tcp` or `tls` API, which is reached on its `listen_port`, and empty or left out for an `internal` API, which is reached through `svc://` targets only (with the path the target gives).',
    },
    listen_path_exact: {
      type: 'boolean',
      description:
        'Serve the listen path itself only (compared without case, a trailing slash included), not the paths under it: what an Ingress path of `pathType: Exact` becomes. An svc extension; the reference serves every listen path as a prefix.',
    },
    listen_path_case_sensitive: {
      type: 'boolean',
      description:
        'Compare the listen path with the request path with case (`/two` does not serve `/Two`), as the Gateway API asks of its path matches; the operator sets it on the APIs it generates from HTTPRoutes. Two APIs whose listen paths differ only in case still claim the same route. An svc extension; by default listen paths are compared without case, as the reference does.',
    },
    target_url: {
      type: 'string',
      description:
        'Upstream address (http or https; without a scheme, http: `httpbin.org` is `http://httpbin.org`). A cluster service is addressed as `http://<service>.<namespace>.svc:<port>`; another API of the gateway as `svc://<api_id>/<path>`; the upstream of a `tcp` or `tls` API as `tcp://<host>:<port>`. Required unless GraphQL is enabled or `target_internal` is set.',
    },
    strip_listen_path: {
      type: 'boolean',
      description: 'Remove the listen path from the request before it is proxied.',
    },
    preserve_host_header: {
      type: 'boolean',
      description: "Send the client's Host header upstream instead of the target's.",
    },
    disable_strip_slash: {
      type: 'boolean',
      description:
        "Send a request with nothing after the listen path (or only `/`) to the target URL's path exactly as written, its trailing slash kept (`http://users:4001/query/` gets `/query/`, `http://users:4001/query` gets `/query`), whether the client wrote a trailing slash or not; without it the target's trailing slash is dropped and the client's kept. Longer paths are joined the same way either way (docs/gateway.md, \"Upstream paths\").",
    },
    target_internal: enforced(
      closedObject(
        {
          title: 'TargetInternal',
          description:
            "Another API of the gateway as the upstream, instead of `target_url` (which it replaces): requests go through that API's chain in process, as `svc://<api_id>/<path>?<query>` (docs/gateway.md).",
        },
        {
          target: resourceRef("The ApiDefinition requests go to (the gateway's model takes its API ID)"),
          path: { type: 'string', description: 'Path on the target API (no query).' },
          query: { type: 'string', description: 'Query added to the request.' },
        },
      ),
    ),
    enable_load_balancing: enforced({
      type: 'boolean',
      description:
        'Round-robin over `target_list` instead of `target_url` (per API, shared by the requests of a gateway process; `target_url` may then be empty).',
    }),
    target_list: enforced(strings('Upstreams load balancing goes round (each as `target_url`).')),
    mirror_targets: enforced(
      strings(
        "Upstreams (http or https) that get a copy of each request as it goes to the upstream (after the chain's header changes and rewrites), their answers ignored: a mirror never delays or fails the request (a failed or slow mirror is only logged). A request body is copied when it has a Content-Length of at most 1 MiB (such an API is served by node:http, which reads bodies); a larger or chunked body is not mirrored. An svc extension (the Gateway API's `RequestMirror`).",
      ),
    ),
    mirror_percent: enforced({
      type: 'number',
      minimum: 0,
      maximum: 100,
      description:
        "The share of requests `mirror_targets` get, in percent (default 100): each request is picked at random, and a picked request goes to every mirror. An svc extension (the Gateway API's `RequestMirror.percent` and `fraction`).",
    }),
    check_host_against_uptime_tests: enforced({
      type: 'boolean',
      description:
        'Leave out of the rotation an upstream whose host (`host:port`) fails a check of `uptime_tests`, until it passes again.',
    }),
    service_discovery: notYet(
      closedObject(
        {
          title: 'ServiceDiscoveryConfiguration',
          description: 'Upstreams read from a service registry.',
          'x-svc-switch': 'use_discovery_service',
        },
        {
          use_discovery_service: { type: 'boolean', description: 'Turns service discovery on.' },
          query_endpoint: { type: 'string', description: 'URL of the registry query.' },
          use_nested_query: { type: 'boolean', description: 'The answer nests the data in a JSON string.' },
          parent_data_path: { type: 'string', description: 'Path of the nested data.' },
          data_path: { type: 'string', description: 'Path of the host in the answer.' },
          port_data_path: { type: 'string', description: 'Path of the port in the answer.' },
          target_path: { type: 'string', description: 'Path appended to discovered hosts.' },
          use_target_list: { type: 'boolean', description: 'The answer is a list of hosts.' },
          cache_timeout: { type: 'integer', minimum: 0, description: 'Seconds an answer is cached.' },
          cache_disabled: { type: 'boolean', description: 'Do not cache answers.' },
          endpoint_returns_list: { type: 'boolean', description: 'The registry returns a list.' },
        },
      ),
      'needs a client of a service registry (Consul, etcd, Eureka), which svc does not have yet: in a cluster, address the Service (`http://<service>.<namespace>.svc:<port>`), or list the upstreams in `proxy.target_list`',
    ),
    transport: closedObject(
      { title: 'ProxyTransport', description: 'Connection to the upstream.' },
      {
        ssl_insecure_skip_verify: {
          type: 'boolean',
          description: "Don't verify the upstream's certificate (self-signed upstreams; not for production).",
        },
        ssl_min_version: {
          type: 'integer',
          enum: [769, 770, 771, 772],
          description: 'Lowest TLS version (769 TLS 1.0 ... 772 TLS 1.3).',
        },
        ssl_max_version: notYet(
          {
            type: 'integer',
            enum: [0, 769, 770, 771, 772],
            description: 'Highest TLS version towards the upstream.',
          },
          'not built yet: upstream connections offer every version Node.js has up to TLS 1.3 (`ssl_min_version` is supported)',
        ),
        ssl_ciphers: notYet(
          strings('Cipher suites allowed towards the upstream.'),
          "not built yet: upstream connections use Node.js's default cipher suites",
        ),
        ssl_force_common_name_check: notYet(
          {
            type: 'boolean',
            description: "Check the upstream certificate's common name against the host.",
          },
          "not built yet: the upstream certificate is checked against the host by its subject alternative names (Node.js's check), without the reference's common-name check",
        ),
        proxy_url: notYet(
          {
            type: 'string',
            description: 'Forward proxy for upstream requests, such as `http://proxy:3128`.',
          },
          'not built yet: upstream connections go straight to the upstream, never through a forward proxy',
        ),
      },
    ),
  },
);
