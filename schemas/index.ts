import type { JsonSchema, KindDefinition } from './json-schema.ts';
import { apiDefinitionKind } from './kinds/api-definition.ts';
import { apiDescriptionKind } from './kinds/api-description.ts';
import { apiKeyKind } from './kinds/api-key.ts';
import { oasApiDefinitionKind } from './kinds/oas-api-definition.ts';
import { operatorContextKind } from './kinds/operator-context.ts';
import { portalApiCatalogueKind } from './kinds/portal-api-catalogue.ts';
import { portalConfigKind } from './kinds/portal-config.ts';
import { routePolicyKind } from './kinds/route-policy.ts';
import { securityPolicyKind } from './kinds/security-policy.ts';
import { streamsApiDefinitionKind } from './kinds/streams-api-definition.ts';
import { subGraphKind } from './kinds/sub-graph.ts';
import { superGraphKind } from './kinds/super-graph.ts';
import { apiDefinitionModel } from './models/api-definition/index.ts';
import { oasApiDocument } from './models/oas.ts';
import { policyModel } from './models/policy.ts';
import { sessionModel } from './models/session.ts';

export { API_VERSION, CATEGORY, GROUP, VERSION } from './common.ts';
export type { CelRule, JsonSchema, KindDefinition, PrinterColumn } from './json-schema.ts';

/** Every custom resource kind, in the order the generators emit them. */
export const kinds: readonly KindDefinition[] = [
  apiDefinitionKind,
  oasApiDefinitionKind,
  streamsApiDefinitionKind,
  securityPolicyKind,
  operatorContextKind,
  apiKeyKind,
  subGraphKind,
  superGraphKind,
  apiDescriptionKind,
  portalApiCatalogueKind,
  portalConfigKind,
  routePolicyKind,
];

/** Every kind's plural, as kubectl and the API server's paths name it (`kubectl get`, uninstall). */
export const SVC_PLURALS: readonly string[] = kinds.map((k) => k.plural);

/** The gateway's own models, by the name of their generated type. */
export const models: Readonly<Record<string, JsonSchema>> = {
  GatewayApiDefinition: apiDefinitionModel,
  GatewayPolicy: policyModel,
  GatewaySession: sessionModel,
  OasApiDocument: oasApiDocument,
};
