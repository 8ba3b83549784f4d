/**
 * Compiles an API's `event_handlers` into the `ApiEvents` of its route, once per route table:
 * the handlers are read and checked by the shared rules (schemas/rules/event-handlers.ts, the
 * same the management API and the webhooks refuse definitions with), so nothing is parsed when
 * an event fires. `emit` runs the log handlers at once and hands webhooks their delivery, which
 * happens in the background; `close` ends the webhooks' deliveries when the route is retired.
 */
import { Agent } from 'undici';
import type { Logger } from '../../lib/log.ts';
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import {
  readEventHandlers,
  type CoprocessHandlerSettings,
  type LogHandlerSettings,
} from '../../schemas/rules/event-handlers.ts';
import { errorMessage } from '../../lib/errors.ts';
import { openPluginServer, type Dispatcher } from '../plugins/coprocess/dispatcher.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { processCooldowns, type Cooldowns } from './cooldown.ts';
import { noEvents, type ApiEvents, type EventName, type GatewayEvent } from './events.ts';
import { Webhook, WEBHOOK_LIMITS, type EventMetrics, type WebhookLimits } from './webhook.ts';

/** What compiling an API's event handlers needs. */
export interface EventDeps {
  log: Logger;
  /** Milliseconds since the epoch (webhook cooldowns). */
  now: () => number;
  /** Where deliveries are counted (`Metrics`, gateway/metrics/). */
  metrics?: EventMetrics | undefined;
  /** Webhook cooldowns (default: the process's, which outlive reloads). */
  cooldowns?: Cooldowns;
  /** Bounds of webhook deliveries (default: WEBHOOK_LIMITS); tests shorten them. */
  webhookLimits?: Partial<WebhookLimits>;
  /** The gateway's gRPC plugin server (`coprocess_grpc_server`), for `cp_dynamic_handler`. */
  coprocessServer?: string | undefined;
  /** Milliseconds a plugin server has to take an event (`plugin_timeout_ms`). */
  pluginTimeoutMs?: number;
}

/** Runs one handler on one event; must not throw nor wait. */
type Handle = (event: GatewayEvent) => void;

/**
 * The compiled handlers of `api`: `noEvents` when it has none. Throws when `event_handlers`
 * breaks a rule (the definition was checked before, so only a definition that skipped the
 * checks gets here).
 */
export function compileEvents(api: GatewayApiDefinition, deps: EventDeps): ApiEvents {
  const read = readEventHandlers(api);
  if (read.problems.length > 0) {
    throw new Error(`event_handlers: ${read.problems.map(formatProblem).join('; ')}`);
  }
  if (read.handlers.size === 0) return noEvents;
  const apiId = api.api_id ?? '';
  const log = deps.log.child({ api_id: apiId });
  const limits = { ...WEBHOOK_LIMITS, ...deps.webhookLimits };
  // One pool for the API's webhooks, opened by the first delivery: most events never fire.
  let agent: Agent | undefined;
  const dispatcher = (): Agent => (agent ??= new Agent({ keepAliveTimeout: 4_000 }));
  const webhooks: Webhook[] = [];
  // One client of the plugin server for the API's coprocess handlers, opened when compiled: an
  // API that names one on a gateway without a plugin server is not served.
  let plugins: Dispatcher | undefined;
  const pluginServer = (): Dispatcher => (plugins ??= openPluginServer(deps.coprocessServer));
  const handlers = new Map<EventName, Handle[]>();
  for (const [event, list] of read.handlers) {
    handlers.set(
      event,
      list.map((s): Handle => {
        if (s.kind === 'log') return logHandler(s, log, deps.metrics);
        if (s.kind === 'coprocess') {
          return coprocessHandler(s, api, pluginServer(), {
            log,
            metrics: deps.metrics,
            timeoutMs: deps.pluginTimeoutMs ?? 1000,
          });
        }
        const w = new Webhook(s, {
          apiId,
          log,
          now: deps.now,
          metrics: deps.metrics,
          cooldowns: deps.cooldowns ?? processCooldowns,
          dispatcher,
          limits,
        });
        webhooks.push(w);
        return w.handle;
      }),
    );
  }
  return {
    emit: (event) => {
      const list = handlers.get(event.event);
      if (list === undefined) return;
      for (const handle of list) {
        try {
          handle(event);
        } catch (err) {
          // A handler must not break the request that fired the event.
          log.error('event handler failed', { event: event.event, error: String(err) });
        }
      }
    },
    close: async () => {
      plugins?.close();
      await Promise.all(webhooks.map((w) => w.close()));
      await agent?.close();
    },
  };
}

/**
 * The handler of the gRPC plugin server (`cp_dynamic_handler`): the event goes to its
 * `DispatchEvent` as the reference sends it, a JSON payload
 * `{"message": {"Type", "Meta": {"Message", "Path", "Origin", "Key", "OriginatingRequest"},
 * "TimeStamp"}, "handler_name", "spec": {"APIID", "OrgID"}}`, in the background; a failed
 * delivery is logged and counted, never retried (as the reference).
 */
function coprocessHandler(
  s: CoprocessHandlerSettings,
  api: GatewayApiDefinition,
  server: Dispatcher,
  opts: { log: Logger; metrics: EventMetrics | undefined; timeoutMs: number },
): Handle {
  const spec = { APIID: api.api_id ?? '', OrgID: api.org_id ?? '' };
  return (e) => {
    const payload = JSON.stringify({
      message: {
        Type: e.event,
        Meta: { Message: e.message, Path: e.path, Origin: e.origin, Key: e.key, OriginatingRequest: '' },
        TimeStamp: e.timestamp,
      },
      handler_name: s.name,
      spec,
    });
    server.dispatchEvent(payload, opts.timeoutMs).then(
      () => opts.metrics?.event(e.event, 'delivered'),
      (err: unknown) => {
        opts.log.warn('event delivery failed', {
          event: e.event,
          handler: `grpc:${s.name}`,
          error: errorMessage(err),
        });
        opts.metrics?.event(e.event, 'failed');
      },
    );
  };
}

/** The log handler (`eh_log_handler`): one line per event through the gateway's logger. */
function logHandler(s: LogHandlerSettings, log: Logger, metrics: EventMetrics | undefined): Handle {
  const out = log.child({ part: 'events', handler: 'log', ...(s.prefix === '' ? {} : { prefix: s.prefix }) });
  return (e) => {
    // The key's field is `key_hash`: the logger redacts any field named `key`.
    out.info('gateway event', {
      event: e.event,
      message: e.message,
      path: e.path,
      origin: e.origin,
      key_hash: e.key,
      event_time: e.timestamp,
    });
    metrics?.event(e.event, 'delivered');
  };
}
