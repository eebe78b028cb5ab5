package main

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// start runs the broker with the arguments until the test ends and returns its address.
func start(t *testing.T, args []string, getenv func(string) string) net.Addr {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, getenv, &bytes.Buffer{}, ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case a := <-ready:
		return a
	case err := <-done:
		t.Fatalf("devbroker did not start: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("devbroker did not start within 10 s")
	}
	return nil
}

// TestProduceAndConsumeThroughTheAdvertisedHost: a client that knows only the bootstrap
// address produces and consumes, following the advertised host the broker hands out in
// its metadata (the listener is on every address; the advertised name is loopback's).
func TestProduceAndConsumeThroughTheAdvertisedHost(t *testing.T) {
	addr := start(t, []string{"-listen", "0.0.0.0:0", "-advertise", "localhost"}, env(nil))
	_, port, _ := net.SplitHostPort(addr.String())
	if !strings.HasPrefix(addr.String(), "0.0.0.0:") && !strings.HasPrefix(addr.String(), "[::]:") {
		t.Fatalf("listening on %s, want every address", addr)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:"+port), kgo.ConsumeTopics("devbroker-test"),
		kgo.AllowAutoTopicCreation(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "devbroker-test", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record consumed: %v", err)
		}
		var got []string
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if len(got) > 0 {
			if got[0] != "hello" {
				t.Fatalf("consumed %q, want hello", got)
			}
			break
		}
	}
	// The metadata names the advertised host, not the listener's address.
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].Host != "localhost" || strconv.Itoa(int(resp.Brokers[0].Port)) != port {
		t.Fatalf("metadata advertises %+v, want localhost:%s", resp.Brokers, port)
	}
}

// TestDataSurvivesARestart: with a data directory, what was produced is there after the
// broker stops and starts again (a pod's restart on its volume).
func TestDataSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	produce := func() string {
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan net.Addr, 1)
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-advertise", "127.0.0.1", "-data", dir}, env(nil), &bytes.Buffer{}, ready)
		}()
		a := <-ready
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		cl, err := kgo.NewClient(kgo.SeedBrokers(a.String()), kgo.AllowAutoTopicCreation())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer pcancel()
		if err := cl.ProduceSync(pctx, &kgo.Record{Topic: "kept", Value: []byte("v1")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		return a.String()
	}
	produce()
	addr := start(t, []string{"-listen", "127.0.0.1:0", "-advertise", "127.0.0.1", "-data", dir}, env(nil))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr.String()), kgo.ConsumeTopics("kept"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("the record produced before the restart is gone: %v", err)
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) { n++ })
		if n > 0 {
			return
		}
	}
}

func TestParse(t *testing.T) {
	c, err := parse(nil, env(map[string]string{"DEVBROKER_ADVERTISED_HOST": "kafka-0.kafka", "DEVBROKER_DATA_DIR": "/data", "DEVBROKER_PARTITIONS": "6"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.listen != "0.0.0.0:9092" || c.advertise != "kafka-0.kafka" || c.dataDir != "/data" || c.partitions != 6 {
		t.Fatalf("from the environment: %+v", c)
	}
	c, err = parse([]string{"-advertise", "x", "-partitions", "2"}, env(map[string]string{"DEVBROKER_ADVERTISED_HOST": "y"}))
	if err != nil || c.advertise != "x" || c.partitions != 2 {
		t.Fatalf("flags over the environment: %+v, %v", c, err)
	}
	for _, args := range [][]string{{"-partitions", "0"}, {"-partitions", "x"}, {"extra"}, {"-nope"}} {
		if _, err := parse(args, env(nil)); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-version"}, env(nil), &out, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "devbroker ") {
		t.Fatalf("-version printed %q", out.String())
	}
}
