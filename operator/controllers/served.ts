/**
 * Where an API is served, for its status: the gateway's host with the API's own `listen_port`
 * and protocol when it has them (an Ingress's APIs are on the ingress ports), its domain when it
 * is bound to one, and its listen path. The management URL only gives the gateway's host.
 */

/** The fields of an API that decide where it is served. */
export interface ServedFields {
  listen_port?: number;
  protocol?: string;
  domain?: string;
  proxy?: { listen_path?: string };
}

/** `http://gateway:8080/orders/`, `https://shop.example.com:8443/` (a wildcard domain kept as written). */
export function servedAddress(managementUrl: string, api: ServedFields): string {
  let url: URL;
  try {
    url = new URL(managementUrl);
  } catch {
    return managementUrl;
  }
  const port = api.listen_port ?? 0;
  const scheme = port > 0 ? (api.protocol === 'https' ? 'https' : 'http') : url.protocol.replace(/:$/, '');
  const host = api.domain !== undefined && api.domain !== '' ? api.domain : url.hostname;
  const portText = port > 0 ? String(port) : url.port;
  const path = api.proxy?.listen_path ?? '/';
  return `${scheme}://${host}${portText === '' ? '' : `:${portText}`}${path.startsWith('/') ? path : `/${path}`}`;
}
