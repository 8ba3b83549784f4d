/**
 * Defaults of SubGraph and SuperGraph: none of their fields has one; the mutating endpoint is
 * there to add the operator's finalizer (schemas/finalizers.ts) when the object is created.
 */
import { clone } from './defaults.ts';

/** A copy of a SubGraph or SuperGraph, unchanged. */
export function defaultGraph(obj: unknown): unknown {
  return clone(obj);
}
