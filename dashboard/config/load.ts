/**
 * Loads the dashboard configuration once at start (file, environment, flags; later sources win),
 * strictly, and says how to fix each problem.
 */
import { ConfigError, loadConfig, whereToSet } from '../../lib/config.ts';
import {
  MIN_SECRET_LENGTH,
  dashboardConfigSchema,
  dashboardConfigSources,
  type DashboardConfig,
} from './schema.ts';

/** Name the dashboard uses in configuration errors and logs. */
export const COMPONENT = 'svc-dashboard';

/** Reads and checks the configuration. Throws a ConfigError listing every problem. */
export function loadDashboardConfig(opts: {
  argv: readonly string[];
  env?: Readonly<Record<string, string | undefined>>;
}): Readonly<DashboardConfig> {
  try {
    return loadConfig<DashboardConfig>({
      component: COMPONENT,
      schema: dashboardConfigSchema,
      sources: dashboardConfigSources,
      argv: opts.argv,
      ...(opts.env === undefined ? {} : { env: opts.env }),
      rules: (raw) =>
        raw.storage === 'postgres' && raw.postgres_url === undefined
          ? [
              `postgres_url: required when storage is postgres: ${whereToSet('postgres_url', dashboardConfigSources)}`,
            ]
          : [],
    });
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(COMPONENT, err.problems.map(explain));
    throw err;
  }
}

/** Rewrites the schema's messages about the admin secret into how to set it. */
function explain(problem: string): string {
  if (problem.startsWith('admin_secret: Required value')) {
    return `admin_secret: required (it protects the admin API; the dashboard has no default secret): ${whereToSet('admin_secret', dashboardConfigSources)}`;
  }
  if (
    /admin_secret|admin-secret|SVC_DB_ADMIN_SECRET/.test(problem) &&
    /short|fewer|at least|minLength|characters/i.test(problem)
  ) {
    return `${problem.split(':')[0] ?? 'admin_secret'}: too short: use at least ${MIN_SECRET_LENGTH} random characters`;
  }
  return problem;
}
