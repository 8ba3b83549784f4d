/**
 * Traffic analytics between gateways in mode pro and the dashboard (`POST /system/analytics`):
 * the reasons a record names for a refusal, one list for the gateway that writes them
 * (gateway/analytics/) and the dashboard that counts them (dashboard/analytics/).
 */

/**
 * Why the gateway refused a request: authentication (401, or 403 for an unknown or inactive
 * key), access rights or allowed URLs (403), the IP lists (403), a rate limit (429), a quota
 * (403), anything else the gateway refused itself (a body too large, a plugin, a version).
 */
export const REFUSAL_REASONS = ['auth', 'access', 'ip', 'rate_limit', 'quota', 'other'] as const;
/** One of REFUSAL_REASONS. */
export type RefusalReason = (typeof REFUSAL_REASONS)[number];
