/**
 * The order of the whole request chain, top to bottom. The first refusal answers
 * (GATEWAY-BEHAVIOUR §2). Each stage names the middleware that belong in it; the ones not written
 * yet are listed as comments where they will go (until then the gateway refuses, at write time,
 * any definition that enables them: schemas/rules/). A middleware is compiled per API when routes
 * load, and only when `enabled(api)` says the API needs it.
 */
import { accessRights } from '../middleware/access-rights/index.ts';
import { apiRateLimit } from '../middleware/api-rate-limit/index.ts';
import { endpointLimits } from '../middleware/endpoint-limits/index.ts';
import { endpointLists, unlessIgnored } from '../middleware/endpoint-lists/index.ts';
import { internalEndpoints } from '../middleware/internal-endpoints/index.ts';
import { sizeLimits } from '../middleware/size-limits/index.ts';
import { versionExpiryCheck } from '../middleware/version-expiry/index.ts';
import { versions } from '../middleware/versions/index.ts';
import { bodyTransforms } from '../middleware/body-transforms/index.ts';
import { headers } from '../middleware/headers/index.ts';
import { methodTransforms } from '../middleware/method-transforms/index.ts';
import { urlRewrites } from '../middleware/url-rewrites/index.ts';
import { orgQuota } from '../middleware/org-quota/index.ts';
import { quota } from '../middleware/quota/index.ts';
import { rateLimit } from '../middleware/rate-limit/index.ts';
import { authToken } from '../middleware/auth-token/index.ts';
import { basicAuth } from '../middleware/basic-auth/index.ts';
import { customAuth } from '../middleware/custom-auth/index.ts';
import { hmacSigning } from '../middleware/hmac/index.ts';
import { jwt } from '../middleware/jwt/stage.ts';
import { pluginsPost, pluginsPostKeyAuth, pluginsPre, pluginsResponse } from '../middleware/plugins/index.ts';
import { tokenSignatureCheck } from '../middleware/token-signature/index.ts';
import { ipAllowList, ipBlockList } from '../middleware/ip-lists/index.ts';
import { keyState } from '../middleware/key-state/index.ts';
import { mutualTls } from '../middleware/mutual-tls/index.ts';
import { stripAuthData } from '../middleware/strip-auth/index.ts';
import { cors } from '../middleware/cors/index.ts';
import { hardTimeouts } from '../middleware/hard-timeouts/index.ts';
import { circuitBreakers } from '../middleware/circuit-breakers/index.ts';
import { loadBalancing } from '../middleware/load-balancing/index.ts';
import { mirror } from '../middleware/mirror/index.ts';
import { validateJson } from '../middleware/validate-json/index.ts';
import { mockResponses } from '../middleware/mock-responses/index.ts';
import { virtualEndpoints } from '../middleware/virtual-endpoints/index.ts';
import { responseCache } from '../middleware/cache/index.ts';
import { detailedRecording } from '../middleware/detailed-recording/index.ts';
import type { GatewayMiddleware } from '../middleware/deps.ts';
import { streams } from '../streams/middleware.ts';
import { graphql } from '../graphql/stage.ts';
import { graphqlPlayground } from '../graphql/playground.ts';
import { oauth2Bearer, oauth2Endpoints } from '../oauth2/middleware.ts';

/** Stages of the chain, in order; the upstream call follows the last one. */
export const stages: readonly { stage: string; middleware: readonly GatewayMiddleware[] }[] = [
  {
    // API-wide rate limit, IP allow list, IP block list, static client certificate, the request's
    // version (chosen per request, or the one served; its override_target), the version's
    // expiry, request size, the version's internal endpoints (refused to clients, served to
    // internal targets) and endpoint lists; then the plugins' `pre` hooks; the
    // GraphQL playground page (public, as the page holds nothing; its queries are authenticated).
    // CORS comes first: a browser's preflight carries no credentials and counts against nothing.
    stage: 'api-wide checks',
    middleware: [
      cors,
      apiRateLimit,
      ipAllowList,
      ipBlockList,
      mutualTls,
      // `{listen_path}oauth/token` and `oauth/revoke` of OAuth 2.0 APIs answer here.
      oauth2Endpoints,
      versions,
      versionExpiryCheck,
      sizeLimits,
      internalEndpoints,
      endpointLists,
      pluginsPre,
      graphqlPlayground,
    ],
  },
  {
    // The enabled methods (schemas/rules/auth.ts authMethodsOf); with chained auth every one
    // must pass and base_identity_provided_by names the session. Every API that is not keyless
    // has at least one. The token's signature is checked right after the token is found. This
    // stage and the next two skip requests to the version's `ignored` endpoints.
    stage: 'authentication',
    middleware: [authToken, tokenSignatureCheck, basicAuth, jwt, hmacSigning, customAuth, oauth2Bearer].map(
      unlessIgnored,
    ),
  },
  {
    // The plugins' `post_key_auth` hooks first, then the checks of the session.
    stage: 'access',
    middleware: [pluginsPostKeyAuth, stripAuthData, keyState, accessRights].map(unlessIgnored),
  },
  {
    stage: 'limits',
    middleware: [rateLimit, quota, orgQuota, endpointLimits].map(unlessIgnored),
  },
  {
    // Detailed recording first (it records the body as the client sent it), then JSON Schema
    // validation of the body, then the body templates (`transform`; a
    // `transform_response` is set here and applied to the upstream's body); the version's header changes (global and per
    // endpoint, request and response), URL rewrites (whose triggers see the changed headers, as
    // the reference's do) and method transforms come before the mock responses
    // (which carry the response headers), the virtual endpoints (a function answers), the response cache (a hit answers here, after
    // authentication and limits) and the plugins' `post` hooks, which see the request as
    // sent upstream; the mirrors get their copy of it (`mirror_targets`, not waited for); load balancing then picks the upstream (`target_list`, unless one was chosen
    // before: `override_target`, a rewrite); hard timeouts and circuit breakers wrap the upstream call itself.
    stage: 'before upstream',
    middleware: [
      detailedRecording,
      graphql,
      streams,
      validateJson,
      bodyTransforms,
      headers,
      urlRewrites,
      methodTransforms,
      mockResponses,
      virtualEndpoints,
      responseCache,
      pluginsPost,
      mirror,
      loadBalancing,
      hardTimeouts,
      circuitBreakers,
      pluginsResponse,
    ],
  },
];

/** Every middleware, in chain order. */
export const chain: readonly GatewayMiddleware[] = stages.flatMap((s) => s.middleware);
