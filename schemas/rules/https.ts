/**
 * Which certificate an `https` API is served with: its own (`certificates`, IDs of stored
 * certificates; the operator fills them from `certificate_secret_names`), or the gateway's
 * (`tls_cert_file`). On a gateway without a certificate of its own, an API's certificates answer
 * the TLS handshakes for its `domain` (by SNI), and those of an API without a domain every name on
 * its port; a name no certificate covers is refused at the handshake. An https API naming no
 * certificate on such a gateway has nothing to serve: refused, naming `protocol`. Whether the
 * gateway has a certificate is its configuration, so the gateway applies this rule
 * (gateway/routes/check.ts), at write time and at load.
 */
import type { FieldProblem } from './field-problem.ts';

/** What the rule reads of an API. */
export interface HttpsApiInput {
  protocol?: string | undefined;
  certificates?: readonly string[] | undefined;
}

/** The refusal of an https API with no certificate to serve. */
export const HTTPS_NEEDS_CERTIFICATE =
  "https needs the gateway's TLS certificate: configure tls_cert_file and tls_key_file, or use http";

/**
 * The problem of an https API that neither the gateway (`gatewayTls`: tls_cert_file is set) nor
 * the API itself (`certificates`) gives a certificate to serve.
 */
export function httpsCertificateProblems(api: HttpsApiInput, gatewayTls: boolean): FieldProblem[] {
  if (api.protocol !== 'https' || gatewayTls || (api.certificates ?? []).length > 0) return [];
  return [
    {
      path: 'protocol',
      type: 'Invalid',
      message: HTTPS_NEEDS_CERTIFICATE,
    },
  ];
}
