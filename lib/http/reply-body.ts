/**
 * What the body of a management reply (the gateway's, the dashboard's) is on the wire: JSON, or a
 * text sent as it is (`/metrics`), with its content type; nothing for HEAD.
 */

/** A body sent as it is, not as JSON (`/metrics`). */
export class TextBody {
  readonly contentType: string;
  readonly text: string;
  constructor(contentType: string, text: string) {
    this.contentType = contentType;
    this.text = text;
  }
}

/** The text of a reply body and its content type: a TextBody as it is, anything else as JSON; empty for HEAD. */
export function wireBody(body: unknown, method: string | undefined): { text: string; contentType: string } {
  const text = body instanceof TextBody ? body : undefined;
  const full = text === undefined ? JSON.stringify(body) : text.text;
  return { text: method === 'HEAD' ? '' : full, contentType: text?.contentType ?? 'application/json' };
}
