/** Reading `/metrics` in tests: a scrape's samples, by series (`name{labels}`). */
import assert from 'node:assert/strict';
import { send, type Res } from '../testing/client.ts';

/** The samples of a Prometheus text, by series (`name{labels}`). */
export function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** The answer to a scrape of `/metrics` on `port`, without the secret, on a new connection: a 200. */
export async function scrapeAnswer(port: number): Promise<Res> {
  const r = await send({ port, path: '/metrics', fresh: true });
  assert.equal(r.status, 200, r.text);
  return r;
}

/** The samples of a scrape of `/metrics` on `port` (scrapeAnswer). */
export async function scrape(port: number): Promise<Map<string, number>> {
  return samples((await scrapeAnswer(port)).text);
}
