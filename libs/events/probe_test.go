package events_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/customerapi/platform/libs/events/kafkatest"
)

// Readiness checks reuse their connections: 100 checks leave the number of connections
// to the broker as it was (each check used to build a transport that was never closed,
// so every probe of every pod added connections that stayed open).
func TestProbeDoesNotLeakConnections(t *testing.T) {
	b := kafkatest.Start(t)
	cfg := b.Config()
	probe := cfg.NewProbe()
	if err := probe.Check(context.Background()); err != nil {
		t.Fatalf("the first check must reach the broker: %v", err)
	}
	before := conns(t, b.Port())
	for i := range 100 {
		if err := probe.Check(context.Background()); err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
	}
	if after := conns(t, b.Port()); after > before+5 {
		t.Fatalf("100 readiness checks opened %d connections to the broker that stayed open (before %d, after %d)", after-before, before, after)
	}
	probe.Close()
	for i := range 5 {
		if err := cfg.EnsureTopics(context.Background(), fmt.Sprintf("probe-topic-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if after := conns(t, b.Port()); after > before+5 {
		t.Fatalf("creating topics left %d connections open (before %d)", after, before)
	}
}

func conns(t *testing.T, port int) int {
	t.Helper()
	n, err := kafkatest.Connections(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
