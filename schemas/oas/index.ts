/**
 * An OAS API (an OpenAPI 3.x document with the `x-svc-api-gateway` extension) as the classic
 * definition the gateway serves. `oasToClassic` converts; `checkOasDocument` converts and runs the
 * classic model's schema and rules on the result, reporting each problem at its path in the
 * document. The admission webhooks (the ConfigMap of an SvcOasApiDefinition) and the gateway
 * (`/svc/apis/oas`, reloads) call the same functions after the document's own schema, so a
 * document the webhooks admit is never refused by the gateway.
 *
 * What is read (docs/gateway.md, "OAS APIs"):
 * - `info.id`, `info.orgId`, `info.name`, `info.state.active`, `info.state.internal`;
 * - `upstream.url`; `server.listenPath.value` and `.strip`; `server.customDomain` (when enabled);
 *   `server.detailedTracing` (accepted and kept in the document; nothing is traced yet);
 * - `server.authentication`: `enabled` (otherwise the API is keyless), `stripAuthorizationData`,
 *   `baseIdentityProvider`, and per scheme of the document's top-level `security` (declared in
 *   `components.securitySchemes`): `apiKey` is the auth token, `http`/`basic` basic
 *   authentication, `http`/`bearer`/`JWT` the JWT fields of the classic model, each with the
 *   `header`, `query` and `cookie` locations of `securitySchemes.<name>`;
 * - `middleware.global.ipAllowList`, `.ipBlockList` and `.rateLimit` (`per` a duration such as
 *   `1m`, in whole seconds); `.skipRateLimit`, `.skipQuota` and `.skipQuotaReset`.
 *
 * No silent fail-open: anything else in the extension that says something (a value other than
 * false, 0, '' or empty, and not an object with `enabled: false`) is refused by name, as are
 * schemes the document requires but the extension does not enable, enabled schemes the document
 * does not require, alternative security requirements, scopes and per-operation security.
 *
 * A translator from one model to the other, one file per job: document.ts (the conversion's
 * state, paths into the document, `$ref`s), server.ts (info, upstream, server), auth.ts
 * (security), global.ts (API-wide middleware), operations.ts (operations as endpoints),
 * convert.ts (the whole conversion), check.ts (the classic rules on its result).
 */
export { checkOasDocument } from './check.ts';
export { oasToClassic } from './convert.ts';
export { OAS_EXTENSION, documentPath, type OasConversion } from './document.ts';
export { parseDuration } from './global.ts';
export { oasEndpointPath } from './operations.ts';
