/** The dashboard's own metrics (GET /metrics): requests by route, method and status, and their duration. */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Metrics of one dashboard process. */
export function createMetrics(): {
  registry: Registry;
  observe: (route: string, method: string, status: number, seconds: number) => void;
} {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'svc_dashboard_' });
  const requests = new Counter({
    name: 'svc_dashboard_requests_total',
    help: 'Requests answered, by route, method and status.',
    labelNames: ['route', 'method', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'svc_dashboard_request_duration_seconds',
    help: 'Time to answer a request, by route.',
    labelNames: ['route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  return {
    registry,
    observe: (route, method, status, seconds) => {
      requests.inc({ route, method, status: String(status) });
      duration.observe({ route }, seconds);
    },
  };
}
