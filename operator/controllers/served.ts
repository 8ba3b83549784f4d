/**
 * Where an API is served, for its status: the gateway's host with the API's own `listen_port`
 * and protocol when it has them (an Ingress's APIs are on the ingress ports), its domain when it
 * is bound to one, and its listen path. The management URL only gives the gateway's host. In
 * mode pro the management URL is the dashboard's, which serves nothing: the status names where
 * the API is held and the gateways that serve it.
 */

import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { isTcpApi } from '../../schemas/rules/tcp.ts';
import type { ManagementClient } from '../clients/management.ts';
import {
  UNSERVED_RECHECK_MS,
  reportProgrammed,
  type ProgrammedDeps,
  type ProgrammedStatus,
} from './programmed.ts';
import type { Reported } from './status.ts';

export { PENDING_RECHECK_MS, UNSERVED_RECHECK_MS } from './programmed.ts';

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
  // A TCP or TLS API is its port: no domain, no path.
  if (isTcpApi(api) && port > 0) return `${String(api.protocol)}://${url.hostname}:${String(port)}`;
  const scheme = port > 0 ? (api.protocol === 'https' ? 'https' : 'http') : url.protocol.replace(/:$/, '');
  const host = api.domain !== undefined && api.domain !== '' ? api.domain : url.hostname;
  const portText = port > 0 ? String(port) : url.port;
  const path = api.proxy?.listen_path ?? '/';
  return `${scheme}://${host}${portText === '' ? '' : `:${portText}`}${path.startsWith('/') ? path : `/${path}`}`;
}

/** How many gateways a status names before it counts the rest. */
const NAMED = 5;

/** Where an API is: `/orders/`, `shop.example.com/orders/`, `/orders/ on port 8443`. */
function servedPath(api: ServedFields): string {
  if (isTcpApi(api)) return `port ${String(api.listen_port ?? 0)} (${String(api.protocol)})`;
  const path = api.proxy?.listen_path ?? '/';
  const domain = api.domain !== undefined && api.domain !== '' ? api.domain : '';
  const port = (api.listen_port ?? 0) > 0 ? ` on port ${String(api.listen_port)}` : '';
  return `${domain}${path.startsWith('/') ? path : `/${path}`}${port}`;
}

/**
 * The status message of an API written through `client`, and when to look again. A gateway
 * (mode ce) serves what it holds: its URL and, with `address`, where clients reach the API. A
 * dashboard (mode pro) serves nothing: it holds the API, in an organisation, for the gateways
 * connected to it; they are named when the dashboard says which they are (`GET /api/nodes`). When
 * none is connected the API is not served yet, and it is looked at again soon.
 */
export async function servedMessage(
  apiId: string,
  client: ManagementClient,
  org: string,
  api: ServedFields,
  address = true,
): Promise<{ message: string; requeueAfterMs?: number }> {
  if (client.servingGateways === undefined) {
    const at = address ? ` at ${servedAddress(client.url, api)}` : '';
    return { message: `API ${apiId} is served by ${client.url}${at}` };
  }
  // The API is written already: a failure to learn its gateways only leaves them unnamed.
  const serving = await client.servingGateways().catch(() => undefined);
  const held = `API ${apiId} is held by the dashboard ${client.url} in organisation ${serving?.org ?? org}`;
  const path = servedPath(api);
  if (serving === undefined) {
    return { message: `${held}; the gateways that load this organisation serve it at ${path}` };
  }
  const count = serving.gateways.length;
  if (count === 0) {
    return {
      message: `${held}; no gateway of this organisation is connected to the dashboard: it is not served yet (at ${path} once one connects)`,
      requeueAfterMs: UNSERVED_RECHECK_MS,
    };
  }
  const names = [...new Set(serving.gateways.map((g) => g.hostname || 'unnamed'))].sort();
  const shown =
    names.length > NAMED
      ? `${names.slice(0, NAMED).join(', ')} and ${String(names.length - NAMED)} more`
      : names.join(', ');
  const gateways = count === 1 ? '1 gateway' : `${String(count)} gateways`;
  return { message: `${held}; served at ${path} by ${gateways} connected to it: ${shown}` };
}

/**
 * Reports an API written through `client`: where it is served ({@link servedMessage}), and
 * whether every gateway serves the revision pushed ({@link reportProgrammed}).
 */
export async function reportApiSynced<T extends Reported<ProgrammedStatus>>(
  obj: T,
  status: NonNullable<T['status']>,
  push: {
    apiId: string;
    client: ManagementClient;
    org: string;
    api: ServedFields;
    /** Whether the message names the address clients reach the API at (mode ce). */
    address?: boolean;
    action: 'Created' | 'Updated' | undefined;
    /** When the reconcile that pushed started: the start of the convergence it measures. */
    since?: Date;
    /** The kind, for the convergence metric. */
    kind?: string;
  },
  deps: ProgrammedDeps<T>,
): Promise<WorkResult> {
  const { apiId, client } = push;
  const served = await servedMessage(apiId, client, push.org, push.api, push.address);
  return reportProgrammed(
    obj,
    status,
    {
      of: { kind: 'apis', id: apiId },
      what: `API ${apiId}`,
      client,
      synced: served,
      action: push.action,
      ...(push.since === undefined ? {} : { since: push.since }),
      kind: push.kind ?? 'ApiDefinition',
    },
    deps,
  );
}
