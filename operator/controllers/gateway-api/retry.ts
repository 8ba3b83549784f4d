/**
 * Which Gateways an ApiDefinition's change queues: its owner (a generated API's status, or a
 * change by someone else), and, when an API stops claiming its route (deleted, or its listen
 * path, host, port or protocol edited), every Gateway a generated API's write was refused for
 * (`Programmed=False`, `Invalid`, naming an ApiDefinition): the route it collided with may be
 * free now, and nothing else would make that Gateway try again.
 */
import type { InformerEvent } from '../../../lib/k8s/informer.ts';
import { GATEWAY_LABEL } from '../../translate/gateway-api.ts';
import type { ApiObject } from '../objects.ts';
import type { GatewayObject } from './types.ts';

/** What an API claims on the gateway's route table (schemas/rules `routeKey` and its listener). */
const claim = (a: ApiObject): unknown => {
  const s = a.spec as {
    domain?: string;
    listen_port?: number;
    protocol?: string;
    proxy?: { listen_path?: string; listen_path_exact?: boolean };
  };
  return [s.domain, s.listen_port, s.protocol, s.proxy?.listen_path, s.proxy?.listen_path_exact];
};

/** Whether a Gateway's last write of its APIs was refused (its Programmed condition says so). */
export function writeRefused(gw: GatewayObject): boolean {
  const p = gw.status?.conditions?.find((c) => c.type === 'Programmed');
  return p?.status === 'False' && p.reason === 'Invalid' && p.message.startsWith('ApiDefinition ');
}

/** The Gateways (`namespace/name`) to reconcile for an event of `api`. */
export function gatewaysForApiEvent(
  event: InformerEvent,
  api: ApiObject,
  old: ApiObject | undefined,
  gateways: readonly GatewayObject[],
  /** Whether the owner's view of the API changed (its spec, generation, Programmed, deletion). */
  ownerViewChanged: boolean,
): string[] {
  const out = new Set<string>();
  const owner = api.metadata.labels?.[GATEWAY_LABEL];
  if (owner && ownerViewChanged) out.add(`${api.metadata.namespace}/${owner}`);
  const released =
    event === 'delete' ||
    (event === 'update' && old !== undefined && JSON.stringify(claim(old)) !== JSON.stringify(claim(api)));
  if (released) {
    for (const g of gateways) {
      if (writeRefused(g)) out.add(`${g.metadata.namespace}/${g.metadata.name}`);
    }
  }
  return [...out];
}
