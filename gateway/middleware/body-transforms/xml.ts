/**
 * An XML body read into a map for a body template (`template_data.input_type: xml`), the way
 * the reference reads it (with the Go library mxj: `NewMapXml` without casting), so that a
 * template written for the reference reads the same data:
 * - the map has one key, the root element's name; an element's name and its attributes' are
 *   their local part (a namespace prefix is dropped: `soap:Body` is `Body`, `xmlns:soap` is
 *   `-soap`);
 * - an element with neither attributes nor children is its text (trimmed of spaces, tabs and
 *   line breaks), or `""` when it has none;
 * - otherwise it is a map: each attribute under its name with a `-` before it, each child under
 *   its name (a name that repeats becomes a list, in document order), and its text under
 *   `#text`;
 * - every value is a string (no numbers or booleans); comments, processing instructions and the
 *   DOCTYPE are skipped, CDATA is text; an element's text is its last non-blank piece, and text
 *   before its first child or attribute stands for the whole element (mxj's quirks, kept).
 * Entities: the five predefined ones and character references; any other (a DTD's) is an error,
 * so nothing is expanded from a DOCTYPE. The encoding is UTF-8 unless the XML declaration names
 * another one Node knows (`encoding="ISO-8859-1"`). An empty body reads as `<_/>`. Parsing stops
 * at the root's end tag; what follows is not read.
 */

/** Why an XML body could not be read. */
export class XmlError extends Error {}

const NAME = /[^\s/>=<"']+/y;
const SPACE = /\s*/y;
const ENTITY = /&(#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z_][\w.-]*);/g;
const PREDEFINED: Readonly<Record<string, string>> = { lt: '<', gt: '>', amp: '&', apos: "'", quot: '"' };

/** `s` without the characters the reference trims from text (tab, CR, backspace, LF, space) at its ends. */
function trim(s: string): string {
  // A loop, not a regular expression: `[...]+$` is quadratic on a long run of spaces.
  const blank = (c: number): boolean => c === 9 || c === 13 || c === 8 || c === 10 || c === 32;
  let a = 0;
  let b = s.length;
  while (a < b && blank(s.charCodeAt(a))) a++;
  while (b > a && blank(s.charCodeAt(b - 1))) b--;
  return s.slice(a, b);
}

/** The document's text: a UTF-8 BOM dropped, the encoding its declaration names applied. */
function decode(body: Buffer): string {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) body = body.subarray(3);
  const head = body.subarray(0, 200).toString('latin1');
  const declared = /^\s*<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']/.exec(head)?.[1];
  let label = declared?.toLowerCase() ?? 'utf-8';
  if (label === 'utf8') label = 'utf-8';
  try {
    return new TextDecoder(label, { fatal: true }).decode(body);
  } catch (err) {
    throw new XmlError(`cannot decode the body as ${label}: ${String(err)}`);
  }
}

/** Text with line breaks normalized and entities resolved, as Go's decoder reads it. */
function unescape(raw: string): string {
  return raw.replace(/\r\n?/g, '\n').replace(ENTITY, (all, ref: string) => {
    if (ref.startsWith('#')) {
      const code = ref[1] === 'x' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      if (!Number.isInteger(code) || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
        throw new XmlError(`invalid character entity ${all}`);
      }
      return String.fromCodePoint(code);
    }
    const v = PREDEFINED[ref];
    if (v === undefined) throw new XmlError(`invalid character entity ${all}`);
    return v;
  });
}

/** Text with a bare `&` (not an entity) refused, then unescaped. */
function textOf(raw: string): string {
  if (/&(?!(#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z_][\w.-]*);)/.test(raw)) {
    throw new XmlError('invalid character entity: a bare & (write &amp;)');
  }
  return unescape(raw);
}

/** The local part of a name (`soap:Body` -> `Body`), as Go's decoder splits it. */
function local(name: string): string {
  const colon = name.indexOf(':');
  if (colon <= 0 || colon === name.length - 1 || name.includes(':', colon + 1)) return name;
  return name.slice(colon + 1);
}

interface Frame {
  /** The element's full name (its end tag must match). */
  tag: string;
  key: string;
  /** Set once the element's value is its text. */
  text: string | undefined;
  /** Its attributes, children and `#text`. */
  fields: Record<string, unknown>;
}

/** Reads an XML body into the reference's map (see the module comment); throws an XmlError. */
export function xmlToMap(body: Buffer): Record<string, unknown> {
  const src = body.length === 0 ? '<_/>' : decode(body);
  const stack: Frame[] = [];
  let i = 0;

  const valueOf = (f: Frame): unknown => f.text ?? (Object.keys(f.fields).length > 0 ? f.fields : '');

  /** Adds a finished child to its parent (a repeated name becomes a list); the root's map when there is none. */
  const close = (f: Frame): Record<string, unknown> | undefined => {
    const v = valueOf(f);
    const parent = stack[stack.length - 1];
    if (parent === undefined) return { [f.key]: v };
    const fields = parent.fields;
    if (Object.hasOwn(fields, f.key)) {
      const prev = fields[f.key];
      if (Array.isArray(prev)) prev.push(v);
      else fields[f.key] = [prev, v];
    } else {
      fields[f.key] = v;
    }
    return undefined;
  };

  /** One piece of character data inside the element on top of the stack. */
  const charData = (s: string): void => {
    const top = stack[stack.length - 1];
    const t = trim(s);
    if (top === undefined || t === '') return;
    if (Object.keys(top.fields).length > 0) top.fields['#text'] = t;
    else top.text = t;
  };

  const skipPast = (end: string, what: string): void => {
    const at = src.indexOf(end, i);
    if (at === -1) throw new XmlError(`unterminated ${what}`);
    i = at + end.length;
  };

  for (;;) {
    const lt = src.indexOf('<', i);
    if (lt === -1) {
      throw new XmlError(
        stack.length === 0
          ? 'no root element'
          : `unexpected end of the body in <${stack[stack.length - 1]?.tag ?? ''}>`,
      );
    }
    if (lt > i) charData(textOf(src.slice(i, lt)));
    i = lt;
    if (src.startsWith('<!--', i)) {
      skipPast('-->', 'comment');
    } else if (src.startsWith('<![CDATA[', i)) {
      const end = src.indexOf(']]>', i);
      if (end === -1) throw new XmlError('unterminated CDATA section');
      charData(src.slice(i + 9, end).replace(/\r\n?/g, '\n'));
      i = end + 3;
    } else if (src.startsWith('<?', i)) {
      skipPast('?>', 'processing instruction');
    } else if (src.startsWith('<!', i)) {
      // A directive (DOCTYPE), with its internal subset: skipped, nothing in it is used.
      let depth = 0;
      let quote: string | undefined;
      let j = i + 2;
      for (; j < src.length; j++) {
        const c = src[j];
        if (quote !== undefined) {
          if (c === quote) quote = undefined;
        } else if (c === '"' || c === "'") quote = c;
        else if (c === '<') depth++;
        else if (c === '>') {
          if (depth === 0) break;
          depth--;
        }
      }
      if (j >= src.length) throw new XmlError('unterminated directive');
      i = j + 1;
    } else if (src[i + 1] === '/') {
      NAME.lastIndex = i + 2;
      const name = NAME.exec(src)?.[0];
      SPACE.lastIndex = NAME.lastIndex;
      SPACE.exec(src);
      const top = stack.pop();
      if (name === undefined || src[SPACE.lastIndex] !== '>') throw new XmlError('invalid end tag');
      if (top === undefined) throw new XmlError(`unexpected end element </${name}>`);
      if (top.tag !== name) throw new XmlError(`element <${top.tag}> closed by </${name}>`);
      i = SPACE.lastIndex + 1;
      const root = close(top);
      if (root !== undefined) return root;
    } else {
      NAME.lastIndex = i + 1;
      const tag = NAME.exec(src)?.[0];
      if (tag === undefined) throw new XmlError('expected an element name after <');
      let j = NAME.lastIndex;
      const frame: Frame = { tag, key: local(tag), text: undefined, fields: {} };
      let selfClosing = false;
      for (;;) {
        SPACE.lastIndex = j;
        SPACE.exec(src);
        const spaced = SPACE.lastIndex > j;
        j = SPACE.lastIndex;
        if (src[j] === '>') {
          j++;
          break;
        }
        if (src[j] === '/' && src[j + 1] === '>') {
          j += 2;
          selfClosing = true;
          break;
        }
        if (!spaced) throw new XmlError(`expected a space, > or /> in <${tag}>`);
        NAME.lastIndex = j;
        const attr = NAME.exec(src)?.[0];
        if (attr === undefined) throw new XmlError(`expected an attribute name in <${tag}>`);
        SPACE.lastIndex = NAME.lastIndex;
        SPACE.exec(src);
        j = SPACE.lastIndex;
        if (src[j] !== '=') throw new XmlError(`attribute ${attr} in <${tag}> has no value`);
        SPACE.lastIndex = j + 1;
        SPACE.exec(src);
        j = SPACE.lastIndex;
        const q = src[j];
        if (q !== '"' && q !== "'") throw new XmlError(`unquoted value of attribute ${attr} in <${tag}>`);
        const end = src.indexOf(q, j + 1);
        if (end === -1) throw new XmlError(`unterminated value of attribute ${attr} in <${tag}>`);
        const raw = src.slice(j + 1, end);
        if (raw.includes('<')) throw new XmlError(`unescaped < in attribute ${attr} of <${tag}>`);
        frame.fields[`-${local(attr)}`] = textOf(raw);
        j = end + 1;
      }
      i = j;
      if (selfClosing) {
        const root = close(frame);
        if (root !== undefined) return root;
      } else {
        stack.push(frame);
      }
    }
  }
}
