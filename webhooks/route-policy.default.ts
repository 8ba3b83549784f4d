/**
 * Defaults of SvcRoutePolicy: each targetRef's group is the Gateway API's, and `use_keyless` is
 * written as the operator reads it (schemas/rules/route-policy.ts: keyless unless a keyed method
 * is on), so `kubectl get -o yaml` shows whether the routes need a key.
 */
import { asObject } from './access.ts';
import { clone, eachObject } from './defaults.ts';
import { routePolicyKeyless } from '../schemas/rules/route-policy.ts';

/** A copy of `obj` with its targetRefs' group and its use_keyless set. */
export function defaultRoutePolicy(obj: unknown): unknown {
  const out = asObject(clone(obj));
  const spec = asObject(out?.spec);
  if (out === undefined || spec === undefined) return obj;
  eachObject(spec.targetRefs, (ref) => {
    ref.group ??= 'gateway.networking.k8s.io';
  });
  spec.use_keyless ??= routePolicyKeyless(spec);
  return out;
}
