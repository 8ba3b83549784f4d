import assert from 'node:assert/strict';
import {
  translateGateway,
  type GatewayInput,
  type GeneratedApi,
  type HttpRouteInput,
  type RoutePolicyInput,
  type ServiceInput,
} from './gateway-api.ts';
import { policyAncestors, type PolicyAncestor } from './gateway-api/policies.ts';
import { goldenTests } from './golden.ts';
import { assertAdmittedAndServed } from './testing.ts';

/** A golden input: a Gateway, its routes, the policies of the cluster and the Services. */
interface GoldenInput {
  gateway: GatewayInput;
  routes: HttpRouteInput[];
  policies: RoutePolicyInput[];
  services?: Record<string, ServiceInput>;
  gatewayPort?: number;
}

/** The generated APIs and each policy's ancestors. */
interface GoldenOutput {
  apis: GeneratedApi[];
  ancestors: Record<string, PolicyAncestor[]>;
}

const run = (input: GoldenInput): GoldenOutput => {
  const t = translateGateway(input.gateway, input.routes, {
    service: (ns, name) => input.services?.[`${ns}/${name}`],
    endpointSlices: () => [],
    secretExists: () => false,
    namespaceLabels: () => undefined,
    grants: [],
    policies: input.policies,
    ...(input.gatewayPort === undefined ? {} : { gatewayPort: input.gatewayPort }),
  });
  const gw = input.gateway.metadata;
  const ancestors = Object.fromEntries(
    input.policies.map((p) => [
      `${p.metadata.namespace}/${p.metadata.name}`,
      policyAncestors(p, {
        gateway: (ns, name) => (ns === gw.namespace && name === gw.name ? input.gateway : undefined),
        route: (ns, name) =>
          input.routes.find((r) => r.metadata.namespace === ns && r.metadata.name === name),
        policies: input.policies,
      }),
    ]),
  );
  return { apis: t.apis, ancestors };
};

await goldenTests('gateway-api-policy', run, (got) => {
  for (const api of got.apis) {
    // A policy's settings make ApiDefinitions the API server admits and the gateway serves.
    assertAdmittedAndServed(api);
    // A policy that cannot be applied leaves its routes keyless but answering 500 (fail closed).
    const open = api.spec.use_keyless === true && !api.spec.internal;
    if (open && api.spec.enable_ip_blacklisting !== true && api.spec.enable_ip_whitelisting !== true) {
      assert.ok(
        !/\/(orders|cart|api|ops|partner|legacy)$/.test(api.spec.proxy.listen_path ?? '') ||
          (api.spec.proxy.target_url ?? '').startsWith('svc://'),
        `${api.name}: a route with a policy is not served open`,
      );
    }
  }
});
