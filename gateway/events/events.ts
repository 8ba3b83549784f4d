/**
 * Gateway events (GATEWAY-BEHAVIOUR §6): what fires, and the payload every handler gets. A route
 * compiles its API's `event_handlers` once (`compileEvents`, events/compile.ts); middleware fire
 * events through `RequestContext.emit`, which never waits for a handler.
 */

import type { EventName } from '../../schemas/rules/event-handlers.ts';

// The names are a rule of the API model (which events `event_handlers` may name), written once
// in schemas/ for the webhooks and the gateway.
export {
  EVENT_ALIASES,
  EVENT_NAMES,
  eventNameOf,
  type EventName,
} from '../../schemas/rules/event-handlers.ts';

/** What a handler receives. */
export interface GatewayEvent {
  event: EventName;
  message: string;
  /** Request path. */
  path: string;
  /** Client address. */
  origin: string;
  /** The stored (hashed) ID of the key, or '' for keyless requests. */
  key: string;
  api_id: string;
  /** ISO 8601. */
  timestamp: string;
}

/** The compiled event handlers of one API. */
export interface ApiEvents {
  /** Hands the event to the API's handlers; returns at once (delivery is asynchronous). */
  emit(event: GatewayEvent): void;
  /** Stops deliveries in progress (the route table is retired). */
  close(): Promise<void>;
}

/** An API without handlers. */
export const noEvents: ApiEvents = {
  emit: () => undefined,
  close: () => Promise.resolve(),
};
