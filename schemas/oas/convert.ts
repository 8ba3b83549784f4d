/**
 * The conversion of an OAS document into the classic definition of the same API, one reader per
 * part of the extension; whatever no reader took and says something is refused by name.
 */
import { operationSecurity, readAuthentication } from './auth.ts';
import { Conversion, EXT, obj, type OasConversion } from './document.ts';
import { readGlobalCorsAndCache, readGlobalMiddleware } from './global.ts';
import { readOperations } from './operations.ts';
import { readCertificates, readInfo, readServer } from './server.ts';

/**
 * Converts an OAS document into the classic definition of the same API. Problems name paths in the
 * document; the classic rules are not run (see `checkOasDocument`).
 */
export function oasToClassic(doc: unknown): OasConversion {
  const c = new Conversion(obj(doc) ?? {});
  if (obj(c.peek([EXT])) === undefined) {
    c.problem(
      [EXT],
      'Required',
      'the document has no x-svc-api-gateway extension: add it with info.name, info.state.active, upstream.url and server.listenPath.value',
    );
    return c.result();
  }
  readInfo(c);
  readServer(c);
  readCertificates(c);
  readAuthentication(c);
  readGlobalMiddleware(c);
  readGlobalCorsAndCache(c);
  readOperations(c);
  operationSecurity(c);
  c.refuseUnread([EXT]);
  return c.result();
}
