/**
 * Gateway API (GatewayClass, Gateway, HTTPRoute, ReferenceGrant) -> the ApiDefinitions that
 * serve it, with the status the spec asks (pure, golden-tested). One job per file in
 * gateway-api/: types.ts (the objects as read, the output), listeners.ts (listeners, attachment,
 * hostnames), grants.ts (ReferenceGrants), backends.ts (backendRefs to addresses, weights), filters.ts (filters and timeouts
 * to API settings), routes.ts (a route attached: its parent statuses and the matches it serves),
 * apis.ts (those matches -> the APIs), translate.ts (the whole). This module is what others import.
 */
export * from './gateway-api/types.ts';
export { gatewayServesSecret, referenceGranted } from './gateway-api/grants.ts';
export { durationMs } from './gateway-api/filters.ts';
export { intersectHostnames } from './gateway-api/listeners.ts';
export { gatewayApiId, gatewayApiName } from './gateway-api/apis.ts';
export { translateGateway } from './gateway-api/translate.ts';
