/**
 * The GraphQL stage as the chain (routes/chain.ts) lists it. Whether an API needs it is read from
 * the definition here; the stage itself (middleware.ts: graphql-js, ws, the engine, federation) is
 * loaded when the first GraphQL API's route compiles, so a worker serving none never holds it
 * (issue 33 item 4: about 6 MiB and 140 modules of every worker).
 */
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import type * as Supergraph from '../../schemas/rules/graphql-supergraph.ts';
import { lazyModule } from '../../lib/lazy.ts';
import type { GatewayMiddleware } from '../middleware/deps.ts';

/** The federation settings' SDL (graphql-js composes a supergraph's): federated APIs only. */
const federation = lazyModule<typeof Supergraph>(
  import.meta.url,
  '../../schemas/rules/graphql-supergraph.ts',
);

/** Whether the API is GraphQL with a schema to check requests against. */
export const isGraphql = (api: GatewayApiDefinition): boolean => {
  const g = api.graphql;
  if (g?.enabled !== true) return false;
  if (g.execution_mode === 'subgraph') return federation().subgraphSdl(g) !== '';
  if (g.execution_mode === 'supergraph') return federation().supergraphSdl(g) !== '';
  return (g.schema ?? '') !== '';
};

/** See the module comment. */
export const graphql: GatewayMiddleware = {
  name: 'graphql',
  enabled: isGraphql,
  // Every request's query is read from its body: never the fast path.
  readsBody: isGraphql,
  create: async (api, deps) => (await import('./middleware.ts')).graphql.create(api, deps),
};
