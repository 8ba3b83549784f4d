// A gRPC plugin server written as one for the reference gateway is (its coprocess protocol, the
// coprocess.Dispatcher service), built with grpc-go: what the gateway's tests run against a real
// one (gateway/middleware/plugins/grpc-go.test.ts). The messages are dynamic (dynamicpb), their
// descriptors compiled at start from the protocol's .proto files (-proto-dir), so no protoc step
// or generated code is needed. It reads the request as a plugin for the reference does: headers
// by their canonical names (Authorization), the API's ID as spec["APIID"].
//
// Hooks, by name:
//
//   - AddHeader (pre): sets the header X-Go-Plugin: <hook type>.
//
//   - Rewrite (pre): replaces "/rewrite-me" in the URL with "/go-rewritten" and sets the method
//     to POST.
//
//   - UpperBody (post): the request body in upper case (raw_body).
//
//   - GoResponse (response): the status becomes 203, the header X-Go-Response: <hook type> is
//     added and the body becomes "go saw <status> <body>" (raw_body).
//
//   - MyAuthCheck (auth_check): accepts a token of -tokens in Authorization with a session whose
//     rate limit is -rate requests per -per seconds (alias go-plugin-user, metadata plugin: go,
//     access to the API of the call) and the key in metadata["token"]; any other token gets no
//     session (the gateway refuses it). With -extractor-ttl S the session's id_extractor_deadline
//     is S seconds from now (an API's id_extractor keeps it that long).
//
//   - anything else is returned unchanged.
//
//     grpcplugin -proto-dir DIR [-listen tcp://127.0.0.1:0 | unix:///path] [-tokens T1,T2] [-rate N] [-per S] [-extractor-ttl S]
//
// It prints "listening on <address>" once it serves, and stops on SIGTERM or SIGINT.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bufbuild/protocompile"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/dynamicpb"
)

var (
	protoDir = flag.String("proto-dir", "", "the folder of the protocol's .proto files (coprocess_object.proto and its imports)")
	listen   = flag.String("listen", "tcp://127.0.0.1:0", "tcp://host:port or unix:///path")
	tokens   = flag.String("tokens", "plugin-token", "the tokens MyAuthCheck accepts, comma-separated")
	rate     = flag.Float64("rate", 2, "the rate of the session MyAuthCheck returns")
	per      = flag.Float64("per", 60, "the period (seconds) of that rate")
	ttl      = flag.Int64("extractor-ttl", 0, "seconds from now for the id_extractor_deadline of the session MyAuthCheck returns (0: none)")
)

type object = map[string]any

// child returns o[k] as an object, created when absent.
func child(o object, k string) object {
	if c, ok := o[k].(map[string]any); ok {
		return c
	}
	c := object{}
	o[k] = c
	return c
}

// bytesOf decodes a bytes field as protojson carries it (base64).
func bytesOf(o object, k string) []byte {
	s, _ := o[k].(string)
	b, _ := base64.StdEncoding.DecodeString(s)
	return b
}

// dispatch runs the hook the object names and returns the object the gateway applies.
func dispatch(o object) object {
	name, _ := o["hook_name"].(string)
	hookType, _ := o["hook_type"].(string)
	req := child(o, "request")
	switch name {
	case "AddHeader":
		child(req, "set_headers")["X-Go-Plugin"] = hookType
	case "Rewrite":
		url, _ := req["url"].(string)
		req["url"] = strings.Replace(url, "/rewrite-me", "/go-rewritten", 1)
		req["method"] = "POST"
	case "UpperBody":
		req["raw_body"] = base64.StdEncoding.EncodeToString(bytes.ToUpper(bytesOf(req, "raw_body")))
	case "GoResponse":
		res := child(o, "response")
		status, _ := res["status_code"].(float64)
		child(res, "headers")["X-Go-Response"] = hookType
		body := fmt.Sprintf("go saw %d %s", int(status), bytesOf(res, "raw_body"))
		res["raw_body"] = base64.StdEncoding.EncodeToString([]byte(body))
		res["status_code"] = 203
	case "MyAuthCheck":
		auth, _ := child(req, "headers")["Authorization"].(string)
		got := strings.TrimPrefix(auth, "Bearer ")
		if got == "" || !slices.Contains(strings.Split(*tokens, ","), got) {
			return o
		}
		// Access to the API it is called for (svc grants no API to a session without access rights).
		apiID, _ := child(o, "spec")["APIID"].(string)
		session := object{
			"rate":          *rate,
			"per":           *per,
			"alias":         "go-plugin-user",
			"metadata":      object{"plugin": "go"},
			"access_rights": object{apiID: object{"api_id": apiID, "api_name": apiID}},
		}
		if *ttl > 0 {
			session["id_extractor_deadline"] = time.Now().Unix() + *ttl
		}
		o["session"] = session
		child(o, "metadata")["token"] = got
	}
	return o
}

func main() {
	flag.Parse()
	if *protoDir == "" {
		fmt.Fprintln(os.Stderr, "grpcplugin: -proto-dir is required")
		os.Exit(2)
	}
	compiler := protocompile.Compiler{Resolver: &protocompile.SourceResolver{ImportPaths: []string{*protoDir}}}
	files, err := compiler.Compile(context.Background(), "coprocess_object.proto")
	if err != nil {
		fmt.Fprintf(os.Stderr, "grpcplugin: %v\n", err)
		os.Exit(1)
	}
	msgs := files[0].Messages()
	objectDesc := msgs.ByName("Object")
	eventDesc, replyDesc := msgs.ByName("Event"), msgs.ByName("EventReply")
	if objectDesc == nil || eventDesc == nil || replyDesc == nil {
		fmt.Fprintln(os.Stderr, "grpcplugin: coprocess_object.proto has no Object, Event or EventReply")
		os.Exit(1)
	}
	names := protojson.MarshalOptions{UseProtoNames: true}

	handleDispatch := func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := dynamicpb.NewMessage(objectDesc)
		if err := dec(in); err != nil {
			return nil, err
		}
		js, err := names.Marshal(in)
		if err != nil {
			return nil, err
		}
		var o object
		if err := json.Unmarshal(js, &o); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "grpcplugin: %v %v\n", o["hook_type"], o["hook_name"])
		if js, err = json.Marshal(dispatch(o)); err != nil {
			return nil, err
		}
		out := dynamicpb.NewMessage(objectDesc)
		return out, protojson.Unmarshal(js, out)
	}
	handleEvent := func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		if err := dec(dynamicpb.NewMessage(eventDesc)); err != nil {
			return nil, err
		}
		return dynamicpb.NewMessage(replyDesc), nil
	}
	server := grpc.NewServer()
	server.RegisterService(&grpc.ServiceDesc{
		ServiceName: string(files[0].Package()) + ".Dispatcher",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "Dispatch", Handler: handleDispatch},
			{MethodName: "DispatchEvent", Handler: handleEvent},
		},
		Metadata: "coprocess_object.proto",
	}, struct{}{})

	network, address := "tcp", strings.TrimPrefix(*listen, "tcp://")
	if rest, ok := strings.CutPrefix(*listen, "unix://"); ok {
		network, address = "unix", rest
	}
	lis, err := net.Listen(network, address)
	if err != nil {
		fmt.Fprintf(os.Stderr, "grpcplugin: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s://%s\n", network, lis.Addr().String())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		server.Stop()
	}()
	if err := server.Serve(lis); err != nil {
		fmt.Fprintf(os.Stderr, "grpcplugin: %v\n", err)
		os.Exit(1)
	}
}
