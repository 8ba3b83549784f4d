/**
 * Gateway API (GatewayClass, Gateway, HTTPRoute, ReferenceGrant) -> the ApiDefinitions that
 * serve it, with the status the spec asks (pure, golden-tested). One job per file in
 * gateway-api/: types.ts (the objects as read, the output), listeners.ts (listeners, attachment,
 * hostnames), backends.ts (backendRefs to addresses, weights), filters.ts (filters and timeouts
 * to API settings), translate.ts (the whole). This module is what others import.
 */
export * from './gateway-api/types.ts';
export { granted } from './gateway-api/backends.ts';
export { durationMs } from './gateway-api/filters.ts';
export { intersectHostnames } from './gateway-api/listeners.ts';
export { gatewayApiId, gatewayApiName, translateGateway } from './gateway-api/translate.ts';
