package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/libs/pgcluster"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

func TestWALEventFramesRoundTripAndRefuseDamage(t *testing.T) {
	frame := appendWALEvent(nil, "lever.events", "item_1", []byte(`{"event-id":"evt_1"}`), []byte(`{"id":"evt_1"}`))
	m, err := parseWALEvent(frame)
	if err != nil {
		t.Fatal(err)
	}
	if m.Topic != "lever.events" || string(m.Key) != "item_1" || string(m.Value) != `{"id":"evt_1"}` ||
		len(m.Headers) != 1 || m.Headers[0].Key != "event-id" || string(m.Headers[0].Value) != "evt_1" {
		t.Fatalf("a framed event must come back as the Kafka message it stands for, got %+v", m)
	}
	for name, damaged := range map[string][]byte{
		"empty":            nil,
		"cut in the value": frame[:len(frame)-1],
		"trailing bytes":   append(slices.Clone(frame), 0),
		"length too large": {0xff, 0xff, 0xff, 0xff, 0x0f},
		"headers not JSON": appendWALEvent(nil, "t", "k", []byte("{"), nil),
	} {
		if _, err := parseWALEvent(damaged); err == nil {
			t.Errorf("%s: a damaged frame must be refused, not published", name)
		}
	}
}

// capture is a publisher that keeps what it is given.
type capture struct {
	mu   sync.Mutex
	msgs []kafka.Message
}

func (c *capture) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, msgs...) // kept past the call: they must be the reader's own
	return nil
}

func (c *capture) keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		out = append(out, string(m.Key))
	}
	return out
}

// TestWALReaderPublishesExactlyTheCommittedEvents is the prototype's contract, without
// which the outbox lever's figures would compare unlike work: every event of a committed
// transaction is published once, in commit order, and nothing of a transaction that
// rolled back or of another prefix; the slot is then confirmed past them.
func TestWALReaderPublishesExactlyTheCommittedEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port, err := pgtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// The server runs as its own user when the test runs as root: t.TempDir's parent is
	// closed to it.
	dir, err := os.MkdirTemp("", "walreader-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: dir, Port: port,
		Settings: map[string]string{"wal_level": "logical", "max_wal_senders": "2", "max_replication_slots": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	if err := c.CreateDatabase(ctx, "lever"); err != nil {
		t.Fatal(err)
	}
	pool, err := postgres.Connect(ctx, c.URL("lever"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE PUBLICATION outbox_messages"); err != nil {
		t.Fatal(err)
	}
	pub := &capture{}
	r := &walReader{url: c.URL("lever"), slot: "outbox", publication: "outbox_messages", pub: pub, batch: 2,
		statusEvery: 100 * time.Millisecond}
	conn, err := r.start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	go func() { done <- r.run(rctx, conn) }()

	emit := func(tx pgx.Tx, key string) {
		t.Helper()
		frame := appendWALEvent(nil, "lever.events", key, []byte(`{"event-id":"`+key+`"}`), []byte(`{"k":"`+key+`"}`))
		if _, err := tx.Exec(ctx, emitSQL, frame); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(keys ...string) {
		t.Helper()
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for _, k := range keys {
				emit(tx, k)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	commit("a")
	// Two transactions open at once: the one that commits first is published first.
	late, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	emit(late, "late")
	commit("b", "c", "d") // three events, more than one batch
	rolledBack, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	emit(rolledBack, "never")
	if err := rolledBack.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "SELECT pg_logical_emit_message(true, 'other', 'not an event'::bytea)"); err != nil {
		t.Fatal(err)
	}
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var beforeLast int64 // the last transaction's commit ends past this position
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").Scan(&beforeLast); err != nil {
		t.Fatal(err)
	}
	commit("e")

	want := []string{"a", "b", "c", "d", "late", "e"}
	if err := waitFor(ctx, 20*time.Second, func() bool { return len(pub.keys()) >= len(want) }); err != nil {
		t.Fatalf("published %v, want %v: %v", pub.keys(), want, err)
	}
	time.Sleep(300 * time.Millisecond) // anything more would arrive by now
	if got := pub.keys(); !slices.Equal(got, want) {
		t.Fatalf("the committed events exactly once, in commit order: got %v, want %v", got, want)
	}
	for _, m := range pub.msgs {
		if m.Topic != "lever.events" || string(m.Value) != fmt.Sprintf(`{"k":%q}`, m.Key) {
			t.Fatalf("an event must be published as it was written, got %+v", m)
		}
	}
	if r.published.Load() != int64(len(want)) {
		t.Fatalf("the reader counted %d published events, want %d", r.published.Load(), len(want))
	}
	// The slot is confirmed past every published transaction, so the WAL can go.
	if err := waitFor(ctx, 10*time.Second, func() bool {
		var confirmed int64
		err := pool.QueryRow(ctx, "SELECT confirmed_flush_lsn - '0/0'::pg_lsn FROM pg_replication_slots WHERE slot_name = 'outbox'").Scan(&confirmed)
		return err == nil && confirmed > beforeLast
	}); err != nil {
		t.Fatalf("the slot must be confirmed past the last published transaction: %v", err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("the reader must stop cleanly when told to: %v", err)
	}
}
