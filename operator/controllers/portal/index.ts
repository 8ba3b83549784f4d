/**
 * The developer portal's kinds (APIDescription, PortalAPICatalogue, PortalConfig): reconciled
 * into the dashboard's portal admin API in mode pro (docs/portal.md); `NotSupportedInModeCe`
 * through a gateway. main.ts adds these controllers in one line.
 */
import type { ControllerSpec } from '../../../lib/k8s/manager.ts';
import type { ControllerEnv } from '../env.ts';
import { apiDescriptionController } from './api-description.ts';
import { portalAPICatalogueController } from './catalogue.ts';
import { portalConfigController } from './config.ts';

/** The three portal controllers. */
export function portalControllers(env: ControllerEnv): ControllerSpec[] {
  return [apiDescriptionController(env), portalAPICatalogueController(env), portalConfigController(env)];
}
