// Command devbroker runs the embedded Kafka-protocol broker that `make run` uses (kfake,
// through libs/events/kafkatest) as a program of its own: the development broker of the
// chart's in-cluster install (helm/customer-api, kafka.implementation=devbroker). One
// node, topics created on first use, its log persisted in a data directory. Not for
// production: production points KAFKA_BROKERS at a real Kafka cluster.
//
//	devbroker [-listen 0.0.0.0:9092] [-advertise HOST] [-data DIR] [-partitions 3]
//	devbroker -version
//
// Every flag can also be set with an environment variable (DEVBROKER_LISTEN,
// DEVBROKER_ADVERTISED_HOST, DEVBROKER_DATA_DIR, DEVBROKER_PARTITIONS). The advertised host
// is what the broker tells clients to connect to (Kafka's advertised.listeners): a name
// the clients resolve, such as a StatefulSet pod's stable DNS name; it defaults to the
// host name. The broker stops on SIGTERM or SIGINT, writing its state to the data
// directory first.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/telemetry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, nil)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "devbroker:", err)
		os.Exit(1)
	}
}

// config is the broker's configuration, from flags over environment variables.
type config struct {
	listen, advertise, dataDir string
	partitions                 int
	version                    bool
}

func parse(args []string, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet("devbroker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	def := func(env, fallback string) string {
		if v := getenv(env); v != "" {
			return v
		}
		return fallback
	}
	host, _ := os.Hostname()
	var c config
	fs.StringVar(&c.listen, "listen", def("DEVBROKER_LISTEN", "0.0.0.0:9092"), "address to listen on")
	fs.StringVar(&c.advertise, "advertise", def("DEVBROKER_ADVERTISED_HOST", host), "host the broker tells clients to connect to")
	fs.StringVar(&c.dataDir, "data", def("DEVBROKER_DATA_DIR", ""), "directory that keeps the broker's log across restarts (none: in memory)")
	parts := def("DEVBROKER_PARTITIONS", "3")
	fs.StringVar(&parts, "partitions", parts, "partitions of a topic created on first use")
	fs.BoolVar(&c.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("flags: %w", err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	n, err := strconv.Atoi(parts)
	if err != nil || n < 1 {
		return c, fmt.Errorf("partitions %q: want a positive number", parts)
	}
	c.partitions = n
	if c.advertise == "" {
		return c, errors.New("no advertised host (-advertise or DEVBROKER_ADVERTISED_HOST)")
	}
	return c, nil
}

// run starts the broker and serves until ctx ends; ready, when not nil, receives the
// address the broker listens on once it accepts connections.
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer, ready chan<- net.Addr) error {
	c, err := parse(args, getenv)
	if err != nil {
		return err
	}
	if c.version {
		_, err := fmt.Fprintf(out, "devbroker %s (revision %s)\n", telemetry.Version, telemetry.Revision)
		return err
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	adv := &advertised{Listener: ln, addr: hostPort(net.JoinHostPort(c.advertise, port))}
	used := false
	opts := []kfake.Opt{
		kfake.DefaultNumPartitions(c.partitions),
		// kfake asks for a loopback listener; it gets ours, whose Addr is the advertised
		// host (kfake advertises its listener's address in metadata and coordinator answers).
		kfake.ListenFn(func(string, string) (net.Listener, error) {
			if used {
				return nil, errors.New("devbroker runs one broker")
			}
			used = true
			return adv, nil
		}),
	}
	if c.dataDir != "" {
		opts = append(opts, kfake.DataDir(c.dataDir))
	}
	b, err := kafkatest.StartOn(0, opts...)
	if err != nil {
		ln.Close()
		return fmt.Errorf("start: %w", err)
	}
	fmt.Fprintf(out, "devbroker: listening on %s, advertised as %s, data %q\n", ln.Addr(), adv.addr, c.dataDir)
	if ready != nil {
		ready <- ln.Addr()
	}
	<-ctx.Done()
	b.Stop()
	fmt.Fprintln(out, "devbroker: stopped")
	return nil
}

// advertised is a listener whose Addr is the host and port the broker advertises.
type advertised struct {
	net.Listener
	addr hostPort
}

func (a *advertised) Addr() net.Addr { return a.addr }

// hostPort is a net.Addr of a host name and port.
type hostPort string

func (hostPort) Network() string  { return "tcp" }
func (h hostPort) String() string { return string(h) }
