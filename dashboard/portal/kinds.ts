/**
 * The store kinds of the developer portal (docs/portal.md): documents of an organisation like
 * the dashboard's others, listed here so that deleting the portal's folder deletes them too.
 */
export const PORTAL_KINDS = [
  'portal-config',
  'portal-products',
  'portal-catalogues',
  // Lookup: SHA-256 of `<org>\n<e-mail>`, so an e-mail is unique per organisation.
  'portal-developers',
  // Lookup: SHA-256 of the session token.
  'portal-sessions',
  'portal-key-requests',
  'portal-subscriptions',
] as const;
