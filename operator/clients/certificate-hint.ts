/**
 * Why a call to a gateway or dashboard over HTTPS failed, when its certificate could not be
 * verified: the message then names the setting that accepts it.
 */

/** Node's codes for a peer certificate that could not be verified. */
const UNVERIFIED_CERTIFICATE = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * What to add to the message of a call that failed because the peer's certificate could not be
 * verified (the error or one of its causes has such a code): the setting that accepts it.
 * Empty for any other failure.
 */
export function certificateHint(err: unknown): string {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === 'object' && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNVERIFIED_CERTIFICATE.has(code)) {
      return ' (its certificate could not be verified: give it one the operator trusts, or accept it with SVC_TLS_INSECURE_SKIP_VERIFY=true, or env.insecureSkipVerify in an OperatorContext)';
    }
    e = (e as { cause?: unknown }).cause;
  }
  return '';
}
