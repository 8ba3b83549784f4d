/**
 * The ingress controller: Ingresses of our class become ApiDefinitions the Ingress owns (one per
 * rule host and path, translate/ingress.ts), which the ApiDefinition controller pushes to the
 * gateway like any other. The Ingress's finalizer deletes them with it (a cluster without the
 * garbage collector, such as a bare API server, included); its status carries the load balancer
 * address, an annotation lists the generated APIs, and Events say what was done and what failed.
 *
 * One job per file in ingress/: types.ts (names, objects, settings, the reconciler's deps),
 * class.ts (which Ingresses are ours), generated-api.ts (a generated API as the resource
 * written), template.ts (the template an Ingress names), problems.ts (Warning Events),
 * load-balancer.ts (status addresses), reconcile.ts (one Ingress), writers.ts (writes to the
 * cluster), controller.ts (informers, watches, wiring). This module is what others import.
 */
export * from './ingress/types.ts';
export { isOurIngress } from './ingress/class.ts';
export { contains } from './ingress/generated-api.ts';
export { addressEntry, serviceAddresses } from './ingress/load-balancer.ts';
export { reconcileIngress } from './ingress/reconcile.ts';
export { ingressController, urlPort } from './ingress/controller.ts';
