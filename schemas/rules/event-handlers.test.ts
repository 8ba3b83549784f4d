import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkClassicApi } from './api-definition.ts';
import type { ClassicApiInput } from './read.ts';
import { compileBodyTemplate, eventNameOf, readEventHandlers } from './event-handlers.ts';
import type { FieldProblem } from './field-problem.ts';

/** A keyless API with `events` as its event handlers. */
const api = (events: unknown): ClassicApiInput => ({
  name: 'a',
  use_keyless: true,
  proxy: { listen_path: '/a/', target_url: 'http://u:1' },
  event_handlers: { events },
});
const hook = (meta: Record<string, unknown>): unknown => ({
  handler_name: 'eh_web_hook_handler',
  handler_meta: meta,
});
const log = (meta?: unknown): unknown => ({
  handler_name: 'eh_log_handler',
  ...(meta === undefined ? {} : { handler_meta: meta }),
});
const URL_OK = 'https://alerts.example.com/hook?team=api';
const META = 'event_handlers.events.QuotaExceeded[0].handler_meta';

interface Case {
  name: string;
  events: unknown;
  /** The exact problems; omitted: none. */
  want?: FieldProblem[];
  /** Or: the path and type of each problem, and a part of its message. */
  like?: [path: string, type: FieldProblem['type'], part: string][];
}

const cases: Case[] = [
  { name: 'a log handler', events: { AuthFailure: [log()] } },
  { name: 'a log handler with a prefix', events: { AuthFailure: [log({ prefix: 'orders' })] } },
  { name: 'a webhook with its URL only', events: { QuotaExceeded: [hook({ target_path: URL_OK })] } },
  {
    name: 'a webhook with every setting',
    events: {
      QuotaExceeded: [
        hook({
          target_path: 'http://hooks.default.svc:8080/events',
          method: 'patch',
          header_map: { 'X-Team': 'api', Authorization: 'Bearer t' },
          body_template:
            '{"e":"{{.event}}","m":"{{ .Meta.Message }}","k":"{{.Meta.Key}}","t":"{{.TimeStamp}}"}',
          event_timeout: 60,
          name: 'alerts',
          id: '5f1',
          disabled: false,
        }),
      ],
    },
  },
  {
    name: 'the reference spelling RatelimitExceeded',
    events: { RatelimitExceeded: [hook({ target_path: URL_OK })] },
  },
  {
    name: 'empty lists of any event, as exported definitions have them',
    events: { QuotaExceeded: [], BreakerTriggered: [], HostDown: [] },
  },
  {
    name: 'a disabled handler is skipped, unchecked',
    events: { QuotaExceeded: [hook({ disabled: true, target_path: 'not checked' })] },
  },
  {
    name: 'an empty template_path asks for nothing',
    events: { QuotaExceeded: [hook({ target_path: URL_OK, template_path: '' })] },
  },
  {
    name: 'a webhook needs a URL',
    events: { QuotaExceeded: [hook({ method: 'POST' })] },
    want: [
      {
        path: `${META}.target_path`,
        type: 'Required',
        message: 'set the URL the webhook delivers to, such as https://alerts.example.com/gateway-events',
      },
    ],
  },
  {
    name: 'a webhook without handler_meta needs a URL too',
    events: { QuotaExceeded: [{ handler_name: 'eh_web_hook_handler' }] },
    like: [[`${META}.target_path`, 'Required', 'set the URL']],
  },
  {
    name: 'a URL that is not absolute',
    events: { QuotaExceeded: [hook({ target_path: 'alerts.example.com/hook' })] },
    want: [
      {
        path: `${META}.target_path`,
        type: 'Invalid',
        message:
          '"alerts.example.com/hook" is not an absolute URL: write the scheme and host, such as https://alerts.example.com/gateway-events',
      },
    ],
  },
  {
    name: 'a URL that is not http(s)',
    events: { QuotaExceeded: [hook({ target_path: 'ftp://files.example.com/in' })] },
    like: [[`${META}.target_path`, 'Invalid', 'delivered over http or https']],
  },
  {
    name: 'a URL with credentials (not repeated in the message)',
    events: { QuotaExceeded: [hook({ target_path: 'https://u:s3cret@alerts.example.com/' })] },
    want: [
      {
        path: `${META}.target_path`,
        type: 'Invalid',
        message:
          'the URL carries credentials: remove them from it and send them in header_map (Authorization)',
      },
    ],
  },
  {
    name: 'a method outside the list',
    events: { QuotaExceeded: [hook({ target_path: URL_OK, method: 'CONNECT' })] },
    want: [
      {
        path: `${META}.method`,
        type: 'NotSupported',
        message: '"CONNECT": use GET, POST, PUT, PATCH, DELETE (default POST)',
      },
    ],
  },
  {
    name: 'header_map: names, framing headers, values',
    events: {
      QuotaExceeded: [
        hook({
          target_path: URL_OK,
          header_map: { 'Bad Name': 'x', 'Content-Length': '3', 'X-Num': 5, 'X-Split': 'a\r\nX-Evil: 1' },
        }),
      ],
    },
    want: [
      { path: `${META}.header_map["Bad Name"]`, type: 'Invalid', message: '"Bad Name" is not a header name' },
      {
        path: `${META}.header_map.Content-Length`,
        type: 'Forbidden',
        message: 'the gateway sets Content-Length itself: remove it',
      },
      { path: `${META}.header_map.X-Num`, type: 'Invalid', message: 'write the value as a string' },
      {
        path: `${META}.header_map.X-Split`,
        type: 'Invalid',
        message: 'a header value can not hold line breaks',
      },
    ],
  },
  {
    name: 'header_map that is not an object',
    events: { QuotaExceeded: [hook({ target_path: URL_OK, header_map: ['X-A: 1'] })] },
    like: [[`${META}.header_map`, 'Invalid', 'write an object']],
  },
  {
    name: 'template_path (a file) is refused, pointing to body_template',
    events: {
      QuotaExceeded: [hook({ target_path: URL_OK, template_path: 'templates/default_webhook.json' })],
    },
    like: [[`${META}.template_path`, 'NotSupported', 'write the template inline in body_template']],
  },
  {
    name: 'a body template with an unknown placeholder',
    events: {
      QuotaExceeded: [hook({ target_path: URL_OK, body_template: '{"r": "{{.Meta.OriginatingRequest}}"}' })],
    },
    like: [
      [
        `${META}.body_template`,
        'Invalid',
        '"{{.Meta.OriginatingRequest}}" is not a placeholder of the event: use {{.event}}',
      ],
    ],
  },
  {
    name: 'a body template with Go template actions',
    events: { QuotaExceeded: [hook({ target_path: URL_OK, body_template: '{{if .Message}}x{{end}}' })] },
    like: [[`${META}.body_template`, 'Invalid', 'conditions, pipelines and functions are not supported']],
  },
  {
    name: 'a body template with an unclosed placeholder',
    events: { QuotaExceeded: [hook({ target_path: URL_OK, body_template: 'at {{.path' })] },
    want: [
      {
        path: `${META}.body_template`,
        type: 'Invalid',
        message: 'the "{{" at character 4 is not closed: write placeholders such as {{.event}}',
      },
    ],
  },
  ...[-1, 1.5, '10'].map((t): Case => ({
    name: `event_timeout ${JSON.stringify(t)}`,
    events: { QuotaExceeded: [hook({ target_path: URL_OK, event_timeout: t })] },
    like: [[`${META}.event_timeout`, 'Invalid', 'write the cooldown in whole seconds']],
  })),
  {
    name: 'an unknown webhook setting',
    events: { QuotaExceeded: [hook({ target_path: URL_OK, retries: 5 })] },
    want: [
      {
        path: `${META}.retries`,
        type: 'Invalid',
        message:
          'unknown setting of eh_web_hook_handler: it reads target_path, method, header_map, body_template, template_path, event_timeout, name, id, disabled',
      },
    ],
  },
  {
    name: 'log handler settings',
    events: { QuotaExceeded: [log({ prefix: 3, target_path: URL_OK })] },
    want: [
      {
        path: `${META}.target_path`,
        type: 'Invalid',
        message: 'unknown setting of eh_log_handler: it reads prefix, disabled',
      },
      { path: `${META}.prefix`, type: 'Invalid', message: 'write the prefix as a string' },
    ],
  },
  {
    name: 'an event the gateway does not fire, with handlers',
    events: { BreakerTriggered: [log()] },
    want: [
      {
        path: 'event_handlers.events.BreakerTriggered',
        type: 'NotSupported',
        message:
          '"BreakerTriggered" is not an event this gateway fires: use RateLimitExceeded, QuotaExceeded, TriggerExceeded, AuthFailure or KeyExpired (RatelimitExceeded is accepted for RateLimitExceeded)',
      },
    ],
  },
  {
    name: 'names are compared exactly (the alias is the only other spelling)',
    events: { quotaexceeded: [log()] },
    like: [['event_handlers.events.quotaexceeded', 'NotSupported', 'is not an event this gateway fires']],
  },
  {
    name: 'every handler of every event is checked',
    events: {
      QuotaExceeded: [log(), hook({})],
      KeyExpired: [hook({ target_path: URL_OK }), hook({ target_path: URL_OK, method: 'TRACE' })],
    },
    like: [
      ['event_handlers.events.QuotaExceeded[1].handler_meta.target_path', 'Required', 'set the URL'],
      ['event_handlers.events.KeyExpired[1].handler_meta.method', 'NotSupported', '"TRACE"'],
    ],
  },
  {
    name: 'wrong shapes are left to the schema',
    events: { QuotaExceeded: [null, 'x', { handler_name: 'eh_other' }, hook(5 as never)], KeyExpired: 'x' },
  },
];

describe('event handler rules (through checkClassicApi)', () => {
  for (const c of cases) {
    test(c.name, () => {
      const got = checkClassicApi(api(c.events));
      if (c.like !== undefined) {
        assert.equal(got.length, c.like.length, JSON.stringify(got, null, 2));
        c.like.forEach(([path, type, part], i) => {
          const p = got[i];
          assert.ok(p !== undefined);
          assert.equal(p.path, path);
          assert.equal(p.type, type);
          assert.ok(p.message.includes(part), p.message);
        });
      } else {
        assert.deepEqual(got, c.want ?? []);
      }
    });
  }
});

describe('readEventHandlers', () => {
  test('settings with their defaults; the alias joins the event it stands for', () => {
    const read = readEventHandlers(
      api({
        RateLimitExceeded: [log()],
        RatelimitExceeded: [hook({ target_path: ` ${URL_OK} ` })],
      }),
    );
    assert.deepEqual(read.problems, []);
    assert.deepEqual([...read.handlers.keys()], ['RateLimitExceeded']);
    assert.deepEqual(read.handlers.get('RateLimitExceeded'), [
      { kind: 'log', prefix: '' },
      {
        kind: 'webhook',
        name: '',
        method: 'POST',
        url: URL_OK,
        headers: {},
        body: undefined,
        cooldownSeconds: 0,
      },
    ]);
  });

  test('eventNameOf', () => {
    assert.equal(eventNameOf('QuotaExceeded'), 'QuotaExceeded');
    assert.equal(eventNameOf('RatelimitExceeded'), 'RateLimitExceeded');
    assert.equal(eventNameOf('toString'), undefined);
    assert.equal(eventNameOf('HostDown'), undefined);
  });
});

describe('compileBodyTemplate', () => {
  const cases: [template: string, want: ReturnType<typeof compileBodyTemplate>][] = [
    ['', []],
    ['plain text', ['plain text']],
    ['{{.event}}', [{ field: 'event' }]],
    [
      '{"e": "{{ .Type }}", "o": "{{.Meta.Origin}}", "a": "{{.APIID}}", "k":"{{.key}}"}',
      [
        '{"e": "',
        { field: 'event' },
        '", "o": "',
        { field: 'origin' },
        '", "a": "',
        { field: 'api_id' },
        '", "k":"',
        { field: 'key' },
        '"}',
      ],
    ],
    ['{{.api_id}}{{.timestamp}}{{.Path}}', [{ field: 'api_id' }, { field: 'timestamp' }, { field: 'path' }]],
    ['}} alone is text', ['}} alone is text']],
  ];
  for (const [template, want] of cases) {
    test(JSON.stringify(template), () => {
      assert.deepEqual(compileBodyTemplate(template), want);
    });
  }
});
