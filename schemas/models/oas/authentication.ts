/** The settings of a security scheme under `x-svc-api-gateway.server.authentication`. */
import type { JsonSchema } from '../../json-schema.ts';
import { enabled } from './parts.ts';
import { closedObject, strings } from '../builders.ts';

const credentialLocation = (where: string): JsonSchema =>
  closedObject(
    { title: 'CredentialLocation', description: `Read the credentials from ${where} as well.` },
    {
      enabled: enabled('this location'),
      name: { type: 'string', description: 'Name of the header, query parameter or cookie.' },
    },
  );

/** Settings of one security scheme under `x-svc-api-gateway.server.authentication`. */
export const securityScheme: JsonSchema = closedObject(
  {
    title: 'OasSecurityScheme',
    description: 'Gateway settings of a security scheme declared in `components.securitySchemes`.',
  },
  {
    enabled: enabled('the scheme'),
    header: credentialLocation('a header'),
    query: credentialLocation('a query parameter (case-sensitive)'),
    cookie: credentialLocation('a cookie (case-sensitive)'),
    enableClientCertificate: enabled('dynamic mTLS: a client certificate replaces the token'),
    signatureValidation: closedObject(
      { title: 'OasSignatureValidation', description: 'Signature validation with the auth token.' },
      {
        enabled: enabled('signature validation'),
        algorithm: {
          type: 'string',
          enum: ['VendorSHA256', 'VendorMD5'],
          description: 'Signature algorithm.',
        },
        header: { type: 'string', description: 'Header that carries the signature.' },
        query: { type: 'string', description: 'Query parameter that carries the signature.' },
        secret: { type: 'string', description: 'Shared secret.' },
        allowedClockSkew: { type: 'integer', minimum: 0, description: 'Allowed clock skew in seconds.' },
        errorCode: { type: 'integer', minimum: 400, maximum: 599, description: 'Status of a refusal.' },
        errorMessage: { type: 'string', description: 'Message of a refusal.' },
      },
    ),
    source: {
      type: 'string',
      description:
        'JWT: the key that verifies tokens: a base64 secret or PEM public key, or the URL of a JWKS.',
    },
    signingMethod: {
      type: 'string',
      enum: ['hmac', 'rsa', 'ecdsa'],
      description: 'JWT: the family of algorithms the tokens are signed with.',
    },
    identityBaseField: { type: 'string', description: 'JWT: the claim that identifies the client (`sub`).' },
    skipKid: { type: 'boolean', description: 'JWT: ignore the `kid` header of tokens.' },
    policyFieldName: { type: 'string', description: 'JWT: the claim that carries the policy ID to apply.' },
    clientBaseField: { type: 'string', description: 'JWT: the claim that names the client key.' },
    defaultPolicies: strings('JWT: policy IDs applied when a token has no policy claim.'),
    issuedAtValidationSkew: {
      type: 'integer',
      minimum: 0,
      description: 'JWT: seconds of clock skew allowed on `iat`.',
    },
    notBeforeValidationSkew: {
      type: 'integer',
      minimum: 0,
      description: 'JWT: seconds of clock skew allowed on `nbf`.',
    },
    expiresAtValidationSkew: {
      type: 'integer',
      minimum: 0,
      description: 'JWT: seconds of clock skew allowed on `exp`.',
    },
    cacheTTL: {
      type: 'integer',
      minimum: 0,
      description: 'Basic auth: seconds verified credentials stay cached.',
    },
    disableCaching: { type: 'boolean', description: 'Basic auth: no credential cache.' },
    extractCredentialsFromBody: closedObject(
      { title: 'OasBodyCredentials', description: 'Basic auth: take the credentials from the request body.' },
      {
        enabled: enabled('body extraction'),
        userRegexp: { type: 'string', description: 'Regular expression with one group capturing the user.' },
        passwordRegexp: {
          type: 'string',
          description: 'Regular expression with one group capturing the password.',
        },
      },
    ),
  },
);
