/**
 * One switch for the operator suites. `startWorld()` gives a suite what it runs against, in the
 * same shape whichever way it was obtained: kubectl, the gateway (URL and management secret, as
 * the suite reaches it), a second gateway for OperatorContext tests, echo upstreams (URLs as the
 * gateway reaches them), namespaces of the suite's own, the operator's settings, ways to stop and
 * start the operator and the second gateway, and a cleanup.
 *
 * - Local (the default, `make e2e`): a private control plane with the CRDs, two gateway processes,
 *   echo upstreams on 127.0.0.1 and the operator as a process; `world.local` gives the fault tests
 *   the processes themselves.
 * - Cluster (`SVC_E2E_CLUSTER=1`, `make e2e-cluster`, the node suite
 *   e2e/node/cluster-suites.node.ts): the cluster KUBECONFIG points at, with the operator, webhooks
 *   and gateways installed by charts/svc-operator and charts/svc-gateway. Nothing is started
 *   locally: the gateways are reached through `kubectl port-forward` of their Services, the
 *   upstreams are echo Deployments and Services in the suite's namespace, the namespaces are named
 *   `svc-e2e-<suite>-<name>-<random>` and deleted by `stop()`. The suite's operator settings
 *   (WATCH_NAMESPACE with the real names, SVC_RESYNC_PERIOD, ...) are written into the operator's
 *   Secret svc-operator-conf and the operator's pods restarted; `stop()` puts the Secret back as it
 *   was and restarts them again. The second gateway is a second svc-gateway release in its own
 *   namespace; stopping it scales its Deployment to 0. Stopping the operator holds its leader
 *   Lease for the suite and deletes its pod: the replacement pod stands by (its webhooks serve)
 *   until `startOperator()` frees the Lease. `world.local` is undefined.
 *   Settings: E2E_GATEWAY_NAMESPACE (svc-gateway), E2E_GATEWAY_SECRET (read from the Secret
 *   svc-gateway-secret otherwise), E2E_GATEWAY2_NAMESPACE (svc-gateway-2, the second release;
 *   its secret from its svc-gateway-secret), E2E_OPERATOR_NAMESPACE (svc-operator-system),
 *   E2E_ORG (the operator's SVC_ORG from its Secret svc-operator-conf otherwise), E2E_NODE_IMAGE
 *   (the image the echo upstreams run in; node:24-alpine), KUBECTL (kubectl).
 *
 * The cluster mode runs on the node of `make node` (`make e2e-node`) and in
 * .github/workflows/e2e-kind.yaml (docs/e2e-cluster.md).
 */
import { environment } from '../../lib/config.ts';
import { startClusterWorld } from './cluster-world.ts';
import { startLocalWorld } from './local-world.ts';
import type { World, WorldOptions } from './world-types.ts';

export type {
  ContextGateway,
  GatewayEndpoint,
  Kubectl,
  LocalWorld,
  Upstream,
  World,
  WorldOptions,
} from './world-types.ts';

/** True when the suites run against the cluster KUBECONFIG points at. */
export function clusterMode(): boolean {
  return environment().SVC_E2E_CLUSTER === '1';
}

/** A local world (local-world.ts) or a cluster world (cluster-world.ts), as {@link clusterMode} says. */
export async function startWorld(opts: WorldOptions): Promise<World> {
  return clusterMode() ? startClusterWorld(opts) : startLocalWorld(opts);
}
