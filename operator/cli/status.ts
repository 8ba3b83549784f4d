/**
 * `kubectl svc status`: every svc resource the user may list, with its gateway ID, its `Ready`
 * condition, the gateway it was pushed to and how many of the gateways that must serve it serve
 * its current revision (`status.gateways`), read with the user's kubeconfig.
 */
import * as k8s from '@kubernetes/client-node';
import { GROUP, VERSION } from '../../schemas/common.ts';
import { apiDefinitionKind } from '../../schemas/kinds/api-definition.ts';
import { apiKeyKind } from '../../schemas/kinds/api-key.ts';
import { oasApiDefinitionKind } from '../../schemas/kinds/oas-api-definition.ts';
import { securityPolicyKind } from '../../schemas/kinds/security-policy.ts';
import { streamsApiDefinitionKind } from '../../schemas/kinds/streams-api-definition.ts';
import { columns } from './explain-print.ts';

/** One resource as the status table shows it. */
export interface StatusRow {
  kind: string;
  namespace: string;
  name: string;
  id: string;
  ready: string;
  reason: string;
  gateway: string;
  /** `served/all`: the gateways serving the revision pushed, of those listed; empty: none listed. */
  served: string;
  /** Each gateway that must serve it, the revision it serves, and whether that is the current one. */
  gateways: { name: string; revision?: string; appliedAt?: string; current: boolean }[];
  message: string;
}

const KINDS = [
  apiDefinitionKind,
  oasApiDefinitionKind,
  streamsApiDefinitionKind,
  securityPolicyKind,
  apiKeyKind,
];

interface Listed {
  metadata?: { name?: string; namespace?: string };
  status?: {
    api_id?: string;
    pol_id?: string;
    key_id?: string;
    pushedTo?: { url?: string; contextRef?: { name?: string; namespace?: string } };
    latestSvcSpecHash?: string;
    gateways?: { name: string; revision?: string; appliedAt?: string }[];
    conditions?: { type?: string; status?: string; reason?: string; message?: string }[];
  };
}

/** A listed object as a row. Pure. */
export function statusRow(kind: string, o: Listed): StatusRow {
  const st = o.status ?? {};
  const ready = st.conditions?.find((c) => c.type === 'Ready');
  const ctx = st.pushedTo?.contextRef;
  const gateways = (st.gateways ?? []).map((g) => ({
    ...g,
    current: g.revision !== undefined && g.revision === st.latestSvcSpecHash,
  }));
  const served = gateways.filter((g) => g.current).length;
  return {
    kind,
    namespace: o.metadata?.namespace ?? '',
    name: o.metadata?.name ?? '',
    id: st.api_id ?? st.pol_id ?? st.key_id ?? '',
    ready: ready?.status ?? 'Unknown',
    reason: ready?.reason ?? '',
    gateway:
      st.pushedTo?.url === undefined
        ? ''
        : `${st.pushedTo.url}${ctx?.name === undefined ? '' : ` (${ctx.namespace ?? ''}/${ctx.name})`}`,
    served: gateways.length === 0 ? '' : `${String(served)}/${String(gateways.length)}`,
    gateways,
    message: ready?.status === 'True' ? '' : (ready?.message ?? ''),
  };
}

/** The rows as a table. Pure. */
export function statusTable(rows: readonly StatusRow[]): string {
  if (rows.length === 0) return 'No svc resources found.\n';
  return `${columns([
    ['KIND', 'NAMESPACE', 'NAME', 'ID', 'READY', 'REASON', 'GATEWAY', 'SERVED', 'MESSAGE'],
    ...rows.map((r) => [
      r.kind,
      r.namespace,
      r.name,
      r.id,
      r.ready,
      r.reason,
      r.gateway,
      r.served,
      r.message,
    ]),
  ])}\n`;
}

/**
 * Lists every svc kind (in `namespace`, or all namespaces). A kind the user may not list is
 * reported, not fatal: RBAC decides what the user sees.
 */
export async function listStatus(
  kc: k8s.KubeConfig,
  namespace: string | undefined,
): Promise<{ rows: StatusRow[]; denied: string[] }> {
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  const rows: StatusRow[] = [];
  const denied: string[] = [];
  for (const k of KINDS) {
    try {
      const list = (
        namespace === undefined
          ? await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: k.plural })
          : await api.listNamespacedCustomObject({
              group: GROUP,
              version: VERSION,
              namespace,
              plural: k.plural,
            })
      ) as { items?: Listed[] };
      for (const o of list.items ?? []) rows.push(statusRow(k.kind, o));
    } catch (err) {
      if (err instanceof k8s.ApiException && (err.code === 403 || err.code === 404)) {
        denied.push(`${k.plural}: ${err.code === 403 ? 'not allowed to list (RBAC)' : 'not installed'}`);
        continue;
      }
      throw err;
    }
  }
  return { rows, denied };
}
