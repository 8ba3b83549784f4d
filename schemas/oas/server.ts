/**
 * `info` and `upstream` (the API's identity and its upstream address) and `server` (listen path,
 * custom domain) of the extension.
 */
import { EXT, type Conversion } from './document.ts';

/** `info`: ID, organisation, name and state; `upstream.url`: the classic `proxy.target_url`. */
export function readInfo(c: Conversion): void {
  const id = c.take([EXT, 'info', 'id']);
  c.set('api_id', id === '' ? undefined : id, [EXT, 'info', 'id']);
  c.copy('org_id', [EXT, 'info', 'orgId']);
  c.copy('name', [EXT, 'info', 'name']);
  c.copy('active', [EXT, 'info', 'state', 'active']);
  c.copy('internal', [EXT, 'info', 'state', 'internal']);
  c.copy('proxy.target_url', [EXT, 'upstream', 'url']);
}

/** `server`: the listen path and whether it is stripped, the custom domain. */
export function readServer(c: Conversion): void {
  const server = [EXT, 'server'];
  c.copy('proxy.listen_path', [...server, 'listenPath', 'value']);
  c.copy('proxy.strip_listen_path', [...server, 'listenPath', 'strip']);
  const domain = [...server, 'customDomain'];
  if (c.enabled(domain)) {
    const name = c.take([...domain, 'name']);
    if (name === undefined || name === '') {
      c.problem(
        [...domain, 'name'],
        'Required',
        'the custom domain is enabled: set its name, such as api.example.com, or set enabled to false',
      );
    }
    c.set('domain', name, [...domain, 'name']);
  }
  // Accepted and kept in the document: tracing is not done yet, and does not change an answer.
  c.take([...server, 'detailedTracing']);
}
