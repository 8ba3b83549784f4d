/**
 * Authentication of a classic API: where credentials are read (`auth`, `auth_configs`) and the
 * methods (auth token, basic, JWT, mTLS, HMAC signatures, chained authentication).
 */
import type { JsonSchema } from '../../json-schema.ts';
import { enforced, closedObject } from '../builders.ts';

/** Where a token, or the basic-auth credentials, are read from, and signature checks. */
export const authConfig: JsonSchema = closedObject(
  { title: 'AuthConfig', description: 'Where the credentials are read from, and how they are checked.' },
  {
    auth_header_name: {
      type: 'string',
      default: 'Authorization',
      description: 'Header that carries the credentials (name matched case-insensitively).',
    },
    disable_header: {
      type: 'boolean',
      description:
        'Do not read the credentials from a header: only from the query parameter or cookie enabled here (an OAS scheme declared `in: query` or `in: cookie`).',
    },
    use_param: { type: 'boolean', description: 'Also read the token from a query parameter.' },
    param_name: {
      type: 'string',
      description:
        'Query parameter name when `use_param` is true (case-sensitive). Defaults to the header name.',
    },
    use_cookie: { type: 'boolean', description: 'Also read the token from a cookie.' },
    cookie_name: {
      type: 'string',
      description: 'Cookie name when `use_cookie` is true (case-sensitive). Defaults to the header name.',
    },
    use_certificate: {
      type: 'boolean',
      description: 'Dynamic mTLS: a client certificate bound to a key replaces the token.',
    },
    validate_signature: { type: 'boolean', description: 'Check a request signature as well as the token.' },
    signature: closedObject(
      { title: 'SignatureConfig', description: 'Signature validation with the auth token.' },
      {
        algorithm: {
          type: 'string',
          enum: ['VendorSHA256', 'VendorMD5'],
          description:
            'Hex digest (SHA-256 or MD5) of the token, the secret and the Unix time in seconds, concatenated.',
        },
        header: { type: 'string', description: 'Header that carries the signature.' },
        use_param: {
          type: 'boolean',
          description: 'Also read the signature from a query parameter, which wins when present.',
        },
        param_name: {
          type: 'string',
          description: 'Query parameter of the signature (default: the header name).',
        },
        secret: {
          type: 'string',
          description:
            'Shared secret, written as it is (the `$secret_conf.<name>` and `$secret_env.<name>` references of other gateways are refused).',
        },
        allowed_clock_skew: {
          type: 'integer',
          minimum: 0,
          description: 'Seconds the signed timestamp may differ from the gateway clock.',
        },
        error_code: {
          type: 'integer',
          minimum: 400,
          maximum: 599,
          description: 'Status of a refused signature (default 401).',
        },
        error_message: {
          type: 'string',
          description: 'Message of a refused signature (default `Request signature verification failed`).',
        },
      },
    ),
  },
);

/** The authentication fields of a classic API. */
export const authProperties: Record<string, JsonSchema> = {
  use_keyless: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      'Open access with no authentication. False means a key is required (auth token in `Authorization` unless another method is enabled).',
  },
  use_standard_auth: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Auth token authentication.',
  },
  use_basic_auth: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Basic authentication (`Authorization: Basic ...`).',
  },
  basic_auth: closedObject(
    { 'x-svc-support': 'supported', title: 'BasicAuthConfig', description: 'Basic authentication settings.' },
    {
      disable_caching: { type: 'boolean', description: 'Check every request against the registered users.' },
      cache_ttl: {
        type: 'integer',
        minimum: 0,
        description: 'Seconds verified credentials stay cached.',
      },
      extract_from_body: { type: 'boolean', description: 'Take the credentials from the request body.' },
      body_user_regexp: {
        type: 'string',
        description: 'Regular expression with exactly one group that captures the user name in the body.',
      },
      body_password_regexp: {
        type: 'string',
        description: 'Regular expression with exactly one group that captures the password in the body.',
      },
    },
  ),
  enable_jwt: { 'x-svc-support': 'supported', type: 'boolean', description: 'JWT authentication.' },
  jwt_signing_method: {
    'x-svc-support': 'supported',
    type: 'string',
    enum: ['hmac', 'rsa', 'ecdsa'],
    description: 'Family of algorithms the tokens are signed with.',
  },
  jwt_source: {
    'x-svc-support': 'supported',
    type: 'string',
    description: 'Key that verifies tokens: a base64 secret or PEM public key, or the URL of a JWKS.',
  },
  jwt_identity_base_field: {
    'x-svc-support': 'supported',
    type: 'string',
    default: 'sub',
    description: 'Claim that identifies the client.',
  },
  jwt_policy_field_name: {
    'x-svc-support': 'supported',
    type: 'string',
    description: 'Claim that carries the policy ID to apply.',
  },
  jwt_client_base_field: {
    'x-svc-support': 'not-supported',
    'x-svc-reason':
      'not built yet: a JWT session comes from `jwt_identity_base_field` and the policy claim; looking up an existing key named by a claim is not implemented',
    type: 'string',
    description: 'Claim that names the client key.',
  },
  jwt_skip_kid: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      'Ignore the `kid` header of tokens as an identity (the identity always comes from `jwt_identity_base_field`).',
  },
  jwt_scope_claim_name: {
    'x-svc-support': 'supported',
    type: 'string',
    description:
      'Claim holding the scopes for `jwt_scope_to_policy_mapping` (default `scope`; `a.b` reads a nested claim): a space-separated string or a list.',
  },
  jwt_expires_at_validation_skew: {
    'x-svc-support': 'supported',
    type: 'integer',
    minimum: 0,
    description: 'Seconds of clock skew allowed on `exp`.',
  },
  jwt_issued_at_validation_skew: {
    'x-svc-support': 'supported',
    type: 'integer',
    minimum: 0,
    description: 'Seconds of clock skew allowed on `iat`.',
  },
  jwt_not_before_validation_skew: {
    'x-svc-support': 'supported',
    type: 'integer',
    minimum: 0,
    description: 'Seconds of clock skew allowed on `nbf`.',
  },
  use_mutual_tls_auth: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Static mTLS: only clients presenting an allowed certificate pass.',
  },
  base_identity_provided_by: {
    'x-svc-support': 'supported',
    type: 'string',
    enum: ['', 'auth_token', 'basic_auth_user', 'jwt_claim', 'hmac_key', 'custom_auth', 'oauth_key'],
    description:
      'Chained authentication: every enabled method must pass, and this one provides the session of the request.',
  },
  strip_auth_data: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description: 'Remove the credentials or token from the request before it is proxied.',
  },
  auth: enforced(authConfig),
  auth_configs: {
    'x-svc-support': 'supported',
    type: 'object',
    description: 'Credential locations per method: `authToken`, `basic`, `jwt`, ...',
    additionalProperties: authConfig,
  },
  enable_signature_checking: {
    'x-svc-support': 'supported',
    type: 'boolean',
    description:
      'HMAC request signing: `Authorization: Signature keyId=...,algorithm=...,headers=...,signature=...` with the `hmac_string` of the key.',
  },
  hmac_allowed_clock_skew: {
    'x-svc-support': 'supported',
    type: 'number',
    description:
      'Milliseconds the signed `Date` (or `X-Aux-Date`) may differ from the gateway clock; 0 or less: any date.',
  },
  hmac_allowed_algorithms: {
    'x-svc-support': 'supported',
    type: 'array',
    items: { type: 'string', enum: ['hmac-sha1', 'hmac-sha256', 'hmac-sha384', 'hmac-sha512'] },
    description: 'Algorithms clients may sign with; empty: all four.',
  },
};
