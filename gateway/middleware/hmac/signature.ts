/**
 * The HMAC request signature (draft-cavage HTTP signatures, as the reference gateway reads them):
 * parsing `Signature keyId="...",algorithm="...",headers="...",signature="..."`, and the signing
 * string of a request. Pure functions.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** The algorithms and the hash each uses. */
export const HMAC_HASHES = {
  'hmac-sha1': 'sha1',
  'hmac-sha256': 'sha256',
  'hmac-sha384': 'sha384',
  'hmac-sha512': 'sha512',
} as const;
/** One of HMAC_HASHES. */
export type HmacAlgorithm = keyof typeof HMAC_HASHES;

/** A parsed signature header. */
export interface SignatureParams {
  keyId: string;
  algorithm: HmacAlgorithm;
  /** Lower-case names of what is signed, in order (`(request-target)`, `date`, ...). */
  headers: string[];
  /** The base64 signature, percent-decoding undone. */
  signature: string;
}

const PARAM = /\s*([A-Za-z]+)\s*=\s*(?:"([^"]*)"|([^",\s]*))\s*(,|$)/y;

/** The parameters of a `Signature ...` value (the word `Signature` is optional), or undefined. */
export function parseSignature(value: string): SignatureParams | undefined {
  const text = value.replace(/^\s*signature\s+/i, '');
  const params = new Map<string, string>();
  PARAM.lastIndex = 0;
  while (PARAM.lastIndex < text.length) {
    const start = PARAM.lastIndex;
    const m = PARAM.exec(text);
    if (m === null || PARAM.lastIndex === start) return undefined;
    const name = (m[1] ?? '').toLowerCase();
    if (!['keyid', 'algorithm', 'headers', 'signature'].includes(name) || params.has(name)) return undefined;
    params.set(name, m[2] ?? m[3] ?? '');
    if (m[4] === '') break;
  }
  const keyId = params.get('keyid') ?? '';
  const algorithm = params.get('algorithm') ?? '';
  let signature = params.get('signature') ?? '';
  if (signature.includes('%')) {
    try {
      signature = decodeURIComponent(signature);
    } catch {
      return undefined;
    }
  }
  if (keyId === '' || signature === '' || !Object.hasOwn(HMAC_HASHES, algorithm)) return undefined;
  const headers = (params.get('headers') ?? '')
    .split(' ')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  return {
    keyId,
    algorithm: algorithm as HmacAlgorithm,
    headers: headers.length === 0 ? ['date'] : headers,
    signature,
  };
}

function header(headers: IncomingHttpHeaders, name: string): string {
  const v = headers[name];
  return (Array.isArray(v) ? v.join(', ') : (v ?? '')).trim();
}

/** The signed date of a request: `X-Aux-Date` when sent (some clients can't set `Date`), else `Date`. */
export function signedDate(headers: IncomingHttpHeaders): { name: string; value: string } {
  const aux = header(headers, 'x-aux-date');
  return aux !== '' ? { name: 'x-aux-date', value: aux } : { name: 'date', value: header(headers, 'date') };
}

/**
 * The signing string: one `name: value` line per signed header, `(request-target): <method>
 * <target>` for the request line; `date` stands for the date `signedDate` picks.
 */
export function signingString(
  names: readonly string[],
  req: { method: string; target: string; headers: IncomingHttpHeaders },
): string {
  return names
    .map((name) => {
      if (name === '(request-target)') return `(request-target): ${req.method.toLowerCase()} ${req.target}`;
      if (name === 'date') {
        const d = signedDate(req.headers);
        return `${d.name}: ${d.value}`;
      }
      return `${name}: ${header(req.headers, name)}`;
    })
    .join('\n');
}

/** The base64 HMAC of `text` with `secret`. */
export function hmacOf(algorithm: HmacAlgorithm, secret: string, text: string): string {
  return createHmac(HMAC_HASHES[algorithm], secret).update(text, 'utf8').digest('base64');
}

/** Whether two signatures are equal, in constant time for equal lengths. */
export function sameSignature(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
