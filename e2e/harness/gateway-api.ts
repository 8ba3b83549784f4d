/**
 * What the Gateway API suites and the HTTPRoute benchmark share on a bare API server: this
 * machine's address for EndpointSlices (the API server refuses loopback endpoint addresses, and a
 * bare API server runs no endpoints controller, so slices are written by hand), a Service with
 * such a slice, the class of svc's controller, the chart's Gateway API CRDs, and the conditions
 * of a status read with kubectl.
 */
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import type { ControlPlane } from './control-plane.ts';

const root = join(import.meta.dirname, '..', '..');

/** This machine's first non-loopback IPv4 address: EndpointSlices may not name a loopback one. */
export function hostAddress(): string {
  const found = Object.values(networkInterfaces())
    .flat()
    .find((a) => a?.family === 'IPv4' && !a.internal);
  if (!found) throw new Error('a non-loopback IPv4 address is needed for EndpointSlices');
  return found.address;
}

/**
 * A Service `ns/name` (port 80 named http, or as `service` says) and its EndpointSlice written by
 * hand, pointing at `host:port`.
 */
export const endpointService = (
  ns: string,
  name: string,
  host: string,
  port: number,
  service: { port?: number; appProtocol?: string } = {},
): string => `apiVersion: v1
kind: Service
metadata: {name: ${name}, namespace: ${ns}}
spec: {ports: [{name: http, port: ${String(service.port ?? 80)}${service.appProtocol === undefined ? '' : `, appProtocol: ${service.appProtocol}`}}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: ${name}-1
  namespace: ${ns}
  labels: {kubernetes.io/service-name: ${name}}
addressType: IPv4
ports: [{name: http, port: ${String(port)}, protocol: TCP}]
endpoints: [{addresses: [${host}], conditions: {ready: true}}]
`;

/** The GatewayClass `svc` of svc's controller. */
export const SVC_GATEWAY_CLASS = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: svc}
spec: {controllerName: svc.io/gateway-controller}
`;

/** The Gateway `name` of `ns` (class svc) with one HTTP listener on `port` for routes of its namespace. */
export const httpGateway = (
  ns: string,
  name: string,
  port: number,
): string => `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ${name}, namespace: ${ns}}
spec:
  gatewayClassName: svc
  listeners:
    - {name: http, port: ${String(port)}, protocol: HTTP, allowedRoutes: {namespaces: {from: Same}}}
`;

/** Installs the chart's Gateway API CRDs (gatewayAPI.installCRDs), as before the operator starts. */
export async function installGatewayApiCrds(cp: Pick<ControlPlane, 'installCrds'>): Promise<void> {
  await cp.installCrds(join(root, 'charts', 'svc-operator', 'gateway-api'));
}

/**
 * The ApiDefinitions of `ns` the operator generated for its Gateway `gateway` (the label
 * svc.io/gateway), as `kubectl get -o <output>` prints them.
 */
export async function generatedApis(
  cp: Pick<ControlPlane, 'kubectl'>,
  ns: string,
  gateway: string,
  output: 'name' | 'json',
): Promise<string> {
  const out = await cp.kubectl([
    'get',
    'apidefinitions',
    '-n',
    ns,
    '-l',
    `svc.io/gateway=${gateway}`,
    '-o',
    output,
  ]);
  return out.stdout;
}

/** A status condition as the Gateway API writes it. */
export interface Cond {
  type: string;
  status: string;
  reason: string;
  message?: string;
  observedGeneration?: number;
}

/** The condition of `type` in a list of conditions. */
export const condition = (list: readonly Cond[] | undefined, type: string): Cond | undefined =>
  list?.find((c) => c.type === type);
