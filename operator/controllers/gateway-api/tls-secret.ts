/**
 * Whether a listener's certificate Secret holds what svc serves with: `tls.crt` a PEM certificate
 * and `tls.key` a private key that parse (the spec's InvalidCertificateRef when not).
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';

/** The problem of a TLS Secret, or undefined when its certificate and key parse. */
export function tlsSecretProblem(secret: Pick<k8s.V1Secret, 'data'>): string | undefined {
  const crt = secret.data?.['tls.crt'];
  const key = secret.data?.['tls.key'];
  if (crt === undefined || crt === '' || key === undefined || key === '') return 'needs tls.crt and tls.key';
  try {
    new X509Certificate(Buffer.from(crt, 'base64'));
  } catch {
    return 'tls.crt is not a PEM certificate';
  }
  try {
    createPrivateKey(Buffer.from(key, 'base64'));
  } catch {
    return 'tls.key is not a PEM private key';
  }
  return undefined;
}
