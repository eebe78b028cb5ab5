// Package kafkatest starts the embedded Kafka-protocol broker (kfake) for tests.
package kafkatest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/customerapi/platform/libs/events"
)

// Broker is a running embedded broker.
type Broker struct {
	Cluster *kfake.Cluster
	Addr    string
	port    int
}

// Start runs a one-node broker on a free loopback port for the test's lifetime, with
// topics created on first use.
func Start(t testing.TB) *Broker {
	t.Helper()
	b, err := StartOn(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// StartOn runs a broker on the given port (0 picks one).
func StartOn(port int, opts ...kfake.Opt) (*Broker, error) {
	all := append([]kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port), kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(3)}, opts...)
	c, err := kfake.NewCluster(all...)
	if err != nil {
		return nil, err
	}
	addr := c.ListenAddrs()[0]
	return &Broker{Cluster: c, Addr: addr, port: portOf(addr)}, nil
}

func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// Port is the broker's TCP port.
func (b *Broker) Port() int { return b.port }

// Stop shuts the broker down (idempotent).
func (b *Broker) Stop() { b.Cluster.Close() }

// Config returns Kafka settings pointing at the broker.
func (b *Broker) Config() events.KafkaConfig {
	return events.KafkaConfig{Brokers: []string{b.Addr}, Partitions: 3, ReplicationFactor: 1}
}

// Connections counts the established TCP connections on this machine whose remote port
// is port: the client side of every connection to a broker listening there (tests that
// check a client closes what it opens).
func Connections(port int) (int, error) {
	n := 0
	suffix := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(file)
		for sc.Scan() {
			// sl local_address rem_address st ...; st 01 is ESTABLISHED
			fields := strings.Fields(sc.Text())
			if len(fields) > 3 && fields[3] == "01" && strings.HasSuffix(fields[2], suffix) {
				n++
			}
		}
		file.Close()
	}
	return n, nil
}
