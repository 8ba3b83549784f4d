import { test } from 'node:test';
import assert from 'node:assert/strict';
import { servedAddress } from './served.ts';

test('the address an API is served on', () => {
  const cases: { name: string; url: string; api: Parameters<typeof servedAddress>[1]; want: string }[] = [
    {
      name: 'on the gateway port',
      url: 'http://gw.svc:8080',
      api: { proxy: { listen_path: '/a/' } },
      want: 'http://gw.svc:8080/a/',
    },
    {
      name: 'its own listen_port, not the gateway port',
      url: 'http://gw.svc:8080',
      api: { listen_port: 80, protocol: 'http', proxy: { listen_path: '/a' } },
      want: 'http://gw.svc:80/a',
    },
    {
      name: 'https on its port, with its domain',
      url: 'http://gw.svc:8080',
      api: { listen_port: 8443, protocol: 'https', domain: 'shop.example.com', proxy: { listen_path: '/' } },
      want: 'https://shop.example.com:8443/',
    },
    {
      name: 'listen_port 0 is the gateway port',
      url: 'https://gw:9000/',
      api: { listen_port: 0, proxy: { listen_path: '/x' } },
      want: 'https://gw:9000/x',
    },
    {
      name: 'a URL without a port',
      url: 'http://gw',
      api: { proxy: { listen_path: '/x' } },
      want: 'http://gw/x',
    },
  ];
  for (const c of cases) assert.equal(servedAddress(c.url, c.api), c.want, c.name);
});
