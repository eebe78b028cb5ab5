package outbox_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/testwait"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// recorder is a Publisher that keeps what it was given and can be made to fail.
type recorder struct {
	mu     sync.Mutex
	msgs   []kafka.Message
	fail   bool
	failed int // publishes refused while failing
	got    chan struct{}
}

func newRecorder() *recorder { return &recorder{got: make(chan struct{}, 1000)} }

func (r *recorder) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		r.failed++
		return fmt.Errorf("broker down")
	}
	r.msgs = append(r.msgs, msgs...)
	for range msgs {
		r.got <- struct{}{}
	}
	return nil
}

func (r *recorder) setFail(v bool) { r.mu.Lock(); r.fail = v; r.mu.Unlock() }

func (r *recorder) failures() int { r.mu.Lock(); defer r.mu.Unlock(); return r.failed }

// waitFailures waits until the relay has tried to publish n times and been refused.
func (r *recorder) waitFailures(t *testing.T, n int) {
	t.Helper()
	testwait.For(t, 10*time.Second, fmt.Sprintf("%d refused publishes", n), func() (bool, string) {
		got := r.failures()
		return got >= n, fmt.Sprintf("%d refused", got)
	})
}

func (r *recorder) keys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.msgs {
		e, _ := events.Decode(m)
		out = append(out, e.Subject)
	}
	return out
}

func (r *recorder) wait(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-r.got:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d messages published", i, n)
		}
	}
}

func write(t *testing.T, pool *pgxpool.Pool, subjects ...string) {
	t.Helper()
	err := postgres.InTx(context.Background(), pool, func(tx pgx.Tx) error {
		var evts []events.Envelope
		for _, s := range subjects {
			e, err := events.New("tenant", "thing.happened", s, map[string]string{"s": s})
			if err != nil {
				return err
			}
			evts = append(evts, e)
		}
		return outbox.Writer{}.Add(context.Background(), tx, "things", evts...)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeOpen begins a transaction that writes one event with subject and leaves it open
// for the test to commit.
func writeOpen(t *testing.T, pool *pgxpool.Pool, subject string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	e, _ := events.New("t", "x", subject, nil)
	if err := (outbox.Writer{}).Add(ctx, tx, "things", e); err != nil {
		t.Fatal(err)
	}
	return tx
}

// selects counts the reads of the outbox begun on the tests' pools (SELECT … FROM outbox):
// how a test knows that the relay has looked at the outbox.
var selects atomic.Int64

// readsOutbox matches a read of the outbox table (not of outbox_dead_letters).
var readsOutbox = regexp.MustCompile(`(?s)^\s*SELECT\b.*\bFROM outbox\b`)

// counted is a pool's tracer in these tests: the outbox's Wakeup, counting reads of the
// outbox in selects and keeping them, and the relay's deletes, in reads.
type counted struct {
	*outbox.Wakeup
	reads *pgtest.StatementLog
}

func (c counted) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if readsOutbox.MatchString(data.SQL) {
		selects.Add(1)
		c.reads.TraceQueryStart(ctx, conn, data)
	}
	if strings.HasPrefix(data.SQL, "DELETE FROM outbox ") {
		c.reads.TraceQueryStart(ctx, conn, data)
	}
	return c.Wakeup.TraceQueryStart(ctx, conn, data)
}

// newPool makes a database with the outbox schema and a pool whose commits wake the relay
// (as service runtimes set it up); the Wakeup is returned for the relay.
func newPool(t *testing.T) (*pgxpool.Pool, *outbox.Wakeup) {
	pool, wake, _ := newLoggedPool(t)
	return pool, wake
}

// newLoggedPool is newPool that also logs the reads of the outbox sent on the pool.
func newLoggedPool(t *testing.T) (*pgxpool.Pool, *outbox.Wakeup, *pgtest.StatementLog) {
	t.Helper()
	wake := outbox.NewWakeup()
	reads := &pgtest.StatementLog{}
	ctx := context.Background()
	pool, err := postgres.ConnectWith(ctx, pgtest.NewDatabase(t), func(c *pgxpool.Config) { c.ConnConfig.Tracer = counted{wake, reads} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := postgres.Migrate(ctx, pool, nil, outbox.Migrations); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { wake.Run(wctx, pool, quiet); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return pool, wake, reads
}

func runRelay(t *testing.T, pool *pgxpool.Pool, wake *outbox.Wakeup, pub outbox.Publisher, create ...func(context.Context, ...string) error) {
	t.Helper()
	// A long backstop: the tests must pass on wake-ups alone.
	r := &outbox.Relay{Pool: pool, Publisher: pub, Log: quiet, Wakeup: wake, IdleWake: time.Minute}
	if len(create) > 0 {
		r.CreateTopics = create[0]
	}
	startRelay(t, r)
}

// startRelay runs r until the test ends.
func startRelay(t *testing.T, r *outbox.Relay) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func pending(t *testing.T, pool *pgxpool.Pool) int {
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM outbox").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRelayPublishesInCommitOrderAndDeletes(t *testing.T) {
	pool, wake := newPool(t)
	rec := newRecorder()
	runRelay(t, pool, wake, rec)
	write(t, pool, "a1", "a2")
	write(t, pool, "b1")
	rec.wait(t, 3)
	if got := fmt.Sprint(rec.keys()); got != "[a1 a2 b1]" {
		t.Fatalf("order = %s", got)
	}
	waitPending(t, pool, 0, "the published rows to be deleted")
}

func TestRelayNeverSkipsRowsOfAnOpenTransaction(t *testing.T) {
	pool, wake := newPool(t)
	rec := newRecorder()
	ctx := context.Background()
	// Transaction A starts first and writes, but commits last.
	txA := writeOpen(t, pool, "from-A")
	runRelay(t, pool, wake, rec)
	write(t, pool, "from-B")
	// Three reads of the outbox begun after B committed hold a fetch of the rows to publish
	// and a read after it: by then that fetch has held B back, or B has been published.
	looks := selects.Load()
	testwait.For(t, 10*time.Second, "the relay to read the outbox three times after B committed", func() (bool, string) {
		n := selects.Load() - looks
		return n >= 3 || len(rec.keys()) > 0, fmt.Sprintf("%d reads, %d published", n, len(rec.keys()))
	})
	if n := len(rec.keys()); n != 0 {
		t.Fatalf("published %d rows while an older transaction was open: B would overtake A", n)
	}
	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, 2)
	if got := fmt.Sprint(rec.keys()); got != "[from-A from-B]" {
		t.Fatalf("order = %s", got)
	}
}

// The relay deletes what it published, and the index entries of deleted rows stay until
// VACUUM, which under steady writes comes about once a minute: a relay that read from the
// start of the (txid, id) index each time walked all of them, and its cost per event grew
// with the time since the last VACUUM. It must read from where it left off.
func TestRelayReadsPastTheRowsItDeleted(t *testing.T) {
	pool, wake, reads := newLoggedPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "ALTER TABLE outbox SET (autovacuum_enabled = off)"); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	runRelay(t, pool, wake, rec)
	const deleted = 30000
	for b := range deleted / 1000 {
		subjects := make([]string, 1000)
		for i := range subjects {
			subjects[i] = fmt.Sprintf("s%d-%d", b, i)
		}
		write(t, pool, subjects...)
	}
	rec.wait(t, deleted)
	waitPending(t, pool, 0, "the published rows to be deleted")

	// An older transaction still open when the relay moves on: its row must not be
	// passed over, nor overtaken by a later one.
	txA := writeOpen(t, pool, "from-A")
	write(t, pool, "from-B")
	looks := selects.Load()
	testwait.For(t, 10*time.Second, "the relay to read the outbox three times after B committed", func() (bool, string) {
		n := selects.Load() - looks
		return n >= 3, fmt.Sprintf("%d reads", n)
	})
	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, 2)
	if got := rec.keys()[deleted:]; fmt.Sprint(got) != "[from-A from-B]" {
		t.Fatalf("after moving on, the relay published %v: the row of the older open transaction must come first", got)
	}
	waitPending(t, pool, 0, "the last rows to be deleted")

	// Analyzed now, the outbox looks empty to the planner (as after autovacuum between
	// bursts), and any index seems as cheap as any other for the relay's delete.
	if _, err := pool.Exec(ctx, "ANALYZE outbox"); err != nil {
		t.Fatal(err)
	}
	reads.Take()
	write(t, pool, "last")
	rec.wait(t, 1)
	waitPending(t, pool, 0, "the last row to be deleted")
	// A drain ends with the read of the oldest row left (the pending-age gauge's).
	var logged []pgtest.Statement
	testwait.For(t, 10*time.Second, "the relay's drain to end", func() (bool, string) {
		logged = append(logged, reads.Take()...)
		return slices.ContainsFunc(logged, func(r pgtest.Statement) bool { return strings.Contains(r.SQL, "LIMIT 1") }),
			fmt.Sprintf("%d reads", len(logged))
	})
	checked := 0
	for _, r := range logged {
		if !strings.Contains(r.SQL, "ORDER BY txid") && !strings.HasPrefix(r.SQL, "DELETE") {
			continue // the test's own counts
		}
		checked++
		run, err := pgtest.Explain(ctx, pool, r)
		if err != nil {
			t.Fatal(err)
		}
		// The index holds about 100 pages of entries of deleted rows (the delete, run
		// again here, finds its row gone but walks the same entries).
		if pages := run.Pages; pages > 12 {
			t.Errorf("a read or delete of the relay after %d deleted rows touched %d pages: it walked the deleted rows' "+
				"index entries instead of starting where the relay left off\n%s %v", deleted, pages, r.SQL, r.Args)
		}
	}
	if checked < 3 {
		t.Fatalf("only %d of the relay's statements were checked; want its fetch, its delete and its read of the oldest row", checked)
	}
}

// A batch shorter than the relay's batch size held every row its read could see: the
// drain ends there with its read of the oldest row left, instead of reading the outbox
// again to find nothing (under load, every second read). A row committed meanwhile
// pokes the relay, whose wait then returns at once.
func TestADrainEndsAfterAShortBatch(t *testing.T) {
	pool, wake, reads := newLoggedPool(t)
	rec := newRecorder()
	runRelay(t, pool, wake, rec)
	write(t, pool, "first")
	rec.wait(t, 1)
	waitPending(t, pool, 0, "the first row to be deleted")
	var logged []pgtest.Statement
	oldest := func(r pgtest.Statement) bool { return strings.Contains(r.SQL, "LIMIT 1") }
	testwait.For(t, 10*time.Second, "the first drain to end", func() (bool, string) {
		logged = append(logged, reads.Take()...)
		return slices.ContainsFunc(logged, oldest), fmt.Sprintf("%d reads", len(logged))
	})

	write(t, pool, "a1", "a2")
	rec.wait(t, 2)
	logged = nil
	testwait.For(t, 10*time.Second, "the drain to end", func() (bool, string) {
		logged = append(logged, reads.Take()...)
		return slices.ContainsFunc(logged, oldest), fmt.Sprintf("%d reads", len(logged))
	})
	fetches := 0
	for _, r := range logged {
		if strings.Contains(r.SQL, "LIMIT $1") {
			fetches++
		}
	}
	if fetches != 1 {
		t.Errorf("a drain of one short batch must read the outbox once before its read of the oldest row: read it %d times", fetches)
	}
}

func TestRelayRollbackPublishesNothing(t *testing.T) {
	pool, wake := newPool(t)
	rec := newRecorder()
	runRelay(t, pool, wake, rec)
	ctx := context.Background()
	tx, _ := pool.Begin(ctx)
	e, _ := events.New("t", "x", "rolled-back", nil)
	if err := (outbox.Writer{}).Add(ctx, tx, "things", e); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	write(t, pool, "kept")
	rec.wait(t, 1)
	// Once the outbox is empty there is no row left that could be published later.
	waitPending(t, pool, 0, "the published row to be deleted")
	if got := fmt.Sprint(rec.keys()); got != "[kept]" {
		t.Fatalf("published %s", got)
	}
}

func TestRelayKeepsRowsWhileKafkaIsDown(t *testing.T) {
	pool, wake := newPool(t)
	rec := newRecorder()
	rec.setFail(true)
	runRelay(t, pool, wake, rec)
	write(t, pool, "e1", "e2")
	rec.waitFailures(t, 2) // a refusal, then a retry refused too
	if n := pending(t, pool); n != 2 {
		t.Fatalf("outbox holds %d rows while Kafka is down, want 2", n)
	}
	rec.setFail(false)
	rec.wait(t, 2)
	waitPending(t, pool, 0, "the rows to be published once Kafka is back")
}

func TestOnlyOneRelayLeads(t *testing.T) {
	pool, wake := newPool(t)
	a, b := newRecorder(), newRecorder()
	runRelay(t, pool, wake, a)
	runRelay(t, pool, nil, b)
	for i := 0; i < 20; i++ {
		write(t, pool, fmt.Sprintf("k%02d", i))
	}
	testwait.For(t, 10*time.Second, "20 rows published", func() (bool, string) {
		na, nb := len(a.keys()), len(b.keys())
		return na+nb >= 20, fmt.Sprintf("%d by one relay, %d by the other", na, nb)
	})
	if len(a.keys()) != 0 && len(b.keys()) != 0 {
		t.Fatalf("both relays published: %d and %d", len(a.keys()), len(b.keys()))
	}
}

func TestRelayToRealBroker(t *testing.T) {
	pool, wake := newPool(t)
	broker := kafkatest.Start(t)
	cfg := broker.Config()
	w := cfg.Writer()
	defer w.Close()
	runRelay(t, pool, wake, w, cfg.EnsureTopics)
	write(t, pool, "s1", "s1", "s2")
	waitPending(t, pool, 0, "the rows to be published")
	// Read every partition and collect the subjects seen.
	seen := map[string]int{}
	for part := 0; part < 3; part++ {
		pr := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Brokers, Topic: "things", Partition: part, MaxWait: 100 * time.Millisecond})
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			m, err := pr.ReadMessage(ctx)
			cancel()
			if err != nil {
				break
			}
			e, err := events.Decode(m)
			if err != nil {
				t.Fatal(err)
			}
			seen[e.Subject]++
			if string(m.Key) != e.Subject {
				t.Fatalf("key %q != subject %q", m.Key, e.Subject)
			}
		}
		pr.Close()
	}
	if seen["s1"] != 2 || seen["s2"] != 1 {
		t.Fatalf("seen = %v", seen)
	}
}

// waitPending waits until the outbox holds want rows, failing with what was awaited.
func waitPending(t *testing.T, pool *pgxpool.Pool, want int, what string) {
	t.Helper()
	testwait.For(t, 10*time.Second, what, func() (bool, string) {
		n := pending(t, pool)
		return n == want, fmt.Sprintf("%d rows in the outbox", n)
	})
}

func TestQueuedBatchCommitsAtomicallyAndWakesTheRelay(t *testing.T) {
	pool, wake := newPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE things (id text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	runRelay(t, pool, wake, rec)
	send := func(id string) error {
		e, _ := events.New("t", "thing.created", id, nil)
		b := &pgx.Batch{}
		b.Queue("INSERT INTO things (id) VALUES ($1)", id)
		if err := (outbox.Writer{}).Queue(ctx, b, "things", e); err != nil {
			return err
		}
		return pool.SendBatch(ctx, b).Close()
	}
	if err := send("a"); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, 1)
	// A failing statement rolls the whole batch back: no row, no event.
	if err := send("a"); err == nil {
		t.Fatal("duplicate insert succeeded")
	}
	if err := send("b"); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, 1)
	if got := fmt.Sprint(rec.keys()); got != "[a b]" {
		t.Fatalf("published %s", got)
	}
}
