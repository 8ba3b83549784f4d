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
import { orgQuota } from '../middleware/org-quota/index.ts';
import { quota } from '../middleware/quota/index.ts';
import { rateLimit } from '../middleware/rate-limit/index.ts';
import { authToken } from '../middleware/auth-token/index.ts';
import { basicAuth } from '../middleware/basic-auth/index.ts';
import { customAuth } from '../middleware/custom-auth/index.ts';
import { hmacSigning } from '../middleware/hmac/index.ts';
import { jwt } from '../middleware/jwt/index.ts';
import { pluginsPost, pluginsPostKeyAuth, pluginsPre, pluginsResponse } from '../middleware/plugins/index.ts';
import { tokenSignatureCheck } from '../middleware/token-signature/index.ts';
import { ipAllowList, ipBlockList } from '../middleware/ip-lists/index.ts';
import { keyState } from '../middleware/key-state/index.ts';
import { mutualTls } from '../middleware/mutual-tls/index.ts';
import { stripAuthData } from '../middleware/strip-auth/index.ts';
import type { Middleware } from '../pipeline/compose.ts';

/** Stages of the chain, in order; the upstream call follows the last one. */
export const stages: readonly { stage: string; middleware: readonly Middleware[] }[] = [
  {
    // API-wide rate limit, IP allow list, IP block list, static client certificate, request size;
    // then the plugins' `pre` hooks.
    stage: 'api-wide checks',
    middleware: [apiRateLimit, ipAllowList, ipBlockList, mutualTls /* requestSize */, pluginsPre],
  },
  {
    // The enabled methods (schemas/rules/auth.ts authMethodsOf); with chained auth every one
    // must pass and base_identity_provided_by names the session. Every API that is not keyless
    // has at least one. The token's signature is checked right after the token is found.
    stage: 'authentication',
    middleware: [authToken, tokenSignatureCheck, basicAuth, jwt, hmacSigning, customAuth],
  },
  {
    // The plugins' `post_key_auth` hooks first, then the checks of the session.
    stage: 'access',
    middleware: [pluginsPostKeyAuth, stripAuthData, keyState, accessRights],
  },
  {
    stage: 'limits',
    middleware: [rateLimit, quota, orgQuota, endpointLimits],
  },
  {
    stage: 'before upstream',
    middleware: [/* graphql, streams, transforms */ pluginsPost, pluginsResponse],
  },
];

/** Every middleware, in chain order. */
export const chain: readonly Middleware[] = stages.flatMap((s) => s.middleware);
