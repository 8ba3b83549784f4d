import type { JsonSchema, KindDefinition } from '../json-schema.ts';
import { ageColumn, contextRef, pushedTo, readyColumn, reconcileStatusProperties } from '../common.ts';
import { DEVELOPER_APPROVALS, SESSION_LIFETIME_S } from '../rules/portal.ts';
import { closedObject, strings } from '../models/builders.ts';

/** Why svc refuses dynamic client registration: written once, shown in the refusal and the docs. */
export const DCR_REASON =
  'dynamic client registration registers an OAuth client at an OpenID provider for each key request; svc does not register clients at a provider yet, so enable_dcr would be stored and never done. Issue keys from the policy instead (auth_type authToken), or create OAuth clients in the dashboard';

/** Why svc refuses the portal's mail settings. */
const MAIL_REASON = 'the dashboard sends no mail yet';

const notYet = (reason: string, schema: JsonSchema): JsonSchema => ({
  ...schema,
  'x-svc-support': 'not-supported',
  'x-svc-reason': reason,
});

const emailTemplate: JsonSchema = closedObject(
  { title: 'PortalEmailTemplate', description: 'One mail the portal sends.' },
  {
    enabled: { type: 'boolean', description: 'Whether the mail is sent.' },
    subject: { type: 'string', description: 'Subject line.' },
    body: { type: 'string', description: 'Body text.' },
    sign_off: { type: 'string', description: 'Sign-off line.' },
    hide_token_data: { type: 'boolean', description: 'Leave the key out of the mail.' },
  },
);

/** The reference's DCR settings, kept in the schema so that a manifest using them is refused by name. */
const dcrOptions: JsonSchema = closedObject(
  {
    title: 'PortalDcrOptions',
    description: 'How keys would be registered as OAuth clients at an OpenID provider (with enable_dcr).',
  },
  {
    idp_host: { type: 'string', description: "The OpenID provider's base URL." },
    registration_endpoint: {
      type: 'string',
      description: "The provider's registration_endpoint (from its /.well-known/openid-configuration).",
    },
    access_token: {
      type: 'string',
      description: 'A bearer token for the registration endpoint (an initial access token).',
    },
    provider: {
      type: 'string',
      enum: ['gluu', 'keycloak', 'okta'],
      description: "Provider-specific registration (the reference's list).",
    },
    grant_types: {
      type: 'array',
      items: { type: 'string', enum: ['client_credentials', 'authorization_code', 'refresh_token'] },
      description: 'Grant types the registered clients may use.',
    },
    response_types: {
      type: 'array',
      items: { type: 'string', enum: ['code', 'token'] },
      description: 'Response types the registered clients may use.',
    },
    token_endpoint_auth_method: {
      type: 'string',
      enum: ['client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt', 'none'],
      description: 'How the registered clients authenticate at the token endpoint.',
    },
  },
);

/** PortalConfig: the developer portal's settings of an organisation. */
export const portalConfigKind: KindDefinition = {
  kind: 'PortalConfig',
  plural: 'portalconfigs',
  singular: 'portalconfig',
  shortNames: ['svcportalconfig'],
  description:
    "The settings of an organisation's developer portal in the dashboard (mode pro). One per organisation: a second one for the same dashboard organisation gets Ready=False, Conflict. Settings svc does not enforce yet are refused at admission by name. In mode ce there is no portal: Ready=False, NotSupportedInModeCe.",
  spec: closedObject(
    { title: 'PortalConfigSpec', description: "The portal's settings; {} keeps the dashboard's defaults." },
    {
      disable_signup: {
        type: 'boolean',
        description: 'Developers cannot sign up by themselves (accounts are made by an admin).',
      },
      developer_approval: {
        type: 'string',
        enum: [...DEVELOPER_APPROVALS],
        description:
          "svc's field: auto makes a developer who signs up active at once; manual (the dashboard's default) keeps it pending until an admin makes it active.",
      },
      session_lifetime_s: {
        type: 'integer',
        minimum: SESSION_LIFETIME_S.min,
        maximum: SESSION_LIFETIME_S.max,
        description: `svc's field: how long a developer's session lasts, in seconds (the dashboard's default: ${String(SESSION_LIFETIME_S.default)}).`,
      },
      require_key_approval: notYet(
        'key approval is set per product in svc: key_approval on each APIDescription (manual waits for an admin)',
        {
          type: 'boolean',
          description:
            "Developers' key requests wait for an admin's approval (the reference's portal-wide switch).",
        },
      ),
      signup_fields: notYet(
        'the portal asks no extra sign-up fields yet',
        strings('Extra fields asked at sign-up.'),
      ),
      key_request_fields: notYet(
        'the portal asks no extra key request fields yet',
        strings('Extra fields asked with a key request.'),
      ),
      secure_key_approval: notYet('keys are shown to the developer once, when issued', {
        type: 'boolean',
        description: 'An approved key is shown through a one-time link rather than at once.',
      }),
      redirect_on_key_request: notYet('the portal does not redirect after a key request', {
        type: 'boolean',
        description: 'Redirect the developer to redirect_to after a key request.',
      }),
      redirect_to: notYet('the portal does not redirect after a key request', {
        type: 'string',
        description: 'Where to redirect after a key request.',
      }),
      enable_multi_selection: notYet('a key request is for one product', {
        type: 'boolean',
        description: 'One key request for several products.',
      }),
      disable_login: notYet('the portal always has its sign-in', {
        type: 'boolean',
        description: 'No sign-in page.',
      }),
      disable_auto_login: notYet('the portal does not sign a developer in at sign-up', {
        type: 'boolean',
        description: 'Do not sign developers in when they sign up.',
      }),
      catalogue_login_only: notYet('the catalogue is shown to every visitor', {
        type: 'boolean',
        description: 'Show the catalogue to signed-in developers only.',
      }),
      oauth_usage_limit: notYet('the portal issues no OAuth clients yet', {
        type: 'integer',
        description: 'How many OAuth clients a developer may hold per product.',
      }),
      email: notYet(MAIL_REASON, { type: 'string', description: "The portal's notification address." }),
      mail_options: notYet(
        MAIL_REASON,
        closedObject(
          { title: 'PortalMailOptions', description: "The portal's mails." },
          {
            mail_from_name: { type: 'string', description: 'Sender name.' },
            mail_from_email: { type: 'string', description: 'Sender address.' },
            email_copy: closedObject(
              { title: 'PortalEmailCopy', description: 'The text of each mail.' },
              {
                welcome_email: emailTemplate,
                key_email: emailTemplate,
                reset_password_email: emailTemplate,
              },
            ),
          },
        ),
      ),
      enable_dcr: notYet(DCR_REASON, {
        type: 'boolean',
        description:
          'Register an OAuth client at an OpenID provider for each approved key request (dcr_options).',
      }),
      dcr_options: { ...dcrOptions },
      override: notYet('the portal has one set of settings per organisation', {
        type: 'boolean',
        description: "Override the catalogue's settings (the reference's per-catalogue form).",
      }),
      contextRef,
    },
  ),
  status: closedObject(
    { title: 'PortalConfigStatus', description: 'Observed state of the settings, written by the operator.' },
    {
      id: { type: 'string', description: "The settings' ID in the dashboard's portal." },
      pushedTo,
      ...reconcileStatusProperties,
    },
  ),
  printerColumns: [
    {
      name: 'SignupDisabled',
      type: 'boolean',
      jsonPath: '.spec.disable_signup',
      description: 'Whether sign-up is disabled.',
    },
    {
      name: 'DeveloperApproval',
      type: 'string',
      jsonPath: '.spec.developer_approval',
      description: 'Whether new developers wait for approval.',
    },
    readyColumn,
    ageColumn,
  ],
};
