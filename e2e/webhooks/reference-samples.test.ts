/**
 * A migration from the reference operator, through a real API server: manifests written here in
 * the reference's own naming (group tyk.tyk.io, Tyk kinds), one for each class of feature its
 * published samples use (tools/reference-samples/, docs/compatibility.md "Reference samples"),
 * renamed as tools/reference-samples/measure.ts renames them and applied file by file with
 * kubectl through the CRDs and the real webhook server. Every API is admitted, and what the API
 * server stored, translated by the operator, passes the gateway's check of a management write
 * (the measure's verdict: served). The features svc does not serve are refused, by name.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ControlPlane } from '../harness/control-plane.ts';
import { fromTemplate, gatewayVerdict, graphOf, renameToSvc } from '../../tools/reference-samples/measure.ts';
import { admitted, apply, getObject, startWebhooksSuite, type WebhooksSuite } from './helpers.ts';
import { api, files, policy, proxy, UDG_SDL, type Manifest } from './reference-samples.files.ts';

let cp: ControlPlane;
let suite: WebhooksSuite;

before(async () => {
  suite = await startWebhooksSuite('reference-samples-e2e');
  cp = suite.cp;
});

after(() => suite.stop());

describe('sample files in the reference naming, renamed, through a real API server', () => {
  for (const [name, docs] of Object.entries(files)) {
    test(`${name}: admitted, and what is stored is served`, async () => {
      const renamed = docs.map((d) => renameToSvc(d) as Manifest);
      admitted(await apply(cp, renamed));
      const apis = renamed.filter((d) => d.kind === 'ApiDefinition');
      const stored = await Promise.all(
        apis.map((d) => getObject(cp, 'apidefinition', (d.metadata as { name: string }).name)),
      );
      for (const obj of stored) {
        const metadata = obj.metadata as { name: string; labels?: Record<string, string> };
        const template = metadata.labels?.template === 'true';
        // A supergraph naming its subgraph APIs: composed from them as the operator composes it.
        assert.deepEqual(
          gatewayVerdict(template ? fromTemplate(obj) : obj, graphOf(obj, stored)),
          [],
          `the gateway refuses ${metadata.name}`,
        );
      }
    });
  }
});

describe('what svc does not serve is refused by name', () => {
  const refusals: [string, Manifest, string][] = [
    [
      'an analytics plugin',
      api('rs-analytics', {
        use_keyless: true,
        proxy: proxy('/rs-analytics'),
        analytics_plugin: { enable: true, func_name: 'Mask', plugin_path: '/plugins/mask.so' },
      }),
      'spec.analytics_plugin: not supported by svc yet',
    ],
    [
      'a graph_ref on an API that is no subgraph or supergraph (it names a SubGraph or SuperGraph)',
      api('rs-subgraph', {
        use_keyless: true,
        proxy: proxy('/rs-subgraph'),
        graphql: { enabled: true, execution_mode: 'proxyOnly', schema: UDG_SDL, graph_ref: 'users' },
      }),
      'spec.graphql.graph_ref: Forbidden: names a SubGraph (execution_mode subgraph) or a SuperGraph (execution_mode supergraph)',
    ],
    [
      'an OAuth2 grant svc does not serve (refresh tokens)',
      api('rs-oauth-refresh', {
        use_oauth2: true,
        oauth_meta: { allowed_access_types: ['client_credentials', 'refresh_token'] },
        proxy: proxy('/rs-oauth-refresh'),
      }),
      'spec.oauth_meta.allowed_access_types[1]',
    ],
    [
      'the earlier context beside a contextRef naming another OperatorContext',
      api('rs-two-contexts', {
        use_keyless: true,
        proxy: proxy('/rs-two-contexts'),
        context: { name: 'rs-context', namespace: 'default' },
        contextRef: { name: 'rs-other-context', namespace: 'default' },
      }),
      "spec.context: Forbidden: the reference's earlier name of contextRef names OperatorContext default/rs-context, but contextRef names default/rs-other-context: keep contextRef alone",
    ],
    [
      'an internal API with a listen path that is no path',
      api('rs-internal-bad', { use_keyless: true, internal: true, proxy: proxy('rs-internal-bad') }),
      // The CRD's pattern answers before the webhook.
      'spec.proxy.listen_path: Invalid value: "rs-internal-bad"',
    ],
    [
      'subgraphs_refs naming a field a subgraph reference has not',
      api('rs-fed-bad', {
        use_keyless: true,
        graphql: {
          enabled: true,
          execution_mode: 'supergraph',
          supergraph: { subgraphs_refs: [{ name: 'rs-fed-users', url: 'http://users' }] },
        },
        proxy: { target_url: '', listen_path: '/rs-fed-bad/' },
      }),
      'spec.graphql.supergraph.subgraphs_refs[0].url: Forbidden: not a field of a subgraph reference (name, namespace, headers)',
    ],
    [
      'a plugin bundle',
      api('rs-bundle', {
        use_keyless: true,
        proxy: proxy('/rs-bundle'),
        custom_middleware_bundle: 'bundle.zip',
      }),
      'spec.custom_middleware_bundle: not supported by svc yet',
    ],
  ];
  for (const [name, doc, message] of refusals) {
    test(name, async () => {
      const r = await apply(cp, renameToSvc(doc) as Manifest);
      assert.notEqual(r.code, 0, `expected a refusal, kubectl said:\n${r.stdout}`);
      assert.ok(r.stderr.includes(message), `expected ${JSON.stringify(message)} in:\n${r.stderr}`);
    });
  }
});

describe("the reference's earlier fields context and fromSecret (07-operator-context/pro.yaml)", () => {
  test('moved to contextRef and secretRef by the mutating webhook, with warnings kubectl prints', async () => {
    const docs = [
      {
        apiVersion: 'tyk.tyk.io/v1alpha1',
        kind: 'OperatorContext',
        metadata: { name: 'rs-context' },
        spec: { fromSecret: { namespace: 'default', name: 'rs-context-conf' } },
      },
      api('rs-with-context', {
        use_keyless: true,
        proxy: proxy('/rs-with-context'),
        context: { name: 'rs-context', namespace: 'default' },
      }),
    ].map((d) => renameToSvc(d) as Manifest);
    const r = await apply(cp, docs);
    admitted(r);
    assert.match(
      r.stderr,
      /Warning: spec\.fromSecret is the reference operator's earlier name of spec\.secretRef: moved to spec\.secretRef \(Secret default\/rs-context-conf\)/,
    );
    assert.match(
      r.stderr,
      /Warning: spec\.context is the reference operator's earlier name of spec\.contextRef: moved to spec\.contextRef \(OperatorContext default\/rs-context\)/,
    );
    const context = (await getObject(cp, 'operatorcontext', 'rs-context')).spec as Manifest;
    assert.equal(context.fromSecret, undefined);
    assert.deepEqual(context.secretRef, { name: 'rs-context-conf', namespace: 'default' });
    const stored = await getObject(cp, 'apidefinition', 'rs-with-context');
    const spec = stored.spec as Manifest;
    assert.equal(spec.context, undefined);
    assert.deepEqual(spec.contextRef, { name: 'rs-context', namespace: 'default' });
    assert.deepEqual(gatewayVerdict(stored), []);
  });

  test('on a SecurityPolicy too, as the reference had it there', async () => {
    const doc = renameToSvc({
      ...policy('rs-context-policy', []),
      spec: { ...(policy('rs-context-policy', []).spec as Manifest), context: { name: 'rs-context' } },
    }) as Manifest;
    const r = await apply(cp, doc);
    admitted(r);
    assert.match(r.stderr, /Warning: spec\.context is the reference operator's earlier name/);
    const spec = (await getObject(cp, 'securitypolicy', 'rs-context-policy')).spec as Manifest;
    assert.equal(spec.context, undefined);
    assert.deepEqual(spec.contextRef, { name: 'rs-context', namespace: 'default' });
  });
});
