/**
 * Rules of an ApiKey that its schema can't say, written once for the webhooks and the operator
 * (which applies them too, for clusters without webhooks): a `basic` key names its user, the
 * others don't; a `certificate` key names its Secret and has no value of its own (no
 * `secretRef`, `rotate` nor overlap: a new certificate in the Secret re-binds it); the rotation
 * overlap is for tokens.
 */
import type { ApiKeySpec } from '../generated/kinds.ts';
import type { FieldProblem } from './field-problem.ts';

/** The key type, as the CRD defaults it. */
export function keyTypeOf(spec: Pick<ApiKeySpec, 'type'>): 'token' | 'basic' | 'certificate' {
  return spec.type ?? 'token';
}

/** Problems of an ApiKey's spec; paths relative to the spec (`username`). */
export function apiKeyProblems(spec: ApiKeySpec): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const type = keyTypeOf(spec);
  if (type === 'certificate') {
    if ((spec.certificateSecretRef ?? '') === '') {
      problems.push({
        path: 'certificateSecretRef',
        type: 'Required',
        message: 'a certificate key names the kubernetes.io/tls Secret of its client certificate',
      });
    }
    if (spec.secretRef !== undefined) {
      problems.push({
        path: 'secretRef',
        type: 'Forbidden',
        message:
          'a certificate key has no token: the certificate of certificateSecretRef is its credential; remove it',
      });
    }
    if (spec.rotate !== undefined) {
      problems.push({
        path: 'rotate',
        type: 'Forbidden',
        message: 'a certificate key is rotated by putting a new certificate in its Secret; remove it',
      });
    }
    if ((spec.rotation?.overlapSeconds ?? 0) > 0) {
      problems.push({
        path: 'rotation.overlapSeconds',
        type: 'Forbidden',
        message:
          'a certificate key is bound to one certificate at a time: a new one replaces the old at once; set 0',
      });
    }
  }
  if (type === 'basic' && (spec.username ?? '') === '') {
    problems.push({
      path: 'username',
      type: 'Required',
      message: 'a basic key names its user: set username',
    });
  }
  if (type !== 'basic' && spec.username !== undefined) {
    problems.push({
      path: 'username',
      type: 'Forbidden',
      message: `only basic keys have a user name; remove it, or set type: basic`,
    });
  }
  if (type !== 'certificate' && spec.certificateSecretRef !== undefined) {
    problems.push({
      path: 'certificateSecretRef',
      type: 'Forbidden',
      message: 'only certificate keys are bound to a certificate; remove it',
    });
  }
  if (type === 'basic' && (spec.rotation?.overlapSeconds ?? 0) > 0) {
    problems.push({
      path: 'rotation.overlapSeconds',
      type: 'Forbidden',
      message: 'a basic user has one password at a time: a new one replaces the old at once; set 0',
    });
  }
  if (spec.expiresAt !== undefined && Number.isNaN(Date.parse(spec.expiresAt))) {
    problems.push({
      path: 'expiresAt',
      type: 'Invalid',
      message: 'not an RFC 3339 time (2030-01-31T00:00:00Z)',
    });
  }
  return problems;
}
