/**
 * What the server admits: for each resource, its defaulter and the operator's finalizer (mutating
 * endpoint), its validator (validating endpoint) and its DELETE rule. The chart's webhook configurations and the e2e
 * tests are written from this table's paths: `/mutate/<resource>` and `/validate/<resource>`.
 */
import { model } from '../schemas/rules/read.ts';
import { configMapDataOf } from './access.ts';
import { defaultApiDefinition } from './api-definition.default.ts';
import { EARLIER_CONTEXT, EARLIER_SECRET, earlierNameWarnings } from './defaults.ts';
import { defaultApiKey } from './api-key.default.ts';
import { validateApiKey } from './api-key.validate.ts';
import { validateApiDefinition, validateApiDefinitionDelete } from './api-definition.validate.ts';
import { validateConfigMap, validateConfigMapDelete } from './configmap.validate.ts';
import type { Validator, Verdict } from './field-error.ts';
import type { Lookups } from './lookups.ts';
import { defaultSvcOasApiDefinition } from './oas-api-definition.default.ts';
import {
  validateSvcOasApiDefinition,
  validateSvcOasApiDefinitionDelete,
} from './oas-api-definition.validate.ts';
import { defaultOperatorContext } from './operator-context.default.ts';
import { validateOperatorContext, validateOperatorContextDelete } from './operator-context.validate.ts';
import { defaultRoutePolicy } from './route-policy.default.ts';
import { validateRoutePolicy } from './route-policy.validate.ts';
import { defaultSecurityPolicy } from './security-policy.default.ts';
import { validateSecurityPolicy, validateSecurityPolicyDelete } from './security-policy.validate.ts';
import { defaultSvcStreamsApiDefinition } from './streams-api-definition.default.ts';
import {
  validateSvcStreamsApiDefinition,
  validateSvcStreamsApiDefinitionDelete,
} from './streams-api-definition.validate.ts';
import { defaultGraph } from './graphs.default.ts';
import { validateSubGraph, validateSubGraphDelete } from './sub-graph.validate.ts';
import { validateSuperGraph, validateSuperGraphDelete } from './super-graph.validate.ts';
import { defaultPortal } from './portal.default.ts';
import {
  validateAPIDescription,
  validateAPIDescriptionDelete,
  validatePortalAPICatalogue,
  validatePortalConfig,
} from './portal.validate.ts';
import { isTemplate } from '../schemas/templates.ts';
import { GROUP } from '../schemas/common.ts';
import {
  API_DESCRIPTION_FINALIZER,
  API_FINALIZER,
  CATALOGUE_FINALIZER,
  CONTEXT_FINALIZER,
  KEY_FINALIZER,
  OAS_FINALIZER,
  POLICY_FINALIZER,
  PORTAL_CONFIG_FINALIZER,
  STREAMS_FINALIZER,
  SUBGRAPH_FINALIZER,
  SUPERGRAPH_FINALIZER,
} from '../schemas/finalizers.ts';

/** How one resource is admitted. */
export interface Handler {
  group: string;
  kind: string;
  /** Plural resource name: the endpoints are /mutate/<resource> and /validate/<resource>. */
  resource: string;
  /** Returns a defaulted copy; absent when the resource has no mutating endpoint. */
  default?: (obj: unknown) => unknown;
  /** The warnings the mutating endpoint gives with its defaults (a deprecated field moved). */
  defaultWarnings?: (obj: unknown) => string[];
  validate: Validator;
  /** Absent when deletes are always admitted. */
  validateDelete?: (old: unknown, lookups: Lookups) => Promise<Verdict>;
  /** The part of the object whose change re-runs validation on UPDATE (the rest is metadata). */
  watched: (obj: unknown) => unknown;
  /**
   * The finalizer the operator keeps on the object, which the mutating endpoint adds for it;
   * absent, or undefined for an object, when the operator keeps none (templates are never pushed).
   */
  finalizer?: (obj: unknown) => string | undefined;
}

/** The part of an object whose change needs the checks: its spec, as sent. */
const spec = (obj: unknown): unknown => model<{ spec: unknown }>(obj)?.spec;
/** An API kind's finalizer: its controller skips templates, so they get none. */
const apiFinalizer =
  (finalizer: string) =>
  (obj: unknown): string | undefined =>
    isTemplate(obj) ? undefined : finalizer;

/** Every resource the server admits. */
export const handlers: readonly Handler[] = [
  {
    group: GROUP,
    kind: 'ApiDefinition',
    resource: 'apidefinitions',
    default: defaultApiDefinition,
    defaultWarnings: earlierNameWarnings(EARLIER_CONTEXT),
    validate: validateApiDefinition,
    validateDelete: validateApiDefinitionDelete,
    watched: spec,
    finalizer: apiFinalizer(API_FINALIZER),
  },
  {
    group: GROUP,
    kind: 'SvcOasApiDefinition',
    resource: 'svcoasapidefinitions',
    default: defaultSvcOasApiDefinition,
    validate: validateSvcOasApiDefinition,
    validateDelete: validateSvcOasApiDefinitionDelete,
    watched: spec,
    finalizer: apiFinalizer(OAS_FINALIZER),
  },
  {
    group: GROUP,
    kind: 'SvcStreamsApiDefinition',
    resource: 'svcstreamsapidefinitions',
    default: defaultSvcStreamsApiDefinition,
    validate: validateSvcStreamsApiDefinition,
    validateDelete: validateSvcStreamsApiDefinitionDelete,
    watched: spec,
    finalizer: apiFinalizer(STREAMS_FINALIZER),
  },
  {
    group: GROUP,
    kind: 'SecurityPolicy',
    resource: 'securitypolicies',
    default: defaultSecurityPolicy,
    defaultWarnings: earlierNameWarnings(EARLIER_CONTEXT),
    validate: validateSecurityPolicy,
    validateDelete: validateSecurityPolicyDelete,
    watched: spec,
    finalizer: () => POLICY_FINALIZER,
  },
  {
    group: GROUP,
    kind: 'OperatorContext',
    resource: 'operatorcontexts',
    default: defaultOperatorContext,
    defaultWarnings: earlierNameWarnings(EARLIER_SECRET),
    validate: validateOperatorContext,
    validateDelete: validateOperatorContextDelete,
    watched: spec,
    finalizer: () => CONTEXT_FINALIZER,
  },
  {
    group: GROUP,
    kind: 'ApiKey',
    resource: 'apikeys',
    default: defaultApiKey,
    validate: validateApiKey,
    watched: spec,
    finalizer: () => KEY_FINALIZER,
  },
  {
    group: GROUP,
    kind: 'SubGraph',
    resource: 'subgraphs',
    default: defaultGraph,
    validate: validateSubGraph,
    validateDelete: validateSubGraphDelete,
    watched: spec,
    finalizer: () => SUBGRAPH_FINALIZER,
  },
  {
    group: GROUP,
    kind: 'SuperGraph',
    resource: 'supergraphs',
    default: defaultGraph,
    validate: validateSuperGraph,
    validateDelete: validateSuperGraphDelete,
    watched: spec,
    finalizer: () => SUPERGRAPH_FINALIZER,
  },
  {
    group: GROUP,
    kind: 'APIDescription',
    resource: 'apidescriptions',
    default: defaultPortal,
    validate: validateAPIDescription,
    validateDelete: validateAPIDescriptionDelete,
    watched: spec,
    finalizer: () => API_DESCRIPTION_FINALIZER,
  },
  {
    group: GROUP,
    kind: 'PortalAPICatalogue',
    resource: 'portalapicatalogues',
    default: defaultPortal,
    validate: validatePortalAPICatalogue,
    watched: spec,
    finalizer: () => CATALOGUE_FINALIZER,
  },
  {
    group: GROUP,
    kind: 'PortalConfig',
    resource: 'portalconfigs',
    default: defaultPortal,
    validate: validatePortalConfig,
    watched: spec,
    finalizer: () => PORTAL_CONFIG_FINALIZER,
  },
  {
    group: GROUP,
    kind: 'SvcRoutePolicy',
    resource: 'svcroutepolicies',
    default: defaultRoutePolicy,
    validate: validateRoutePolicy,
    watched: spec,
  },
  {
    group: '',
    kind: 'ConfigMap',
    resource: 'configmaps',
    validate: validateConfigMap,
    validateDelete: validateConfigMapDelete,
    watched: (obj) => configMapDataOf(obj),
  },
];
