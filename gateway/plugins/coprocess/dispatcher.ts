/**
 * The client of a gRPC plugin server (`custom_middleware.driver: grpc`): the reference gateway's
 * coprocess protocol (proto/, the `coprocess.Dispatcher` service), so that a plugin server
 * written for the reference works with svc unchanged. The .proto files are read once, with the
 * field names as they are written (`set_headers`, not `setHeaders`), 64-bit integers as numbers
 * and enums as their names, the way plugin servers built from the same files see them.
 * @grpc/grpc-js and the proto loader (protobufjs) are loaded at the first call, not by every
 * worker at start: most gateways run no gRPC plugin (issue 33 item 4).
 */
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import type * as protoLoader from '@grpc/proto-loader';

/** The proto files of the protocol. */
export const PROTO_DIR = join(import.meta.dirname, 'proto');

/** The hook types of the protocol (`coprocess.HookType`). */
export type HookType = 'Unknown' | 'Pre' | 'Post' | 'PostKeyAuth' | 'CustomKeyCheck' | 'Response';

/** `coprocess.ReturnOverrides`. */
export interface ReturnOverrides {
  response_code: number;
  response_error: string;
  headers: Record<string, string>;
  override_error: boolean;
  response_body: string;
}

/** `coprocess.MiniRequestObject` (the fields the gateway fills and reads). */
export interface MiniRequestObject {
  headers: Record<string, string>;
  set_headers: Record<string, string>;
  delete_headers: string[];
  body: string;
  url: string;
  params: Record<string, string>;
  add_params: Record<string, string>;
  extended_params: Record<string, string>;
  delete_params: string[];
  return_overrides: ReturnOverrides | null;
  method: string;
  request_uri: string;
  scheme: string;
  raw_body: Buffer;
}

/** `coprocess.Header`: a response header with all its values. */
export interface MultivalueHeader {
  key: string;
  values: string[];
}

/** `coprocess.ResponseObject`: the upstream's response, for response hooks. */
export interface ResponseObject {
  status_code: number;
  raw_body: Buffer;
  body: string;
  headers: Record<string, string>;
  multivalue_headers: MultivalueHeader[];
}

/** `coprocess.AccessDefinition`. */
export interface AccessDefinition {
  api_name: string;
  api_id: string;
  versions: string[];
  allowed_urls: { url: string; methods: string[] }[];
}

/** `coprocess.SessionState` (the fields the gateway maps to its session model). */
export interface SessionState {
  rate: number;
  per: number;
  expires: number;
  quota_max: number;
  quota_renews: number;
  quota_remaining: number;
  quota_renewal_rate: number;
  access_rights: Record<string, AccessDefinition>;
  org_id: string;
  is_inactive: boolean;
  apply_policy_id: string;
  metadata: Record<string, string>;
  tags: string[];
  alias: string;
  apply_policies: string[];
  /**
   * Until when (Unix seconds) the session an auth hook answers stands for the identity the API's
   * `id_extractor` read (gateway/plugins/coprocess/id-extractor.ts); 0: not kept.
   */
  id_extractor_deadline: number;
}

/** `coprocess.Object`: what one Dispatch call sends and receives. */
export interface CoprocessObject {
  hook_type: HookType;
  hook_name: string;
  request: MiniRequestObject | null;
  session: SessionState | null;
  metadata: Record<string, string>;
  spec: Record<string, string>;
  response: ResponseObject | null;
}

/** The messages as the plugin server receives them (the partial object the gateway sends). */
export type OutgoingObject = Omit<Partial<CoprocessObject>, 'request' | 'session' | 'response'> & {
  request: Partial<MiniRequestObject>;
  session?: Partial<SessionState> | undefined;
  response?: ResponseObject | undefined;
};

const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  arrays: true,
  objects: false,
  oneofs: true,
};

let loaded: Promise<{ grpc: typeof grpc; coprocess: grpc.GrpcObject }> | undefined;

/** @grpc/grpc-js and the `coprocess` package of the proto files (loaded and read once). */
function loadCoprocess(): Promise<{ grpc: typeof grpc; coprocess: grpc.GrpcObject }> {
  loaded ??= Promise.all([import('@grpc/grpc-js'), import('@grpc/proto-loader')]).then(([grpcJs, loader]) => {
    const definition = grpcJs.loadPackageDefinition(
      loader.loadSync('coprocess_object.proto', { ...LOADER_OPTIONS, includeDirs: [PROTO_DIR] }),
    );
    return { grpc: grpcJs, coprocess: definition.coprocess as grpc.GrpcObject };
  });
  return loaded;
}

/** The `coprocess` package of the proto files (read once). */
export async function coprocessPackage(): Promise<grpc.GrpcObject> {
  return (await loadCoprocess()).coprocess;
}

/** The gRPC target of `coprocess_grpc_server` (`tcp://host:port` or `unix:///path`). */
export function grpcTarget(server: string): string {
  if (server.startsWith('tcp://')) return server.slice('tcp://'.length);
  if (server.startsWith('unix://')) return server;
  throw new Error(`coprocess_grpc_server: ${server}: write tcp://host:port or unix:///path`);
}

/** One connection to a plugin server. */
export interface Dispatcher {
  /** Sends `object` to the server; rejects when it fails or takes longer than `timeoutMs`. */
  dispatch(object: OutgoingObject, timeoutMs: number): Promise<CoprocessObject>;
  /** Sends an event's JSON payload (`DispatchEvent`); rejects as `dispatch` does. */
  dispatchEvent(payload: string, timeoutMs: number): Promise<void>;
  close(): void;
}

type UnaryCall<Req, Res> = (
  req: Req,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res?: Res) => void,
) => void;

/** Calls `call` with a deadline; the answer, or an error naming the plugin server. */
function unary<Req, Res>(call: UnaryCall<Req, Res>, req: Req, timeoutMs: number): Promise<Res> {
  return new Promise((resolve, reject) => {
    call(req, { deadline: Date.now() + timeoutMs }, (err, res) => {
      if (err !== null) reject(new Error(`gRPC plugin server: ${err.message}`, { cause: err }));
      else if (res === undefined) reject(new Error('gRPC plugin server: no answer'));
      else resolve(res);
    });
  });
}

/**
 * The client of the gateway's plugin server (`coprocess_grpc_server`) for an API's hooks; throws,
 * so the API is not served, when the gateway has none.
 */
export function openPluginServer(server: string | undefined): Dispatcher {
  if (server === undefined) {
    throw new Error(
      "custom_middleware.driver: the gateway setting coprocess_grpc_server is not set, so gRPC plugins can't run: set it (--coprocess-grpc-server)",
    );
  }
  return openDispatcher(server);
}

/**
 * Opens a client of the plugin server at `server`: a bad address throws here; gRPC is loaded and
 * the client connects at the first call.
 */
export function openDispatcher(server: string): Dispatcher {
  const target = grpcTarget(server);
  let client: grpc.Client | undefined;
  let closed = false;
  let methods:
    | Promise<{
        call: UnaryCall<OutgoingObject, CoprocessObject>;
        event: UnaryCall<{ payload: string }, object>;
      }>
    | undefined;
  const open = () =>
    (methods ??= loadCoprocess().then(({ grpc: grpcJs, coprocess }) => {
      if (closed) throw new Error('gRPC plugin server: the client is closed');
      const Client = coprocess.Dispatcher as grpc.ServiceClientConstructor;
      const c = new Client(target, grpcJs.credentials.createInsecure());
      client = c;
      const m = c as unknown as {
        Dispatch: UnaryCall<OutgoingObject, CoprocessObject>;
        DispatchEvent: UnaryCall<{ payload: string }, object>;
      };
      return { call: m.Dispatch.bind(c), event: m.DispatchEvent.bind(c) };
    }));
  return {
    dispatch: async (object, timeoutMs) => unary((await open()).call, object, timeoutMs),
    dispatchEvent: async (payload, timeoutMs) => {
      await unary((await open()).event, { payload }, timeoutMs);
    },
    close: () => {
      closed = true;
      client?.close();
    },
  };
}
