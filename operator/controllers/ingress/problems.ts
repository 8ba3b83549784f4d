/**
 * What goes wrong for an Ingress, reported as Warning Events on it: the translation's problems,
 * a template that is missing or no template, and writes of generated APIs that failed.
 */
import { errorMessage } from '../../../lib/errors.ts';
import { statusOf } from '../../../lib/k8s/client.ts';
import { objectKey } from '../../../lib/k8s/informer.ts';
import type { IngressProblem } from '../../translate/ingress.ts';
import type { IngressDeps, IngressObject } from './types.ts';

/** A problem reported on the Ingress: one of the translation's, or a write of a generated API that failed. */
export interface Problem {
  reason: IngressProblem['reason'] | 'ApiRefused' | 'ApiWriteFailed';
  message: string;
  retry: boolean;
}

/**
 * A failed write of a generated ApiDefinition: refused (the webhook: a route another API claims,
 * say) waits for a change; anything else is retried with backoff.
 */
export function writeProblem(what: string, err: unknown): Problem {
  const status = statusOf(err);
  const refused = status !== undefined && status < 500 && status !== 409 && status !== 429;
  return {
    reason: refused ? 'ApiRefused' : 'ApiWriteFailed',
    message: `${what}: ${errorMessage(err)}`,
    retry: !refused,
  };
}

/** Records a Warning Event for each problem, unless the same ones were reported last time. */
export async function reportProblems(
  ingress: IngressObject,
  problems: readonly { reason: string; message: string }[],
  deps: IngressDeps,
): Promise<void> {
  const key = objectKey(ingress);
  const text = problems.map((p) => `${p.reason}: ${p.message}`).join('\n');
  if ((deps.reported.get(key) ?? '') === text) return;
  if (text === '') deps.reported.delete(key);
  else deps.reported.set(key, text);
  for (const p of problems) await deps.events.record(ingress, 'Warning', p.reason, p.message);
}
