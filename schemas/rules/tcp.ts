/**
 * TCP and TLS APIs (`protocol` tcp or tls): the gateway listens on the API's `listen_port` and
 * pipes each connection's bytes to `proxy.target_url` (`tcp://host:port`), terminating TLS first
 * with `protocol: tls`. A connection carries no HTTP request, so only the settings that apply to a
 * connection are honoured: the IP allow and block lists, the API-wide rate limit (counted per
 * connection) and, for tls, the API's certificates. Every other field set to a value that changes
 * behaviour is refused by name, never stored and ignored. One rule for the webhooks, the gateway's
 * management API and its reload, and the operator.
 */
import type { GatewayApiDefinition, ProxyConfig } from '../generated/models.ts';
import type { JsonSchema } from '../json-schema.ts';
import { apiDefinitionModel } from '../models/api-definition/index.ts';
import { isPlainObject } from '../../lib/plain-object.ts';
import { hasContent, isNeutral } from '../support.ts';
import { quote, type FieldProblem } from './field-problem.ts';
import { fieldPath } from '../validate.ts';
import { model, problem, text, type ClassicApiInput } from './read.ts';

/** The listener protocols whose APIs proxy connections rather than HTTP requests. */
export const TCP_PROTOCOLS = ['tcp', 'tls'] as const;

/** Whether an API proxies TCP connections (`protocol` tcp or tls) rather than HTTP requests. */
export function isTcpApi(api: { protocol?: unknown }): boolean {
  return api.protocol === 'tcp' || api.protocol === 'tls';
}

/**
 * Fields a TCP or TLS API honours (or that only name it). Any other field of the model is refused
 * on such an API unless its value is neutral (schemas/support.ts: false, 0, '', empty lists and
 * maps, an object whose switch is off).
 */
export const TCP_FIELDS = [
  'api_id',
  'org_id',
  'name',
  'slug',
  'active',
  'protocol',
  'listen_port',
  'proxy',
  // Connections carry no credentials: a TCP API is keyless whatever this says; an auth method
  // turned on is refused (it is not in this list).
  'use_keyless',
  'enable_ip_whitelisting',
  'allowed_ips',
  'enable_ip_blacklisting',
  'blacklisted_ips',
  'global_rate_limit',
  'certificates',
  'tags',
  'config_data',
  // Checked below: versions may carry their name only.
  'version_data',
] as const satisfies readonly (keyof GatewayApiDefinition)[];

/** Fields of the ApiDefinition resource (not of the gateway's model) a TCP API may have. */
export const RESOURCE_FIELDS = ['contextRef', 'certificate_secret_names'] as const;

/** The proxy fields a TCP API honours. */
export const TCP_PROXY_FIELDS = [
  'listen_path',
  'target_url',
] as const satisfies readonly (keyof ProxyConfig)[];

/** What a version of a TCP API may set: its name (and an empty set of endpoint settings). */
const TCP_VERSION_FIELDS = new Set<string>(['name', 'use_extended_paths']);

const TARGET_EXAMPLE = 'tcp://sessions-store.default.svc:6379';

/** The upstream of a TCP API: host and port. */
export interface TcpTarget {
  host: string;
  port: number;
}

/** `tcp://host:port` parsed, or why it can't be a TCP upstream. */
export function parseTcpTarget(
  raw: string,
): TcpTarget | { message: string; type: 'Invalid' | 'NotSupported' } {
  const m = /^([a-z][a-z0-9+.-]*):\/\//i.exec(raw);
  const scheme = m?.[1]?.toLowerCase();
  if (scheme !== 'tcp') {
    return {
      type: scheme === undefined ? 'Invalid' : 'NotSupported',
      message:
        scheme === undefined
          ? `${quote(raw)} has no scheme: a tcp or tls API proxies to a tcp:// address, such as ${TARGET_EXAMPLE}`
          : `${quote(raw)}: a tcp or tls API proxies to a tcp:// address (the scheme ${quote(scheme)} is not supported for it), such as ${TARGET_EXAMPLE}`,
    };
  }
  const u = URL.parse(raw);
  if (u === null) {
    return {
      type: 'Invalid',
      message: `${quote(raw)} is not an address: write one such as ${TARGET_EXAMPLE}`,
    };
  }
  const extra =
    u.username !== '' ||
    u.password !== '' ||
    (u.pathname !== '' && u.pathname !== '/') ||
    u.search !== '' ||
    u.hash !== '';
  if (u.hostname === '' || u.port === '' || extra) {
    return {
      type: 'Invalid',
      message: `${quote(raw)}: write a host and a port and nothing else, such as ${TARGET_EXAMPLE}`,
    };
  }
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port) };
}

/**
 * Whether `value`, at a field of schema `node`, leaves the API as if the field were absent: neutral
 * (schemas/support.ts), or the field's schema default (the API server writes defaults, such as
 * `jwt_identity_base_field: sub`, into every stored resource), or an object of such values.
 */
function unchanged(node: JsonSchema | undefined, value: unknown): boolean {
  if (node === undefined) return !hasContent(value);
  if (node.default !== undefined && JSON.stringify(value) === JSON.stringify(node.default)) return true;
  if (isNeutral(node, value)) return true;
  if (node['x-svc-switch'] !== undefined || !isPlainObject(value)) return false;
  const extra = typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined;
  return Object.entries(value).every(([k, v]) => unchanged(node.properties?.[k] ?? extra, v));
}

/**
 * Every reason a TCP or TLS API can't be served as written (none for an HTTP API): a listen_port
 * of its own, a tcp:// target, no listen path, and no field a connection can't honour.
 */
export function tcpProblems(api: ClassicApiInput): FieldProblem[] {
  if (!isTcpApi(api)) return [];
  const protocol = String(api.protocol);
  const problems: FieldProblem[] = [];
  const why = (field: string): string =>
    `a ${protocol} API proxies connections, not HTTP requests: ${field} does not apply to them: remove it (what a ${protocol} API honours: listen_port, proxy.target_url, the IP allow and block lists, global_rate_limit per connection${protocol === 'tls' ? ', certificates' : ''}; docs/gateway.md, "TCP and TLS APIs")`;
  if (!(typeof api.listen_port === 'number' && api.listen_port > 0)) {
    problems.push(
      problem(
        'listen_port',
        'Required',
        `a ${protocol} API is served on a port of its own: set listen_port, such as 7000`,
      ),
    );
  }
  const proxy = model<ProxyConfig>(api.proxy);
  const listenPath = text(proxy?.listen_path);
  if (listenPath !== undefined && listenPath !== '') {
    problems.push(
      problem(
        'proxy.listen_path',
        'Forbidden',
        `a ${protocol} API is reached on its listen_port, not by a path: remove the listen path`,
      ),
    );
  }
  const target = text(proxy?.target_url);
  if (target === undefined || target === '') {
    problems.push(
      problem('proxy.target_url', 'Required', `set the upstream address, such as ${TARGET_EXAMPLE}`),
    );
  } else {
    const t = parseTcpTarget(target);
    if ('message' in t) problems.push(problem('proxy.target_url', t.type, t.message));
  }
  const proxySchema = apiDefinitionModel.properties?.proxy;
  for (const [key, value] of Object.entries(proxy ?? {})) {
    if ((TCP_PROXY_FIELDS as readonly string[]).includes(key)) continue;
    const node = proxySchema?.properties?.[key];
    if (node !== undefined && !unchanged(node, value))
      problems.push(problem(`proxy.${key}`, 'Forbidden', why(`proxy.${key}`)));
  }
  const allowed = new Set<string>([...TCP_FIELDS, ...RESOURCE_FIELDS]);
  if (protocol !== 'tls') {
    allowed.delete('certificates');
    allowed.delete('certificate_secret_names');
  }
  for (const [key, value] of Object.entries(api)) {
    if (allowed.has(key)) continue;
    if (!unchanged(apiDefinitionModel.properties?.[key], value))
      problems.push(problem(key, 'Forbidden', why(key)));
  }
  const versions = model<Record<string, unknown>>(model<{ versions: unknown }>(api.version_data)?.versions);
  for (const [name, v] of Object.entries(versions ?? {})) {
    for (const [key, value] of Object.entries(model<Record<string, unknown>>(v) ?? {})) {
      if (!TCP_VERSION_FIELDS.has(key) && hasContent(value)) {
        const at = fieldPath(
          `/version_data/versions/${name.replaceAll('~', '~0').replaceAll('/', '~1')}/${key}`,
        );
        problems.push(problem(at, 'Forbidden', why(at)));
      }
    }
  }
  return problems;
}
