/**
 * A gRPC plugin server of the reference's coprocess protocol, as a process of its own so that a
 * test can SIGKILL it mid call: `node grpc-plugin-server.ts <port> <good token>`. Hooks: `Ok`
 * (sets a header), `Hang` (never answers), `Fail` (fails the call), `Auth` (an auth_check that
 * accepts the good token from `Authorization` with a session, refuses the rest).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { join } from 'node:path';

const [portArg, goodToken = ''] = process.argv.slice(2);
const PROTO_DIR = join(import.meta.dirname, '..', '..', '..', 'gateway', 'plugins', 'coprocess', 'proto');

interface Obj {
  hook_name: string;
  request: { headers: Record<string, string>; set_headers?: Record<string, string> } | null;
  session?: unknown;
  metadata?: Record<string, string>;
  spec?: Record<string, string>;
}

const pkg = grpc.loadPackageDefinition(
  protoLoader.loadSync('coprocess_object.proto', {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    arrays: true,
    oneofs: true,
    includeDirs: [PROTO_DIR],
  }),
).coprocess as grpc.GrpcObject;
const Dispatcher = pkg.Dispatcher as grpc.ServiceClientConstructor;

const server = new grpc.Server();
server.addService(Dispatcher.service, {
  Dispatch: (call: grpc.ServerUnaryCall<Obj, Obj>, cb: grpc.sendUnaryData<Obj>) => {
    const o = call.request;
    const req = o.request;
    if (req === null) {
      cb({ code: grpc.status.INVALID_ARGUMENT, details: 'no request' }, null);
      return;
    }
    switch (o.hook_name) {
      case 'Ok':
        req.set_headers = { 'x-plugin': 'ok' };
        cb(null, o);
        return;
      case 'Hang':
        return; // never answers
      case 'Fail':
        cb({ code: grpc.status.INTERNAL, details: 'the plugin broke' }, null);
        return;
      case 'Auth': {
        // Header names as the gateway sends them, in whatever case.
        const token = Object.entries(req.headers).find(([k]) => k.toLowerCase() === 'authorization')?.[1] ?? '';
        const api = o.spec?.api_id ?? '';
        if (goodToken !== '' && token === goodToken) {
          o.session = {
            rate: 100,
            per: 1,
            access_rights: {
              [api]: { api_id: api, api_name: api, versions: ['Default'], allowed_urls: [] },
            },
            org_id: '',
            metadata: {},
            tags: [],
            alias: 'grpc-user',
            apply_policies: [],
          };
          o.metadata = { token };
        }
        cb(null, o);
        return;
      }
      default:
        cb({ code: grpc.status.UNIMPLEMENTED, details: `no hook ${o.hook_name}` }, null);
    }
  },
  DispatchEvent: (_call: unknown, cb: grpc.sendUnaryData<object>) => {
    cb(null, {});
  },
});
server.bindAsync(`127.0.0.1:${portArg ?? '0'}`, grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err !== null) {
    console.error(err.message);
    process.exit(1);
  }
  console.log(`listening ${String(port)}`);
});
