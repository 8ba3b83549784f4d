/**
 * Refusals and failures of the request path: each has a stable code, a status, the exact message
 * clients see in `{"error": "<message>"}`, and the extra headers it needs. Middleware returns them
 * through `reject(ctx, GatewayError.x())`; they are values, not exceptions.
 */
import { SvcError } from '../../lib/errors.ts';

/** A refusal the gateway answers with `{"error": message}`. */
export class GatewayError extends SvcError {
  /** Headers the refusal adds (for example `WWW-Authenticate`). */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The body of an answer the gateway makes itself instead of the upstream's (a mock response, a
   * CORS preflight, a playground asset: `respond` in compose.ts), sent as it is instead of
   * `{"error": message}`.
   */
  readonly replyBody: string | Buffer | undefined;
  /**
   * The Content-Length of an answer to HEAD that has no body to measure (a cached answer to HEAD:
   * the length the upstream gave); otherwise the body's length is sent.
   */
  readonly replyLength: number | undefined;

  constructor(
    code: string,
    status: number,
    message: string,
    headers: Record<string, string> = {},
    replyBody?: string | Buffer,
    replyLength?: number,
  ) {
    // A refusal is an answer, not a fault: no stack is captured (it costs more than the rest of
    // a cache hit or a 401), so the trace limit is 0 while the Error is built.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(code, message, { status });
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.headers = headers;
    this.replyBody = replyBody;
    this.replyLength = replyLength;
  }

  /**
   * An answer the gateway makes itself, for `respond` (compose.ts) only: it stops the chain and is
   * written by both entrances the way a refusal is, with its body as it is. `contentLength`: the
   * Content-Length of an answer to HEAD (no body to measure).
   */
  static answer(
    status: number,
    body: string | Buffer,
    headers: Record<string, string>,
    contentLength?: number,
  ): GatewayError {
    return new GatewayError('GW_ANSWER', status, 'answer', headers, body, contentLength);
  }

  /** No API matches the host and path. */
  static noRoute(): GatewayError {
    return new GatewayError('GW_ERR_NO_ROUTE', 404, 'Not Found');
  }

  /** A keyed API got a request without credentials. */
  static authFieldMissing(): GatewayError {
    return new GatewayError('GW_ERR_AUTH_FIELD_MISSING', 401, 'Authorization field missing');
  }

  /** The credentials name no key that may use this API. */
  static accessDisallowed(): GatewayError {
    return new GatewayError('GW_ERR_ACCESS_DISALLOWED', 403, 'Access to this API has been disallowed');
  }

  /** The key exists but is disabled (`is_inactive`, or a `draft` policy). */
  static keyInactive(): GatewayError {
    return new GatewayError('GW_ERR_KEY_INACTIVE', 403, 'Key is inactive, please renew');
  }

  /** The key's `expires` is in the past. */
  static keyExpired(): GatewayError {
    return new GatewayError('GW_ERR_KEY_EXPIRED', 401, 'Key has expired, please renew');
  }

  /** The client address is blocked, or not in the allow list. */
  static ipDisallowed(): GatewayError {
    return new GatewayError('GW_ERR_IP_DISALLOWED', 403, 'access from this IP has been disallowed');
  }

  /** The method and path are outside the key's `allowed_urls`. */
  static resourceDisallowed(): GatewayError {
    return new GatewayError('GW_ERR_RESOURCE_DISALLOWED', 403, 'Access to this resource has been disallowed');
  }

  /** Basic authentication without credentials: the client is told the realm. */
  static basicAuthMissing(realm: string): GatewayError {
    return new GatewayError('GW_ERR_AUTH_FIELD_MISSING', 401, 'Authorization field missing', {
      'www-authenticate': `Basic realm="${safeRealm(realm)}"`,
    });
  }

  /** Basic authentication with a header that isn't `Basic base64(user:password)`. */
  static basicAuthMalformed(): GatewayError {
    return new GatewayError(
      'GW_ERR_AUTH_MALFORMED',
      400,
      'Attempted access with malformed header, header not in basic auth format',
    );
  }

  /** Basic authentication with an unknown user or a wrong password. */
  static userNotAuthorised(realm: string): GatewayError {
    return new GatewayError('GW_ERR_USER_NOT_AUTHORISED', 401, 'User not authorised', {
      'www-authenticate': `Basic realm="${safeRealm(realm)}"`,
    });
  }

  /** JWT authentication without a token (the reference gateway answers 400 here, not 401). */
  static jwtMissing(): GatewayError {
    return new GatewayError('GW_ERR_AUTH_FIELD_MISSING', 400, 'Authorization field missing');
  }

  /** A JWT that does not verify: bad signature, an algorithm the API does not accept, no key. */
  static jwtInvalid(): GatewayError {
    return new GatewayError('GW_ERR_JWT_INVALID', 403, 'Key not authorized');
  }

  /** A JWT whose `exp` has passed (with the API's skew). */
  static jwtExpired(): GatewayError {
    return new GatewayError('GW_ERR_JWT_EXPIRED', 401, 'Key not authorized: token has expired');
  }

  /** A JWT whose `nbf` is still ahead (with the API's skew). */
  static jwtNotYetValid(): GatewayError {
    return new GatewayError('GW_ERR_JWT_NOT_YET_VALID', 401, 'Key not authorized: token is not valid yet');
  }

  /** A JWT whose `iat` is ahead (with the API's skew). */
  static jwtIssuedInFuture(): GatewayError {
    return new GatewayError(
      'GW_ERR_JWT_ISSUED_IN_FUTURE',
      401,
      'Key not authorized: token used before issued',
    );
  }

  /** A JWT without the identity claim (`jwt_identity_base_field`, else `sub`). */
  static jwtNoIdentity(): GatewayError {
    return new GatewayError(
      'GW_ERR_JWT_NO_IDENTITY',
      403,
      'Key not authorized: no suitable claims for user ID were found',
    );
  }

  /** A JWT that names no policy the API may apply (claim, defaults, scopes). */
  static jwtNoPolicy(): GatewayError {
    return new GatewayError('GW_ERR_JWT_NO_POLICY', 403, 'key not authorized: no matching policy');
  }

  /** Signature validation of an auth token failed: the API's status and message, else 401. */
  static signatureInvalid(status = 401, message = 'Request signature verification failed'): GatewayError {
    return new GatewayError('GW_ERR_SIGNATURE_INVALID', status, message);
  }

  /** HMAC request signing: missing, malformed or wrong `Signature`, unknown key, stale `Date`. */
  static hmacInvalid(): GatewayError {
    return new GatewayError('GW_ERR_HMAC_INVALID', 400, 'Authorization field missing, malformed or invalid');
  }

  /** A plugin refused the request with its own status and message. */
  static pluginRefused(status: number, message: string): GatewayError {
    return new GatewayError('GW_ERR_PLUGIN_REFUSED', status, message);
  }

  /** The version the request is served by has expired (`expires`). */
  static versionExpired(): GatewayError {
    return new GatewayError(
      'GW_ERR_VERSION_EXPIRED',
      403,
      'Api Version has expired, please check documentation or contact administrator',
    );
  }

  /** The API chooses its version per request; this one names none and there is no default. */
  static versionNotFound(): GatewayError {
    return new GatewayError('GW_ERR_VERSION_NOT_FOUND', 403, 'Version information not found');
  }

  /** The request names a version the API does not have. */
  static versionUnknown(): GatewayError {
    return new GatewayError('GW_ERR_VERSION_UNKNOWN', 403, 'This API version does not seem to exist');
  }

  /** The endpoint is in the version's black list, or outside its white list. */
  static endpointForbidden(): GatewayError {
    return new GatewayError('GW_ERR_ENDPOINT_FORBIDDEN', 403, 'Requested endpoint is forbidden');
  }

  /** A body larger than a middleware may read, or than the endpoint's size limit allows. */
  static bodyTooLarge(): GatewayError {
    return new GatewayError('GW_ERR_BODY_TOO_LARGE', 413, 'Request body too large');
  }

  /** The request head (line and headers) is over the listener's limit, 16 KiB (RFC 6585). */
  static headersTooLarge(): GatewayError {
    return new GatewayError('GW_ERR_HEADERS_TOO_LARGE', 431, 'Request Header Fields Too Large');
  }

  /** The key's rate limit (or a per-endpoint limit) is exceeded, throttling retries included. */
  static rateLimitExceeded(): GatewayError {
    return new GatewayError('GW_ERR_RATE_LIMIT_EXCEEDED', 429, 'Rate Limit Exceeded');
  }

  /** The API-wide rate limit (`global_rate_limit`) is exceeded. */
  static apiRateLimitExceeded(): GatewayError {
    return new GatewayError('GW_ERR_API_RATE_LIMIT_EXCEEDED', 429, 'API Rate Limit Exceeded');
  }

  /** The key's quota for the period is used up. */
  static quotaExceeded(): GatewayError {
    return new GatewayError('GW_ERR_QUOTA_EXCEEDED', 403, 'Quota exceeded');
  }

  /** The organisation's quota for the period is used up (`enforce_org_quotas`). */
  static orgQuotaExceeded(): GatewayError {
    return new GatewayError(
      'GW_ERR_ORG_QUOTA_EXCEEDED',
      403,
      'This organisation quota has been exceeded, please contact your account manager',
    );
  }

  /** The counters of limits can't be reached and the gateway is set to refuse meanwhile. */
  static limitsUnavailable(): GatewayError {
    return new GatewayError('GW_ERR_LIMITS_UNAVAILABLE', 503, 'Limits are unavailable, try again later');
  }

  /** The upstream refused the connection, reset it, or its name didn't resolve. */
  static upstreamUnreachable(): GatewayError {
    return new GatewayError('GW_ERR_UPSTREAM_UNREACHABLE', 502, 'There was a problem proxying the request');
  }

  /** The upstream's certificate carries a public key none of the API's pins (`pinned_public_keys`) accept. */
  static upstreamPinMismatch(): GatewayError {
    return new GatewayError(
      'GW_ERR_UPSTREAM_PIN_MISMATCH',
      502,
      "The upstream's certificate does not match the pinned public keys",
    );
  }

  /** The upstream took longer than the configured timeouts. */
  static upstreamTimeout(): GatewayError {
    return new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', 504, 'Upstream service reached hard timeout.');
  }

  /** The endpoint's circuit breaker is open (`circuit_breakers`). */
  static breakerOpen(): GatewayError {
    return new GatewayError('GW_ERR_BREAKER_OPEN', 503, 'Service temporarily unavailable.');
  }

  /** The request body does not match the endpoint's JSON Schema (`validate_json`). */
  static bodyInvalid(status: number, message: string): GatewayError {
    return new GatewayError('GW_ERR_BODY_INVALID', status, message);
  }

  /** An API without an upstream (for example GraphQL without target_url, until the engine exists). */
  static noUpstream(): GatewayError {
    return new GatewayError('GW_ERR_NO_UPSTREAM', 502, 'This API has no upstream');
  }

  /** A bug or an unexpected failure; the details are logged with the error ID. */
  static internal(errorId: string): GatewayError {
    return new GatewayError('GW_ERR_INTERNAL', 500, `Internal error (ID ${errorId})`);
  }
}

/** A realm for `WWW-Authenticate`: quotes, backslashes and line breaks removed. */
function safeRealm(realm: string): string {
  return realm.replace(/["\\\r\n]/g, '');
}
