import { test } from 'node:test';
import assert from 'node:assert/strict';
import { columns, explanationTable, type ExplanationView } from './explain-print.ts';

const refused: ExplanationView = {
  matched: {
    api_id: 'a1',
    name: 'orders',
    listen_path: '/orders/',
    why: 'path /orders/1 is under /orders/ (any host)',
  },
  steps: [
    { middleware: 'ip-block-list', stage: 'api-wide checks', decision: 'passed', details: {} },
    {
      middleware: 'auth-token',
      stage: 'authentication',
      decision: 'passed',
      details: { identity: 'k1', policies: ['p1', 'p2'] },
    },
    {
      middleware: 'rate-limit',
      stage: 'limits',
      decision: 'passed',
      details: {
        counters: [
          { kind: 'rate', name: 'rl:k1', limit: 10, windowSeconds: 1, remaining: 4 },
          { kind: 'quota', name: 'q:k1', used: 3 },
        ],
      },
    },
    {
      middleware: 'quota',
      stage: 'limits',
      decision: 'refused',
      status: 403,
      message: 'Quota exceeded',
      details: { remaining: 0, events: [{ event: 'QuotaExceeded' }] },
    },
  ],
  session: {
    key_id: 'k1',
    apply_policies: ['p1', 'p2'],
    merged: { rate: 10, per: 1, quota_max: 3, access_rights: { a1: {} } },
    policies: [
      { id: 'p1', rate: 1000, per: 60, quota_max: 3, access_rights: { a1: {} } },
      { id: 'p2', rate: 10, per: 1, quota_max: 2, access_rights: { a1: {} } },
    ],
  },
  answer: { status: 403, body: '{"error":"Quota exceeded"}' },
};

const cases: { name: string; in: ExplanationView; lines: RegExp[] }[] = [
  {
    name: 'a refusal: the match, one row per step in order, the refusing step named',
    in: refused,
    lines: [
      /^API: {6}orders \(a1\) at \/orders\/$/m,
      /^STAGE +MIDDLEWARE +DECISION +DETAILS$/m,
      /^api-wide checks +ip-block-list +passed$/m,
      /^authentication +auth-token +passed +identity k1; policies p1, p2$/m,
      /^limits +rate-limit +passed +rate rl:k1: 10 per 1s, remaining 4; quota q:k1: used 3$/m,
      /^limits +quota +refused 403 Quota exceeded +remaining 0; event QuotaExceeded$/m,
      /^Answer: {3}403 \{"error":"Quota exceeded"\}$/m,
      /^By: {7}quota \(limits\)$/m,
    ],
  },
  {
    name: 'the policies with their parts and the merged row',
    in: refused,
    lines: [
      /^ +POLICY +RATE +PER +QUOTA_MAX +THROTTLE_INTERVAL +THROTTLE_RETRY_LIMIT +APIS$/m,
      /^ +p1 +1000 +60 +3 +- +- +a1$/m,
      /^ +p2 +10 +1 +2 +- +- +a1$/m,
      /^ +merged +10 +1 +3 +- +- +a1$/m,
    ],
  },
  {
    name: 'a request passed: where it would be proxied, no refusing step',
    in: {
      matched: refused.matched,
      steps: [],
      answer: { status: 200, body: '', proxied_to: 'GET http://u/1' },
    },
    lines: [/^Answer: {3}proxied to GET http:\/\/u\/1 \(the upstream's answer\)$/m, /^(?![\s\S]*By:)/],
  },
  {
    name: 'an internal hop: the next API (its policy in its name) under the match, the hop as a row, the refusing API named',
    in: {
      matched: {
        api_id: 'd1',
        name: 'ns/edge http://shop/api',
        listen_path: '/api',
        why: 'path /api/x is under /api',
      },
      steps: [
        {
          middleware: 'url-rewrites',
          stage: 'before upstream',
          decision: 'passed',
          details: {},
          api_id: 'd1',
        },
        {
          middleware: 'internal-target',
          stage: 'upstream',
          decision: 'passed',
          details: {
            target: 'GET svc://r1/x',
            to: { api_id: 'r1', name: 'ns/edge ns/shop rules[1] with SvcRoutePolicy ns/auth' },
            request: 'GET /api/x',
          },
          api_id: 'd1',
        },
        {
          middleware: 'auth-token',
          stage: 'authentication',
          decision: 'refused',
          status: 401,
          message: 'Authorization field missing',
          details: {},
          api_id: 'r1',
        },
      ],
      hops: [
        {
          from: 'd1',
          target: 'GET svc://r1/x',
          method: 'GET',
          path: '/api/x',
          matched: {
            api_id: 'r1',
            name: 'ns/edge ns/shop rules[1] with SvcRoutePolicy ns/auth',
            listen_path: '/api',
            why: 'internal target',
          },
        },
      ],
      answer: { status: 401, body: '{"error":"Authorization field missing"}' },
    },
    lines: [
      /^API: {6}ns\/edge http:\/\/shop\/api \(d1\) at \/api$/m,
      /^Hop 1: {4}GET svc:\/\/r1\/x -> ns\/edge ns\/shop rules\[1\] with SvcRoutePolicy ns\/auth \(r1\) at \/api$/m,
      /^ {10}the request goes on as GET \/api\/x through that API's own chain$/m,
      /^upstream +internal-target +passed +GET svc:\/\/r1\/x -> r1; as GET \/api\/x$/m,
      /^authentication +auth-token +refused 401 Authorization field missing$/m,
      /^Answer: {3}401 \{"error":"Authorization field missing"\}$/m,
      /^By: {7}auth-token \(authentication\) of ns\/edge ns\/shop rules\[1\] with SvcRoutePolicy ns\/auth \(r1\)$/m,
    ],
  },
  {
    name: 'no API matches',
    in: { matched: null, steps: [], answer: { status: 404, body: '{"error":"none"}' } },
    lines: [/^API: {6}none matches this host and path$/m, /^Answer: {3}404 /m],
  },
];

for (const c of cases) {
  test(c.name, () => {
    const text = explanationTable(c.in);
    for (const l of c.lines) assert.match(text, l);
  });
}

test('columns: padded to the widest cell, the last column not padded', () => {
  assert.equal(
    columns([
      ['a', 'bb', 'c'],
      ['aaa', 'b', 'cc'],
    ]),
    'a    bb  c\naaa  b   cc',
  );
});
