/**
 * The fast path's upstream response parser: the final response head an upstream sends (after
 * any informational 1xx ones), and where its body ends by its framing (`BodyEnd`; a chunked one:
 * `ChunkedEnd`). Only as much is parsed as relaying needs: the body's bytes go to the client as
 * they came (exchange.ts), the head is re-emitted with the gateway's header rules
 * (response-writer.ts). A head node:http's client (llhttp) would refuse fails here too
 * (502), so that nothing the node:http path never relays reaches a client from the fast path: a
 * name that is not a token (whitespace before the colon, obs-fold), a control character in a
 * value (a bare CR or LF would split the header line for the client), Transfer-Encoding with
 * Content-Length (a client or a proxy in front could frame the body by either). The rows of
 * upstream-response.test.ts are its specification.
 */
import { BAD_VALUE, DIGITS, TOKEN } from './head-parser.ts';

/** A response head larger than this is a failure (502), not relayed. */
const MAX_RESPONSE_HEAD = 65_536;

/** A response header of the upstream's, as it came and in lower case. */
export interface Header {
  lower: string;
  raw: string;
  value: string;
}

/** The final response head of an upstream, parsed. */
export interface ResponseHead {
  status: number;
  reason: string;
  /** Every header line, in order. */
  headers: Header[];
  /** The Transfer-Encoding values, joined with `, `. */
  te: string | undefined;
  /** The Content-Length value (every Content-Length the same). */
  cl: string | undefined;
  /** The Connection values. */
  connValues: string[];
  /** Whether the upstream sent Date. */
  date: boolean;
}

/**
 * Reads the final response head at the start of `buf`, skipping informational (1xx) ones: the
 * head and the bytes after it; `more` (the bytes to keep, 1xx heads dropped) while the head is
 * not complete; an Error when the response cannot be relayed (malformed, too large, a 101).
 */
export function readResponseHead(
  buf: Buffer,
): { head: ResponseHead; rest: Buffer | undefined } | { more: Buffer | undefined } | Error {
  let left: Buffer | undefined = buf;
  for (;;) {
    if (left === undefined) return { more: undefined };
    const end: number = left.indexOf('\r\n\r\n');
    if (end === -1) {
      if (left.length > MAX_RESPONSE_HEAD) return new Error('upstream response head too large');
      return { more: left };
    }
    const lines = left.toString('latin1', 0, end).split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(lines[0] ?? '');
    if (m === null) return new Error('malformed upstream status line');
    const status = Number(m[1]);
    const rest: Buffer | undefined = left.length > end + 4 ? left.subarray(end + 4) : undefined;
    if (status < 200) {
      if (status === 101) return new Error('unexpected 101 from upstream');
      left = rest;
      continue; // informational: the final response follows
    }
    const head = responseHead(status, m[2] ?? '', lines);
    return head instanceof Error ? head : { head, rest };
  }
}

/** The header lines of a final response head (`lines[0]` is its status line). */
function responseHead(status: number, reason: string, lines: string[]): ResponseHead | Error {
  const headers: Header[] = [];
  const connValues: string[] = [];
  let te: string | undefined;
  let cl: string | undefined;
  let date = false;
  // Every name and every value, each run together, for one check of each (not two per header).
  let names = '';
  let values = '';
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const colon = line.indexOf(':');
    if (colon <= 0) return new Error('malformed upstream header');
    const raw = line.slice(0, colon);
    const rawValue = line.slice(colon + 1);
    names += raw;
    values += rawValue;
    const value = rawValue.trim();
    const lower = raw.toLowerCase();
    if (lower === 'connection') connValues.push(value);
    else if (lower === 'transfer-encoding') te = te === undefined ? value : `${te}, ${value}`;
    else if (lower === 'content-length') {
      if ((cl !== undefined && cl !== value) || !DIGITS.test(value)) {
        return new Error('invalid upstream content-length');
      }
      cl = value;
    } else if (lower === 'date') date = true;
    headers.push({ lower, raw, value });
  }
  if ((names !== '' && !TOKEN.test(names)) || BAD_VALUE.test(values)) {
    return new Error('malformed upstream header');
  }
  if (te !== undefined && cl !== undefined) {
    return new Error('upstream sent both transfer-encoding and content-length');
  }
  return { status, reason, headers, te, cl, connValues, date };
}

/**
 * Finds the end of a chunked body in the bytes an upstream sends, read by read, without
 * changing them (they are relayed as they came): chunk sizes in hex (at most 13 digits), chunk
 * extensions skipped, the data, its CRLF, then trailers up to an empty line.
 */
export class ChunkedEnd {
  /** 0 size digits, 4 rest of the size line, 1 data, 2 CRLF, 3 trailers. */
  #state = 0;
  #size = 0;
  /** Size digits read; in state 2, whether the CR came; in trailers, bytes of the line. */
  #line = 0;

  /**
   * Advances over `b`. Returns the index just past the end of the body when it ends in `b`, -1
   * when it goes on, -2 when the framing is malformed.
   */
  scan(b: Buffer): number {
    let i = 0;
    const n = b.length;
    while (i < n) {
      switch (this.#state) {
        case 0: {
          // chunk size: hex digits (#line counts them), then an extension or CRLF
          const c = b[i++] ?? 0;
          const d =
            c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;
          if (d >= 0) {
            if (++this.#line > 13) return -2;
            this.#size = this.#size * 16 + d;
          } else if (this.#line === 0) return -2;
          else if (c === 13 || c === 59 || c === 32 || c === 9) this.#state = 4;
          else return -2;
          break;
        }
        case 4: {
          // rest of the size line, up to LF
          const lf = b.indexOf(10, i);
          if (lf === -1) return -1;
          i = lf + 1;
          this.#line = 0;
          this.#state = this.#size === 0 ? 3 : 1;
          break;
        }
        case 1: {
          const take = Math.min(this.#size, n - i);
          i += take;
          this.#size -= take;
          if (this.#size === 0) {
            this.#state = 2;
            this.#line = 0;
          }
          break;
        }
        case 2: {
          // CRLF after chunk data
          const c = b[i++];
          if (this.#line === 0 && c === 13) this.#line = 1;
          else if (c === 10) {
            this.#line = 0;
            this.#size = 0;
            this.#state = 0;
          } else return -2;
          break;
        }
        default: {
          // trailers: lines until an empty one; #line counts bytes of the current line
          const c = b[i++];
          if (c === 10) {
            if (this.#line === 0) return i;
            this.#line = 0;
          } else if (c !== 13) this.#line++;
          break;
        }
      }
    }
    return -1;
  }
}

/** How a response's body is framed: by its length, chunked, by the upstream closing, or none. */
export type Framing = 'length' | 'chunked' | 'close' | 'none';

/**
 * Where the body of a final response ends, in the bytes read after its head, by its framing:
 * Content-Length, chunked (`ChunkedEnd`), close-delimited (until the upstream closes), or none
 * (the answer to HEAD, 204, 304). A Transfer-Encoding that does not end in chunked is
 * close-delimited, as RFC 9112 §6.3 says.
 */
export class BodyEnd {
  readonly framing: Framing;
  /** The body has ended (at once for a response without one, or with Content-Length 0). */
  ended: boolean;
  /** Bytes of a Content-Length body still to come. */
  #left: number;
  readonly #chunks: ChunkedEnd | undefined;

  /** `toHead`: the response answers HEAD (no body, whatever its head says). */
  constructor(head: ResponseHead, toHead: boolean) {
    const { status, te, cl } = head;
    let framing: Framing;
    if (toHead || status === 204 || status === 304) framing = 'none';
    else if (te !== undefined) framing = /(^|,)\s*chunked\s*$/i.test(te) ? 'chunked' : 'close';
    else if (cl !== undefined) framing = 'length';
    else framing = 'close';
    this.framing = framing;
    this.#left = cl === undefined ? 0 : Number(cl);
    this.#chunks = framing === 'chunked' ? new ChunkedEnd() : undefined;
    this.ended = framing === 'none' || (framing === 'length' && this.#left === 0);
  }

  /**
   * Reads `chunk`, the next bytes of the response: how many at its start belong to the body (the
   * rest does not: the body ended within it, or the response has none), or -1 when the chunked
   * framing is malformed. `ended` says whether the body is complete.
   */
  take(chunk: Buffer): number {
    switch (this.framing) {
      case 'length': {
        const n = Math.min(this.#left, chunk.length);
        this.#left -= n;
        if (this.#left === 0) this.ended = true;
        return n;
      }
      case 'chunked': {
        const end = this.#chunks?.scan(chunk) ?? -2;
        if (end === -2) return -1;
        if (end === -1) return chunk.length;
        this.ended = true;
        return end;
      }
      case 'close':
        return chunk.length;
      default:
        return 0;
    }
  }
}
