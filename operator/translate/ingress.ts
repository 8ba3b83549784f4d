/**
 * Ingress -> the ApiDefinitions that serve it (pure, golden-tested). One API per rule host and
 * path, plus the default backend as a catch-all; each API is an ApiDefinition resource the
 * Ingress owns, so the ApiDefinition controller pushes it (certificates, reloads, drift) as it
 * does any other. An Ingress annotated `svc.io/template: <name>` builds its APIs from that
 * ApiDefinition's spec (authentication, policies, limits, plugins), with the Ingress's host, path
 * and backend filled in.
 */
import { createHash } from 'node:crypto';
import type { ApiDefinitionSpec } from '../../schemas/generated/kinds.ts';
import { listenPathProblem, routeKey } from '../../schemas/rules/api-definition.ts';
import { oasToClassic } from '../../schemas/oas/index.ts';

/** Annotation naming the ApiDefinition template an Ingress builds from. */
import { TEMPLATE_ANNOTATION } from '../../schemas/templates.ts';
export { TEMPLATE_ANNOTATION };
/** Annotation choosing the upstream protocol (`http`, the default, or `https`). */
export const BACKEND_PROTOCOL_ANNOTATION = 'svc.io/backend-protocol';
/** Label naming the Ingress a generated ApiDefinition belongs to. */
export const INGRESS_LABEL = 'svc.io/ingress';

/** A Service backend of an Ingress path (networking.k8s.io/v1 `IngressServiceBackend`). */
export interface IngressServiceBackend {
  name: string;
  port?: { number?: number; name?: string };
}

/** An Ingress backend: a Service, or a resource (not supported). */
export interface IngressBackend {
  service?: IngressServiceBackend;
  resource?: { kind?: string; name?: string };
}

/** A path of a rule. */
export interface IngressPath {
  path?: string;
  pathType?: string;
  backend: IngressBackend;
}

/** An Ingress, as much of it as translation reads. */
export interface IngressInput {
  metadata: { name: string; namespace: string; annotations?: Record<string, string> };
  spec?: {
    defaultBackend?: IngressBackend;
    rules?: { host?: string; http?: { paths: IngressPath[] } }[];
    tls?: { hosts?: string[]; secretName?: string }[];
  };
}

/** A Service, as much of it as translation reads. */
export interface ServiceInput {
  spec?: { type?: string; externalName?: string; ports?: { name?: string; port: number }[] };
}

/** What translation reads besides the Ingress: the cluster state, resolved by the reconciler. */
export interface IngressTranslationContext {
  /** The Service of the Ingress's namespace named `name`; undefined when it does not exist. */
  service: (name: string) => ServiceInput | undefined;
  /** Whether the TLS Secret of the Ingress's namespace named `name` exists. */
  secretExists: (name: string) => boolean;
  /** The spec of the template the Ingress names, when it names one (the reconciler found it). */
  template?: ApiDefinitionSpec;
  /** The gateway's HTTP and HTTPS ingress ports (`SVC_HTTP_INGRESS_PORT`, `SVC_HTTPS_INGRESS_PORT`). */
  httpPort: number;
  httpsPort: number;
  /**
   * The port of the operator's gateway (of `SVC_URL`), when known. An API for it gets no
   * `listen_port`: the gateway serves it on its own port all the same, and writes of APIs on a
   * port of their own cost the gateway a check against every stored API.
   */
  gatewayPort?: number;
}

/** One ApiDefinition to create: its resource name and its spec. */
export interface GeneratedApi {
  name: string;
  spec: ApiDefinitionSpec;
}

/** Reasons of the problems translation finds (Event reasons on the Ingress). */
export type IngressProblemReason =
  | 'ServiceNotFound'
  | 'PortNotFound'
  | 'SecretNotFound'
  | 'BackendNotSupported'
  | 'PathInvalid'
  | 'PathConflict'
  | 'AnnotationInvalid';

/** Something that keeps part of an Ingress from being served, at a field path. */
export interface IngressProblem {
  reason: IngressProblemReason;
  /** Field path in the Ingress (`spec.rules[0].http.paths[1].backend.service.port.name`). */
  path: string;
  message: string;
  /** Whether it may resolve by itself (a Service or Secret created later): the reconciler retries. */
  retry: boolean;
}

/** The translation of an Ingress: the APIs that serve it, and what keeps the rest from being served. */
export interface IngressTranslation {
  apis: GeneratedApi[];
  problems: IngressProblem[];
}

/** A route an Ingress asks for, before its backend is resolved. */
interface Route {
  scheme: 'http' | 'https';
  host: string | undefined;
  path: string;
  pathType: 'Exact' | 'Prefix' | 'ImplementationSpecific';
  backend: IngressBackend;
  /** Field path of the backend. */
  at: string;
  secretName?: string;
}

/**
 * The gateway ID of a generated API: a hash of the Ingress's namespaced name, the scheme, host,
 * path and its type, so that a re-applied Ingress keeps its IDs (and keys granted to them).
 */
export function ingressApiId(
  namespace: string,
  name: string,
  route: { scheme: string; host: string | undefined; path: string; pathType: string },
): string {
  const text = [namespace, name, route.scheme, route.host ?? '*', route.path, route.pathType].join('\n');
  return `ingress-${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
}

/** The name of a generated ApiDefinition: the Ingress's name and a part of the API ID (at most 253). */
export function generatedName(ingressName: string, apiId: string): string {
  return `${ingressName.slice(0, 253 - 13)}-${apiId.slice('ingress-'.length, 'ingress-'.length + 12)}`;
}

/** The hosts with TLS and the Secret of each (the first entry naming a host wins). */
function tlsHosts(ingress: IngressInput, problems: IngressProblem[]): Map<string, string> {
  const hosts = new Map<string, string>();
  (ingress.spec?.tls ?? []).forEach((tls, i) => {
    if (tls.secretName === undefined || tls.secretName === '') {
      problems.push({
        reason: 'SecretNotFound',
        path: `spec.tls[${i}].secretName`,
        message: `spec.tls[${i}].secretName: Required value: name the kubernetes.io/tls Secret of these hosts`,
        retry: false,
      });
      return;
    }
    for (const host of tls.hosts ?? []) {
      if (!hosts.has(host.toLowerCase())) hosts.set(host.toLowerCase(), tls.secretName);
    }
  });
  return hosts;
}

/** The routes an Ingress asks for, each with the field path of its backend. */
function routesOf(ingress: IngressInput, tls: Map<string, string>): Route[] {
  const routes: Route[] = [];
  const spec = ingress.spec ?? {};
  const schemes = (host: string | undefined): { scheme: 'http' | 'https'; secretName?: string }[] => {
    const secretName = host === undefined ? undefined : tls.get(host.toLowerCase());
    // A TLS host is served over HTTPS only: its clients are not sent its traffic in clear text.
    return secretName === undefined ? [{ scheme: 'http' }] : [{ scheme: 'https', secretName }];
  };
  (spec.rules ?? []).forEach((rule, r) => {
    const host = rule.host === undefined || rule.host === '' ? undefined : rule.host.toLowerCase();
    if (!rule.http) {
      // A host without paths is served by the default backend.
      if (spec.defaultBackend && host !== undefined) {
        for (const s of schemes(host)) {
          routes.push({
            ...s,
            host,
            path: '/',
            pathType: 'Prefix',
            backend: spec.defaultBackend,
            at: 'spec.defaultBackend',
          });
        }
      }
      return;
    }
    rule.http.paths.forEach((p, i) => {
      const pathType =
        p.pathType === 'Exact' || p.pathType === 'Prefix' ? p.pathType : 'ImplementationSpecific';
      for (const s of schemes(host)) {
        routes.push({
          ...s,
          host,
          path: p.path === undefined || p.path === '' ? '/' : p.path,
          pathType,
          backend: p.backend,
          at: `spec.rules[${r}].http.paths[${i}].backend`,
        });
      }
    });
  });
  if (spec.defaultBackend) {
    // The catch-all: any host, any path the rules leave, on each ingress port in use.
    routes.push({
      scheme: 'http',
      host: undefined,
      path: '/',
      pathType: 'Prefix',
      backend: spec.defaultBackend,
      at: 'spec.defaultBackend',
    });
    if (tls.size > 0) {
      routes.push({
        scheme: 'https',
        host: undefined,
        path: '/',
        pathType: 'Prefix',
        backend: spec.defaultBackend,
        at: 'spec.defaultBackend',
      });
    }
  }
  return routes;
}

/** The listen path of a route; Prefix paths are element-wise, which is how the gateway matches. */
function listenPathOf(route: Route): string {
  // `/foo/` and `/foo` are the same Prefix (the Ingress spec ignores a trailing slash).
  if (route.pathType !== 'Exact' && route.path.length > 1 && route.path.endsWith('/')) {
    return route.path.replace(/\/+$/, '') || '/';
  }
  return route.path;
}

/** The Service port a backend names, by number or by name (resolved through the Service). */
function portOf(
  backend: IngressServiceBackend,
  service: ServiceInput,
  at: string,
  namespace: string,
): { port: number } | IngressProblem {
  const ports = service.spec?.ports ?? [];
  const want = backend.port;
  const where = `${at}.service.port`;
  if (want?.name !== undefined && want.name !== '') {
    const found = ports.find((p) => p.name === want.name);
    if (found) return { port: found.port };
    const names = ports.map((p) => p.name).filter((n): n is string => n !== undefined && n !== '');
    return {
      reason: 'PortNotFound',
      path: `${where}.name`,
      message: `${where}.name: Not found: Service ${namespace}/${backend.name} has no port named "${want.name}"${names.length > 0 ? ` (it has ${names.map((n) => `"${n}"`).join(', ')})` : ''}`,
      retry: true,
    };
  }
  if (want?.number !== undefined) {
    // An ExternalName Service may list no ports: the number is the external host's port.
    if (service.spec?.type === 'ExternalName' || ports.some((p) => p.port === want.number)) {
      return { port: want.number };
    }
    return {
      reason: 'PortNotFound',
      path: `${where}.number`,
      message: `${where}.number: Not found: Service ${namespace}/${backend.name} has no port ${want.number}${ports.length > 0 ? ` (it has ${ports.map((p) => p.port).join(', ')})` : ''}`,
      retry: true,
    };
  }
  return {
    reason: 'PortNotFound',
    path: where,
    message: `${where}: Required value: name the Service port by number or by name`,
    retry: false,
  };
}

const isProblem = (v: object): v is IngressProblem => 'reason' in v;

/**
 * Ingress -> the ApiDefinitions that serve it. Pure: the same input gives the same output. A
 * path whose Service, port or Secret is missing is left out and reported (the reconciler retries);
 * the others are served.
 */
export function translateIngress(ingress: IngressInput, ctx: IngressTranslationContext): IngressTranslation {
  const { namespace } = ingress.metadata;
  const problems: IngressProblem[] = [];
  const annotations = ingress.metadata.annotations ?? {};
  const protocol = annotations[BACKEND_PROTOCOL_ANNOTATION]?.toLowerCase() ?? 'http';
  if (protocol !== 'http' && protocol !== 'https') {
    problems.push({
      reason: 'AnnotationInvalid',
      path: `metadata.annotations[${BACKEND_PROTOCOL_ANNOTATION}]`,
      message: `metadata.annotations[${BACKEND_PROTOCOL_ANNOTATION}]: Unsupported value: "${annotations[BACKEND_PROTOCOL_ANNOTATION] ?? ''}": supported values: "http", "https"`,
      retry: false,
    });
    return { apis: [], problems };
  }
  const tls = tlsHosts(ingress, problems);
  for (const secretName of new Set(tls.values())) {
    if (!ctx.secretExists(secretName)) {
      const i = (ingress.spec?.tls ?? []).findIndex((t) => t.secretName === secretName);
      problems.push({
        reason: 'SecretNotFound',
        path: `spec.tls[${i}].secretName`,
        message: `spec.tls[${i}].secretName: Not found: Secret ${namespace}/${secretName} does not exist: create it (type kubernetes.io/tls, with tls.crt and tls.key); its hosts are served once it does`,
        retry: true,
      });
    }
  }

  const apis: GeneratedApi[] = [];
  const claimed = new Map<string, Route>();
  for (const route of routesOf(ingress, tls)) {
    const listenPath = listenPathOf(route);
    const pathProblem = listenPathProblem(listenPath);
    const pathField = route.at.replace(/\.backend$/, '.path');
    if (pathProblem !== undefined) {
      problems.push({
        reason: 'PathInvalid',
        path: pathField,
        message: `${pathField}: Invalid value: ${pathProblem}`,
        retry: false,
      });
      continue;
    }
    // One route per scheme, host and path (an Exact path is a route of its own beside the
    // Prefix of its text, as the gateway's routeKey says): the first wins, in the Ingress's order.
    const claimKey = `${route.scheme} ${route.host ?? '*'} ${routeKey(listenPath, route.pathType === 'Exact')}`;
    const first = claimed.get(claimKey);
    if (first) {
      if (first.at !== route.at) {
        problems.push({
          reason: 'PathConflict',
          path: pathField,
          message: `${pathField}: Duplicate value: "${route.path}" on ${route.host ?? 'any host'} is served by ${first.at} already`,
          retry: false,
        });
      }
      continue;
    }
    const svc = route.backend.service;
    if (!svc) {
      problems.push({
        reason: 'BackendNotSupported',
        path: route.at,
        message: `${route.at}: Unsupported value: only Service backends are served (not resource backends)`,
        retry: false,
      });
      continue;
    }
    const service = ctx.service(svc.name);
    if (!service) {
      problems.push({
        reason: 'ServiceNotFound',
        path: `${route.at}.service.name`,
        message: `${route.at}.service.name: Not found: Service ${namespace}/${svc.name} does not exist`,
        retry: true,
      });
      continue;
    }
    const port = portOf(svc, service, route.at, namespace);
    if (isProblem(port)) {
      problems.push(port);
      continue;
    }
    if (route.secretName !== undefined && !ctx.secretExists(route.secretName)) continue;
    claimed.set(claimKey, route);
    apis.push(generate(ingress, route, listenPath, service, port.port, protocol, ctx));
  }
  apis.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { apis, problems };
}

/** The ApiDefinition of one route: the template's spec, when there is one, with the route filled in. */
function generate(
  ingress: IngressInput,
  route: Route,
  listenPath: string,
  service: ServiceInput,
  port: number,
  protocol: 'http' | 'https',
  ctx: IngressTranslationContext,
): GeneratedApi {
  const { namespace, name } = ingress.metadata;
  const svcName = route.backend.service?.name ?? '';
  const apiId = ingressApiId(namespace, name, route);
  // The Service's cluster address; an ExternalName Service stands for its external host.
  const host =
    service.spec?.type === 'ExternalName' && service.spec.externalName
      ? service.spec.externalName
      : `${svcName}.${namespace}.svc`;
  const template = ctx.template ? structuredClone(ctx.template) : undefined;
  const listenPort = route.scheme === 'https' ? ctx.httpsPort : ctx.httpPort;
  const {
    api_id: _id,
    name: _name,
    certificate_secret_names: templateCerts,
    domain: _domain,
    domain_wildcard_one_label: _oneLabel,
    listen_port: _port,
    protocol: _protocol,
    proxy: templateProxy,
    ...rest
  } = template ?? { name: '', proxy: { listen_path: '/' } };
  const spec: ApiDefinitionSpec = {
    ...rest,
    api_id: apiId,
    name: `${namespace}/${name} ${route.scheme}://${route.host ?? '*'}${route.path}`,
    // Without a template, an Ingress path is open, as with any ingress controller.
    ...(template ? {} : { use_keyless: true }),
    active: rest.active ?? true,
    // The gateway's own port needs no listen_port (a template's contextRef means another gateway).
    ...(listenPort === ctx.gatewayPort && route.scheme === 'http' && template?.contextRef === undefined
      ? {}
      : { protocol: route.scheme, listen_port: listenPort }),
    ...(route.host === undefined ? {} : { domain: route.host }),
    // An Ingress wildcard host covers exactly one label (`*.example.com`: `a.example.com`).
    ...(route.host?.startsWith('*.') === true ? { domain_wildcard_one_label: true } : {}),
    proxy: {
      ...templateProxy,
      listen_path: listenPath,
      // Exact: that path alone (compared without case, as every listen path is).
      ...(route.pathType === 'Exact' ? { listen_path_exact: true } : {}),
      target_url: `${protocol}://${host}:${port}`,
      // The backend gets the whole request path, as the Ingress spec says.
      strip_listen_path: templateProxy.strip_listen_path ?? false,
    },
  };
  const certs = [...(templateCerts ?? []), ...(route.secretName === undefined ? [] : [route.secretName])];
  if (certs.length > 0) spec.certificate_secret_names = [...new Set(certs)];
  return { name: generatedName(name, apiId), spec };
}

/** An OAS template's spec, or why it can't be one. */
export type OasTemplateSpec = { ok: true; spec: ApiDefinitionSpec } | { ok: false; message: string };

/**
 * The classic spec an SvcOasApiDefinition template stands for: its document (already read and
 * checked, as `translateOasApiDefinition` gives it) converted as the gateway converts it
 * (`oasToClassic`), without what belongs to the document's own API (its ID, organization,
 * version, the OAS marker). Its authentication, middleware and proxy settings are the template.
 */
export function oasTemplateSpec(document: unknown): OasTemplateSpec {
  const { api, problems } = oasToClassic(document);
  if (problems.length > 0) {
    const first = problems[0];
    return {
      ok: false,
      message: `its document does not convert: ${first ? `${first.path}: ${first.message}` : ''}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''}`,
    };
  }
  const { is_oas: _oas, org_id: _org, api_id: _id, version_data: _versions, ...spec } = api;
  return { ok: true, spec };
}
