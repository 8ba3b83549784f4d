/**
 * Where an API is served, for its status: the gateway's host with the API's own `listen_port`
 * and protocol when it has them (an Ingress's APIs are on the ingress ports), its domain when it
 * is bound to one, and its listen path. The management URL only gives the gateway's host. In
 * mode pro the management URL is the dashboard's, which serves nothing: the status names where
 * the API is held and the gateways that serve it.
 */

import type { WorkResult } from '../../lib/k8s/workqueue.ts';
import { setCondition } from '../../lib/k8s/objects.ts';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { GatewayRevision } from '../../schemas/generated/kinds.ts';
import { isTcpApi } from '../../schemas/rules/tcp.ts';
import type { AppliedBy, ManagementClient } from '../clients/management.ts';
import type { Convergence } from './convergence.ts';
import {
  readyConditions,
  reportSuccess,
  transaction,
  type ReconcileStatus,
  type ReportDeps,
  type Reported,
} from './status.ts';

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
/** How soon an API no gateway serves yet is looked at again, so its status catches up. */
export const UNSERVED_RECHECK_MS = 30_000;

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

/** How soon an API some gateway does not serve yet is looked at again. */
export const PENDING_RECHECK_MS = 1_000;
/** Pending for longer than this, an API is looked at again every {@link UNSERVED_RECHECK_MS}. */
const LONG_PENDING_MS = 60_000;
/**
 * How long a reconcile that pushed waits for the other gateways to reload (they do on the group
 * message the push sent) before it reports `Pending` and looks again later.
 */
const SETTLE_MS = 2_000;
const SETTLE_POLL_MS = 25;

/** The status fields of an API that {@link reportApiSynced} reads and writes. */
interface ServedStatus extends ReconcileStatus {
  latestSvcSpecHash?: string;
  gateways?: GatewayRevision[];
}

/** The gateways that do not serve `revision`. */
const missing = (gateways: readonly AppliedBy[], revision: string): AppliedBy[] =>
  gateways.filter((g) => g.revision !== revision);

/** Names for a message: `a, b and 3 more`. */
function named(names: readonly string[]): string {
  const sorted = [...names].sort();
  return sorted.length > NAMED
    ? `${sorted.slice(0, NAMED).join(', ')} and ${String(sorted.length - NAMED)} more`
    : sorted.join(', ');
}

/**
 * The gateways sharing the store of `client` and the revision of the API each serves; right
 * after a push (`settle`), waits a little for them all to serve `revision`. Undefined when the
 * gateway does not say (an older gateway, mode pro) or could not be asked: the API is then
 * reported as before, held by the gateway written to.
 */
async function gatewaysOf(
  client: ManagementClient,
  apiId: string,
  revision: string,
  settle: boolean,
  onError: (err: unknown) => void,
): Promise<AppliedBy[] | undefined> {
  if (client.appliedBy === undefined) return undefined;
  const ask = (): Promise<AppliedBy[] | undefined> =>
    client.appliedBy?.(apiId).catch((err: unknown) => {
      onError(err);
      return undefined;
    }) ?? Promise.resolve(undefined);
  let gateways = await ask();
  const deadline = Date.now() + SETTLE_MS;
  while (
    settle &&
    gateways !== undefined &&
    missing(gateways, revision).length > 0 &&
    Date.now() < deadline
  ) {
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    gateways = await ask();
  }
  return gateways;
}

/**
 * Reports an API written through `client`: where it is served ({@link servedMessage}), and, in
 * mode ce, whether every gateway sharing the store serves the revision pushed
 * (`status.latestSvcSpecHash`). When all do: `Ready=True` (reason `Synced`) and
 * `Programmed=True`, `status.gateways` listing them; otherwise `Ready=False` and
 * `Programmed=False` with reason `Pending` naming the gateways that do not yet, looked at again
 * soon. A gateway listed before and gone from the registry (stopped, or silent past its timeout)
 * gets a Warning event `GatewayDropped`. The time from the change to the last gateway serving it
 * is observed in `svc_config_convergence_seconds`.
 */
export async function reportApiSynced<T extends Reported<ServedStatus>>(
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
  deps: ReportDeps<T> & { convergence?: Convergence | undefined; log?: Pick<Logger, 'warn'> },
): Promise<WorkResult> {
  const { apiId, client, action } = push;
  const { message, requeueAfterMs } = await servedMessage(apiId, client, push.org, push.api, push.address);
  const synced = { reason: 'Synced', message, action, what: `API ${apiId}`, where: client.url };
  const revision = status.latestSvcSpecHash;
  const gateways =
    client.servingGateways !== undefined || revision === undefined
      ? undefined
      : await gatewaysOf(client, apiId, revision, action !== undefined, (err) => {
          deps.log?.warn('cannot read which gateways serve the api', { apiId, error: errorMessage(err) });
        });
  if (gateways === undefined || revision === undefined) {
    delete status.gateways;
    await reportSuccess(obj, status, synced, deps);
    return requeueAfterMs === undefined ? {} : { requeueAfterMs };
  }

  const uid = obj.metadata.uid;
  if (action !== undefined && push.since !== undefined) deps.convergence?.pushed(uid, revision, push.since);
  status.gateways = [...gateways]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((g) => ({
      name: g.name,
      ...(g.revision === undefined ? {} : { revision: g.revision }),
      ...(g.appliedAt === undefined ? {} : { appliedAt: g.appliedAt }),
    }));
  const present = new Set(gateways.map((g) => g.name));
  for (const gone of (obj.status?.gateways ?? []).filter((g) => !present.has(g.name))) {
    await deps.events.record(
      obj,
      'Warning',
      'GatewayDropped',
      `gateway ${gone.name} left the registry of the gateways sharing the store of ${client.url} (stopped, or no heartbeat for longer than its timeout): API ${apiId} no longer waits for it`,
    );
  }

  const waiting = missing(gateways, revision);
  if (gateways.length > 0 && waiting.length === 0) {
    const last = Math.max(...gateways.map((g) => Date.parse(g.appliedAt ?? '') || 0));
    deps.convergence?.served(uid, push.kind ?? 'ApiDefinition', revision, last);
    const all = gateways.length === 1 ? 'its one gateway' : `all ${String(gateways.length)} gateways`;
    const programmed = `revision ${revision.slice(0, 12)} served by ${all}: ${named([...present])}`;
    await reportSuccess(
      obj,
      status,
      {
        ...synced,
        message: `${message}; ${programmed}`,
        conditions: [{ type: 'Programmed', status: 'True', reason: 'Programmed', message: programmed }],
      },
      deps,
    );
    return requeueAfterMs === undefined ? {} : { requeueAfterMs };
  }

  // Pending: written, not yet served everywhere. No Warning: it is expected to pass.
  const pending =
    gateways.length === 0
      ? `API ${apiId} is written to ${client.url}, but no gateway is registered in its store to serve it`
      : `API ${apiId} is written to ${client.url}; waiting for ${String(waiting.length)} of ${String(gateways.length)} gateways to serve revision ${revision.slice(0, 12)}: ${named(waiting.map((g) => g.name))}`;
  const now = deps.now();
  if (action || obj.status?.latestTransaction?.status === 'Failed') {
    status.latestTransaction = transaction('Successful', now);
  }
  status.conditions = setCondition(
    readyConditions(obj, false, 'Pending', pending, now),
    {
      type: 'Programmed',
      status: 'False',
      reason: 'Pending',
      message: pending,
      observedGeneration: obj.metadata.generation,
    },
    now,
  );
  await deps.objects.patchStatus(obj, status);
  if (action) {
    await deps.events.record(obj, 'Normal', action, `API ${apiId} ${action.toLowerCase()} in ${client.url}`);
  }
  // Pending for long (a gateway that leaves the API out, one hung but still renewing its entry):
  // looked at less often.
  const ready = obj.status?.conditions?.find((c) => c.type === 'Ready');
  const pendingFor = ready?.reason === 'Pending' ? now.getTime() - Date.parse(ready.lastTransitionTime) : 0;
  return { requeueAfterMs: pendingFor > LONG_PENDING_MS ? UNSERVED_RECHECK_MS : PENDING_RECHECK_MS };
}
