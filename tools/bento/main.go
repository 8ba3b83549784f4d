// The stream processor the gateway drives (gateway/streams/): Bento, built from its published Go
// module with the components streams users need. `bento streams` runs it in streams mode; the
// gateway starts it as a supervised child. To add components, import their package here.
package main

import (
	"context"

	"github.com/warpstreamlabs/bento/public/service"

	// Core processors, inputs and outputs (mapping, branch, switch, broker, http_server,
	// http_client, ...), plus the brokers the seed names.
	_ "github.com/warpstreamlabs/bento/public/components/amqp09"
	_ "github.com/warpstreamlabs/bento/public/components/io"
	_ "github.com/warpstreamlabs/bento/public/components/kafka"
	_ "github.com/warpstreamlabs/bento/public/components/mqtt"
	_ "github.com/warpstreamlabs/bento/public/components/nats"
	_ "github.com/warpstreamlabs/bento/public/components/pure"
	_ "github.com/warpstreamlabs/bento/public/components/prometheus"
)

func main() {
	service.RunCLI(context.Background())
}
