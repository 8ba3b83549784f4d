// A Kafka wire-protocol broker for tests (gateway/streams/ tests): franz-go's in-memory kfake
// cluster on a port given by flag. It prints `listening <host:port>` once it accepts connections
// and runs until SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "port of the broker (0 picks a free one)")
	partitions := flag.Int("partitions", 2, "partitions of each topic named by -topics")
	topics := flag.String("topics", "", "comma-separated topics created at start (others are auto-created)")
	flag.Parse()

	opts := []kfake.Opt{kfake.Ports(*port), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(*partitions)}
	if *topics != "" {
		opts = append(opts, kfake.SeedTopics(int32(*partitions), strings.Split(*topics, ",")...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	defer c.Close()
	fmt.Println("listening", c.ListenAddrs()[0])

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
