/**
 * The checks of a stored API, at write time (the management API refuses the write) and at load
 * time (a reload leaves the API out): the schema, the rules of the model that every part checks
 * (schemas/rules), then what depends on this gateway's configuration (its TLS certificate, ports
 * and `enable_jsvm`); and the listener and protocol each API claims, one protocol a port. Each
 * problem is reported with its field path. Compiling checked APIs into routes is compile.ts.
 */
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { apiDefinitionModel } from '../../schemas/models/api-definition/index.ts';
import { oasApiDocument } from '../../schemas/models/oas.ts';
import { compile as compileSchema, fieldPath, type SchemaProblem } from '../../schemas/validate.ts';
import { gatewayInternalTargetProblems } from '../../schemas/rules/internal-target.ts';
import type { ListenerKey } from '../pipeline/router.ts';
import {
  checkClassicApi,
  listenPathProblem,
  onGatewayPort,
  reservedPathProblem,
} from '../../schemas/rules/api-definition.ts';
import { formatProblem, type FieldProblem } from '../../schemas/rules/field-problem.ts';
import { OAS_EXTENSION, checkOasDocument, oasToClassic } from '../../schemas/oas/index.ts';
import { nestingMessage, tooDeep } from '../../schemas/rules/nesting.ts';
import { httpsCertificateProblems } from '../../schemas/rules/https.ts';
import { isTcpApi } from '../../schemas/rules/tcp.ts';
import { JSVM_OFF } from '../../schemas/rules/virtual-endpoints.ts';
import { OTTO_JSVM_OFF, ottoHooksOf } from '../../schemas/rules/plugins.ts';

/** What the checks and compilation need to know about the gateway's own listeners and settings. */
export interface CompileEnv {
  /** The configured gateway port (0 when it is chosen at start). */
  listenPort: number;
  /** The management port when it is separate; undefined when it shares the gateway port. */
  controlPort: number | undefined;
  /**
   * Whether the gateway has a TLS certificate of its own (tls_cert_file). Without it, HTTPS
   * listeners serve only the APIs' own certificates, by SNI (schemas/rules/https.ts).
   */
  tls: boolean;
  /** The configured HTTPS API port (`https_port`), kept open for HTTPS APIs. */
  httpsPort?: number | undefined;
  /** `enable_jsvm`: whether virtual endpoints' JavaScript may run. Absent: it may not. */
  jsvm?: boolean | undefined;
  /** The lowest port this gateway may open (server/port-privilege.ts). Absent: any. */
  lowestPort?: number | undefined;
  /**
   * Why this gateway's stream processor (Bento) can't run (streaming off, Bento missing), or
   * undefined when it can: Kafka data sources of the data graph are consumed through it. Absent:
   * it can't.
   */
  streaming?: (() => string | undefined) | undefined;
}

const schemaCheck = compileSchema(apiDefinitionModel);
const oasSchemaCheck = compileSchema(oasApiDocument);

/** A schema problem as a line of the management API's answer. */
const schemaLine = (p: SchemaProblem): string => `${p.path === '' ? '(root)' : p.path}: ${p.message}`;

/** The listener an API is served on. */
export function listenerOf(api: GatewayApiDefinition, env: CompileEnv): ListenerKey {
  const port = api.listen_port ?? 0;
  return port === 0 || port === env.listenPort ? 'main' : port;
}

/** `http` or `https` for the listener of an API. */
export function protocolOf(api: GatewayApiDefinition): 'http' | 'https' {
  return api.protocol === 'https' ? 'https' : 'http';
}

/** The protocol an API serves on its listener: a port has one (tcp and tls ports one API). */
export function portProtocolOf(api: GatewayApiDefinition): string {
  return isTcpApi(api) ? (api.protocol ?? 'tcp') : protocolOf(api);
}

/**
 * Every reason the definition can't be served, each as `<field path>: <message>`: the schema
 * first; then the rules of the model that every part checks (schemas/rules); then what depends on
 * this gateway's configuration (its TLS certificate and ports).
 */
export function checkApi(value: unknown, env: CompileEnv): string[] {
  const schemaProblems = schemaCheck(value).map(schemaLine);
  if (schemaProblems.length > 0) return schemaProblems;
  const api = value as GatewayApiDefinition;
  return [...checkClassicApi(api), ...configurationProblems(api, env)].map(formatProblem);
}

/**
 * Whether a stored API is an OAS document (`/svc/apis/oas`) rather than a classic definition: it
 * has the extension, which no classic definition can have.
 */
export function isOasDocument(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && Object.hasOwn(value, OAS_EXTENSION);
}

/** The classic form of a stored API: the definition itself, or what an OAS document converts to. */
export function classicOf(value: unknown): GatewayApiDefinition {
  return isOasDocument(value) ? oasToClassic(value).api : (value as GatewayApiDefinition);
}

/**
 * `checkApi` for either kind of stored API: a classic definition, or an OAS document checked
 * against its schema, then as the classic definition it converts to (problems at document
 * paths). Returns the classic form the gateway serves. A document nested too deep for the checks
 * to walk (put in the store by other means than the management API) is refused first.
 */
export function checkStoredApi(
  value: unknown,
  env: CompileEnv,
): { api: GatewayApiDefinition; problems: string[] } {
  const deep = tooDeep(value);
  if (deep !== undefined) {
    return { api: value as GatewayApiDefinition, problems: [nestingMessage('the API definition', deep)] };
  }
  if (!isOasDocument(value)) return { api: value as GatewayApiDefinition, problems: checkApi(value, env) };
  const schemaProblems = oasSchemaCheck(value).map(schemaLine);
  if (schemaProblems.length > 0) return { api: oasToClassic(value).api, problems: schemaProblems };
  const { api, problems } = checkOasDocument(value, (a) => configurationProblems(a, env));
  return { api: onHttpsPort(api, env), problems: problems.map(formatProblem) };
}

/**
 * An OAS API with static mutual TLS (`server.clientCertificates`) or certificates of its custom
 * domain (`server.customDomain.certificates`) is served on the gateway's HTTPS port
 * (`https_port`), over HTTPS: OAS documents name no port, and on the gateway port, plain HTTP, no
 * client can present a certificate (the API would refuse everyone) and no certificate is served.
 * Without an HTTPS port the document is refused (`oasHttpsProblems`).
 */
function onHttpsPort(api: GatewayApiDefinition, env: CompileEnv): GatewayApiDefinition {
  if (!needsHttps(api) || env.httpsPort === undefined) return api;
  return { ...api, listen_port: env.httpsPort, protocol: 'https' };
}

/** Whether an OAS API is served only over HTTPS (see `onHttpsPort`). */
function needsHttps(api: GatewayApiDefinition): boolean {
  return api.is_oas === true && (api.use_mutual_tls_auth === true || (api.certificates ?? []).length > 0);
}

/** An OAS API served only over HTTPS on a gateway without an HTTPS port: never servable. */
function oasHttpsProblems(api: GatewayApiDefinition, env: CompileEnv): FieldProblem[] {
  if (!needsHttps(api) || env.httpsPort !== undefined) return [];
  const start =
    'start the gateway with https_port (--https-port, with --tls-cert and --tls-key), where such APIs are served';
  const problems: FieldProblem[] = [];
  if (api.use_mutual_tls_auth === true) {
    problems.push({
      path: 'use_mutual_tls_auth',
      type: 'Forbidden',
      message: `static mutual TLS needs the gateway's HTTPS port: OAS APIs are served on the gateway port, plain HTTP, where no client presents a certificate; ${start}, or set enabled to false`,
    });
  }
  if ((api.certificates ?? []).length > 0) {
    problems.push({
      path: 'certificates',
      type: 'Forbidden',
      message: `the custom domain's certificates need the gateway's HTTPS port: OAS APIs are served on the gateway port, plain HTTP, where no certificate is served; ${start}, or remove them`,
    });
  }
  return problems;
}

/** Kafka data sources are consumed through the stream processor: refused where it can't run. */
function kafkaStreamingProblems(api: GatewayApiDefinition, env: CompileEnv): FieldProblem[] {
  const g = api.graphql;
  if (g?.enabled !== true || g.version !== '2') return [];
  const kafka = (g.engine?.data_sources ?? []).flatMap((d, i) => (d.kind === 'Kafka' ? [i] : []));
  if (kafka.length === 0) return [];
  const why = env.streaming === undefined ? 'this gateway runs none' : env.streaming();
  if (why === undefined) return [];
  return kafka.map((i) => ({
    path: `graphql.engine.data_sources[${i}].kind`,
    type: 'Forbidden' as const,
    message: `a Kafka data source is consumed through the gateway's stream processor (Bento): ${why}`,
  }));
}

/** What this gateway's configuration adds to the shared rules. */
function configurationProblems(api: GatewayApiDefinition, env: CompileEnv): FieldProblem[] {
  // The object form of internal targets names an API by its ID here (the operator resolves
  // references), which only the gateway's model says.
  const problems: FieldProblem[] = gatewayInternalTargetProblems(api);
  if (env.jsvm !== true) problems.push(...jsvmProblems(api));
  problems.push(...oasHttpsProblems(api, env), ...kafkaStreamingProblems(api, env));
  const listener = listenerOf(api, env);
  const lowest = env.lowestPort ?? 1;
  if (
    listener !== 'main' &&
    listener < lowest &&
    listener !== env.httpsPort &&
    listener !== env.controlPort
  ) {
    problems.push({
      path: 'listen_port',
      type: 'Invalid',
      message: `port ${String(listener)} needs a privilege this gateway does not have (it runs as a user without CAP_NET_BIND_SERVICE): choose a listen_port from ${String(lowest)}`,
    });
  }
  problems.push(...httpsCertificateProblems(api, env.tls));
  if (api.protocol === 'https') {
    if (listener === 'main') {
      problems.push({
        path: 'listen_port',
        type: 'Required',
        message: 'https needs a listen_port of its own: the gateway port serves http',
      });
    }
  }
  if (isTcpApi(api)) {
    const port = api.listen_port ?? 0;
    if (port > 0 && port === env.listenPort) {
      problems.push({
        path: 'listen_port',
        type: 'Invalid',
        message: `${port} is the gateway port, which serves HTTP: choose another listen_port`,
      });
    }
    if (port > 0 && port === env.httpsPort) {
      problems.push({
        path: 'listen_port',
        type: 'Invalid',
        message: `${port} is the gateway's HTTPS port (https_port), which serves HTTPS APIs: choose another listen_port`,
      });
    }
    if (api.protocol === 'tls' && !env.tls && (api.certificates ?? []).length === 0) {
      problems.push({
        path: 'certificates',
        type: 'Required',
        message:
          "a tls API terminates TLS with its certificates, or the gateway's (tls_cert_file): list the certificate IDs /svc/certs gave",
      });
    }
  }
  if (listener !== 'main' && listener === env.controlPort) {
    problems.push({
      path: 'listen_port',
      type: 'Invalid',
      message: `${listener} is the management port: choose another listen_port`,
    });
  }
  // The shared rule reserves the management paths when listen_port is unset or 0; a listen_port
  // equal to the gateway's own port is the gateway port too.
  const lp = api.proxy.listen_path;
  if (listener === 'main' && !onGatewayPort(api) && listenPathProblem(lp) === undefined) {
    const reserved = reservedPathProblem(lp);
    if (reserved !== undefined)
      problems.push({ path: 'proxy.listen_path', type: 'Invalid', message: reserved });
  }
  return problems;
}

/**
 * Each virtual endpoint (`extended_paths.virtual`, blob or file, of any version) that is not
 * disabled, and each otto (TykJS) middleware hook, refused: its function would run in a
 * `node:vm` context, which is no security boundary, so running API authors' JavaScript is the
 * operator's choice (`enable_jsvm`, off by default, as the reference's).
 */
function jsvmProblems(api: GatewayApiDefinition): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const [name, v] of Object.entries(api.version_data?.versions ?? {})) {
    const at = fieldPath(`/version_data/versions/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`);
    (v.extended_paths?.virtual ?? []).forEach((e, i) => {
      if (e.disabled === true) return;
      problems.push({
        path: `${at}.extended_paths.virtual[${String(i)}]`,
        type: 'Forbidden',
        message: JSVM_OFF,
      });
    });
  }
  // Otto (TykJS) middleware files run in a `node:vm` context too.
  for (const { at } of ottoHooksOf(api))
    problems.push({ path: at, type: 'Forbidden', message: OTTO_JSVM_OFF });
  return problems;
}

/** Whether a stored API is served at all. */
export function isServed(api: GatewayApiDefinition): boolean {
  return api.active !== false && api.internal !== true;
}

/**
 * Why `api` can't share its listener with the APIs already `claimed` (listener -> protocol and the
 * API that set it), or undefined: one port has one protocol.
 */
export function protocolConflict(
  api: GatewayApiDefinition,
  claimed: ReadonlyMap<ListenerKey, { protocol: string; by: string }>,
  env: CompileEnv,
  /** The API's own ID: its own claim is no clash. */
  id?: string,
): string | undefined {
  const listener = listenerOf(api, env);
  const seen = claimed.get(listener);
  const protocol = portProtocolOf(api);
  if (seen === undefined || seen.by === id) return undefined;
  const port = listener === 'main' ? 'the gateway port' : `port ${String(listener)}`;
  // A tcp or tls port pipes every connection to one upstream: it has one API.
  if (isTcpProtocol(seen.protocol) || isTcpProtocol(protocol))
    return `listen_port: ${port} is already the port of API ${seen.by} (${seen.protocol}); a tcp or tls API has its port alone`;
  if (seen.protocol === protocol) return undefined;
  return `listen_port: ${port} already serves ${seen.protocol} for API ${seen.by}; a port has one protocol`;
}

const isTcpProtocol = (p: string): boolean => p === 'tcp' || p === 'tls';

/** Listener protocols claimed by `apis`, the first (by order) winning. */
export function claimedProtocols(
  apis: readonly { id: string; api: GatewayApiDefinition }[],
  env: CompileEnv,
): Map<ListenerKey, { protocol: string; by: string }> {
  const claimed = new Map<ListenerKey, { protocol: string; by: string }>();
  for (const { id, api } of apis) {
    const listener = listenerOf(api, env);
    if (!claimed.has(listener)) claimed.set(listener, { protocol: portProtocolOf(api), by: id });
  }
  return claimed;
}
