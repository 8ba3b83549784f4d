/**
 * The operator's finalizers, one per kind it reconciles with one. The operator adds and removes
 * them; the mutating webhook adds them when an object is created, so that the operator's first
 * reconcile finds its finalizer there and makes no write for it (one API-server round trip fewer
 * per object).
 */

/** Keeps an ApiDefinition until its API is gone from the gateway. */
export const API_FINALIZER = 'finalizers.svc.svc.io/apidefinition';
/** Keeps an SvcOasApiDefinition until its API is gone from the gateway. */
export const OAS_FINALIZER = 'finalizers.svc.svc.io/svcoasapidefinition';
/** Keeps an SvcStreamsApiDefinition until its API is gone from the gateway. */
export const STREAMS_FINALIZER = 'finalizers.svc.svc.io/svcstreamsapidefinition';
/** Keeps a SecurityPolicy until its policy is gone from the gateway. */
export const POLICY_FINALIZER = 'finalizers.svc.svc.io/securitypolicy';
/** Keeps an OperatorContext while resources still use it. */
export const CONTEXT_FINALIZER = 'finalizers.svc.svc.io/operatorcontext';
/** Keeps an ApiKey until its key is gone from the gateway. */
export const KEY_FINALIZER = 'finalizers.svc.svc.io/apikey';
/** Keeps a SubGraph while SuperGraphs list it or ApiDefinitions serve it (graphql.graph_ref). */
export const SUBGRAPH_FINALIZER = 'finalizers.svc.svc.io/subgraph';
/** Keeps a SuperGraph while ApiDefinitions serve it (graphql.graph_ref). */
export const SUPERGRAPH_FINALIZER = 'finalizers.svc.svc.io/supergraph';
/** Keeps an APIDescription until its product is gone from the dashboard's portal. */
export const API_DESCRIPTION_FINALIZER = 'finalizers.svc.svc.io/apidescription';
/** Keeps a PortalAPICatalogue until its catalogue is gone from the dashboard's portal. */
export const CATALOGUE_FINALIZER = 'finalizers.svc.svc.io/portalapicatalogue';
/** Keeps a PortalConfig until its settings are gone from the dashboard's portal. */
export const PORTAL_CONFIG_FINALIZER = 'finalizers.svc.svc.io/portalconfig';
