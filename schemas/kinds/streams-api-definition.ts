import type { KindDefinition } from '../json-schema.ts';
import { contextRef } from '../common.ts';
import { configMapKeyRef, oasApiStatus, oasPrinterColumns } from './oas-api-definition.ts';
import { closedObject } from '../models/builders.ts';

/** SvcStreamsApiDefinition: an asynchronous API (streams) described by an OAS document. */
export const streamsApiDefinitionKind: KindDefinition = {
  kind: 'SvcStreamsApiDefinition',
  plural: 'svcstreamsapidefinitions',
  singular: 'svcstreamsapidefinition',
  shortNames: ['svcstreams'],
  description:
    'An asynchronous API: an OpenAPI 3.x document with `x-svc-api-gateway` and `x-svc-streaming` (inputs, processors, outputs), kept in a ConfigMap. Needs streaming enabled on the gateway.',
  spec: closedObject(
    {
      title: 'SvcStreamsApiDefinitionSpec',
      description: 'Desired state of the streams API.',
      required: ['svcStreams'],
    },
    {
      contextRef,
      svcStreams: closedObject(
        {
          title: 'SvcStreamsRef',
          description: 'Where the streams OAS document is.',
          required: ['configmapRef'],
        },
        {
          configmapRef: configMapKeyRef('the streams OAS document (at most 1 MiB)'),
        },
      ),
    },
  ),
  // Reconciled as an SvcOasApiDefinition is: the same status (the ConfigMap's hash included).
  status: oasApiStatus(),
  printerColumns: oasPrinterColumns(),
};
