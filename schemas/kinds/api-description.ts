import type { KindDefinition } from '../json-schema.ts';
import {
  ageColumn,
  contextRef,
  namespacedRef,
  pushedTo,
  readyColumn,
  reconcileStatusProperties,
} from '../common.ts';
import { EVENT_TYPE_PATTERN, KEY_APPROVALS } from '../rules/portal.ts';
import { closedObject } from '../models/builders.ts';

/** How a catalogue entry's developers authenticate (the reference's list). */
export const PORTAL_AUTH_TYPES = ['keyless', 'jwt', 'oauth', 'authToken'] as const;
/** What an APIDescription's `docs.documentation` holds. */
export const PORTAL_DOC_TYPES = ['swagger', 'swagger_custom_url', 'graphql'] as const;

/** APIDescription: an API product of the developer portal (the reference's kind of that name). */
export const apiDescriptionKind: KindDefinition = {
  kind: 'APIDescription',
  plural: 'apidescriptions',
  singular: 'apidescription',
  shortNames: ['svcapidesc'],
  description:
    "An API product of the dashboard's developer portal (mode pro): a SecurityPolicy developers get keys from, with its documentation. PortalAPICatalogues publish it. In mode ce there is no portal: the operator reports Ready=False, NotSupportedInModeCe.",
  spec: closedObject(
    { title: 'APIDescriptionSpec', description: 'The product as the portal shows it.', required: ['name'] },
    {
      name: {
        type: 'string',
        minLength: 1,
        maxLength: 253,
        description: 'Name of the product in the catalogue.',
      },
      short_description: {
        type: 'string',
        maxLength: 1024,
        description: 'One line shown in the catalogue list.',
      },
      long_description: {
        type: 'string',
        maxLength: 65536,
        description: "Shown on the product's page.",
      },
      show: {
        type: 'boolean',
        description:
          'Listed in the catalogue; absent or false (as in the reference): hidden from developers, who then cannot request keys.',
      },
      version: {
        type: 'string',
        enum: ['v2'],
        default: 'v2',
        description: "The catalogue entry's version; the reference's only value, v2.",
      },
      auth_type: {
        type: 'string',
        enum: [...PORTAL_AUTH_TYPES],
        description:
          "How developers call the product: authToken (the default: developers request keys, issued from the policy) or keyless (documentation only). jwt and oauth (the reference's) are refused: the portal issues no JWTs or OAuth clients yet.",
      },
      is_keyless: {
        type: 'boolean',
        description: "The reference's flag for auth_type keyless; true only with auth_type keyless.",
      },
      fields: {
        type: 'object',
        additionalProperties: { type: 'string', maxLength: 4096 },
        description: "Free key/value metadata shown with the product (the reference's field).",
        'x-svc-support': 'not-supported',
        'x-svc-reason': 'the portal shows no custom fields; write them in long_description',
      },
      key_approval: {
        type: 'string',
        enum: [...KEY_APPROVALS],
        description:
          "svc's field: auto issues a key as soon as a developer asks; manual (the default) waits for an admin's approval in the dashboard.",
      },
      subscribable_events: {
        type: 'array',
        maxItems: 100,
        items: { type: 'string', pattern: EVENT_TYPE_PATTERN, description: 'An event type.' },
        description:
          "svc's field: the event types developers may subscribe webhooks to, delivered by streams with a portal_webhook output naming this product.",
      },
      policyRef: {
        ...namespacedRef('the SecurityPolicy'),
        description:
          'The SecurityPolicy whose keys developers request: its policy ID is what the portal issues keys from. Missing or not Ready: Ready=False, PolicyNotFound or PolicyNotReady, until it is.',
      },
      docs: closedObject(
        { title: 'APIDocumentation', description: "The product's documentation.", required: ['doc_type'] },
        {
          doc_type: {
            type: 'string',
            enum: [...PORTAL_DOC_TYPES],
            description:
              "swagger: documentation holds an OpenAPI (or Swagger 2) document, JSON or YAML; swagger_custom_url: an http(s) URL of one, which the dashboard reads when a developer asks. graphql (the reference's) is refused: the portal renders OpenAPI documentation only.",
          },
          documentation: {
            type: 'string',
            maxLength: 1048576,
            description: 'The document, URL or SDL doc_type says.',
          },
        },
      ),
      contextRef,
    },
  ),
  status: closedObject(
    { title: 'APIDescriptionStatus', description: 'Observed state of the product, written by the operator.' },
    {
      id: { type: 'string', description: "The product's ID in the dashboard's portal." },
      policyId: {
        type: 'string',
        description: 'The ID of the SecurityPolicy policyRef names, as the portal holds it.',
      },
      pushedTo,
      ...reconcileStatusProperties,
    },
  ),
  printerColumns: [
    { name: 'Name', type: 'string', jsonPath: '.spec.name', description: 'Name in the catalogue.' },
    { name: 'Auth', type: 'string', jsonPath: '.spec.auth_type', description: 'How developers call it.' },
    {
      name: 'Policy',
      type: 'string',
      jsonPath: '.spec.policyRef.name',
      description: 'The SecurityPolicy keys are issued from.',
    },
    readyColumn,
    ageColumn,
  ],
};
