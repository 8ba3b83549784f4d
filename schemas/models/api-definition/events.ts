/** Event handlers of a classic API: what to do when an event fires (log it, or call a webhook). */
import type { JsonSchema } from '../../json-schema.ts';
import { closedObject } from '../builders.ts';

const eventHandler: JsonSchema = closedObject(
  { title: 'EventHandler', description: 'What to do when an event fires.', required: ['handler_name'] },
  {
    handler_name: {
      type: 'string',
      enum: ['eh_log_handler', 'eh_web_hook_handler', 'cp_dynamic_handler'],
      description:
        "Log the event, deliver it to a webhook, or send it to the gateway's gRPC plugin server (`cp_dynamic_handler`: its `DispatchEvent`, with `handler_meta.name` as the payload's `handler_name`).",
    },
    handler_meta: {
      type: 'object',
      description:
        'Settings of the handler; for a webhook: `target_path`, `method`, `header_map`, `body_template` (an inline template of the payload fields), `event_timeout` (cooldown seconds); for `cp_dynamic_handler`: `name`, the handler the plugin server runs.',
      'x-kubernetes-preserve-unknown-fields': true,
    },
  },
);

/** Event handlers of an API. */
export const eventHandlers: JsonSchema = closedObject(
  {
    title: 'EventHandlers',
    description:
      'Handlers per event (`RateLimitExceeded`, `QuotaExceeded`, `AuthFailure`, `KeyExpired`, ...).',
  },
  {
    events: {
      type: 'object',
      additionalProperties: { type: 'array', items: eventHandler },
      description: 'Handlers by event name.',
    },
  },
);
