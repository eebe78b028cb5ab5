package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/telemetry/metrictest"
	"github.com/customerapi/platform/libs/testwait"
)

// addEvents commits one transaction that adds the given events to the outbox. The
// write-time limit is the default; the brokers of these tests take less.
func addEvents(t *testing.T, pool *pgxpool.Pool, evts ...events.Envelope) {
	t.Helper()
	err := postgres.InTx(context.Background(), pool, func(tx pgx.Tx) error {
		return outbox.Writer{}.Add(context.Background(), tx, "things", evts...)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// event makes an event of subject whose payload is {"s": s} plus padding bytes.
func event(t *testing.T, subject, s string, padding int) events.Envelope {
	t.Helper()
	e, err := events.New("tenant", "thing.happened", subject, map[string]string{"s": s, "pad": strings.Repeat("p", padding)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// smallBroker starts an embedded broker whose message.max.bytes is max, as a production
// broker or topic may be configured below the producer's own limit.
func smallBroker(t *testing.T, max int) *kafkatest.Broker {
	t.Helper()
	b, err := kafkatest.StartOn(0, kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(max)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

// deadLetters returns the error of each dead-lettered event, by event ID.
func deadLetters(t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), "SELECT event_id, error FROM outbox_dead_letters")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var id, msg string
		if err := rows.Scan(&id, &msg); err != nil {
			t.Fatal(err)
		}
		out[id] = msg
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// payloads lists the "s" of each event's payload.
func payloads(evts []events.Envelope) string {
	var out []string
	for _, e := range evts {
		var p map[string]string
		_ = json.Unmarshal(e.Payload, &p)
		out = append(out, p["s"])
	}
	return fmt.Sprint(out)
}

// A row the broker refuses (over its message.max.bytes, though under the producer's
// limit, as when the limits differ in production) must not hold up the rows after it: it
// moves to outbox_dead_letters, counted, and the others are published in order per key.
func TestRelayDeadLettersWhatTheBrokerRefuses(t *testing.T) {
	pool, wake := newPool(t)
	broker := smallBroker(t, 4096)
	cfg := broker.Config()
	w := cfg.Writer()
	defer w.Close()
	reg := prometheus.NewRegistry()
	startRelay(t, &outbox.Relay{Pool: pool, Publisher: w, Log: quiet, Wakeup: wake, IdleWake: time.Minute,
		CreateTopics: cfg.EnsureTopics, Metrics: outbox.NewMetrics(reg)})
	big := event(t, "k", "big", 8000)
	addEvents(t, pool, event(t, "k", "k1", 0), big, event(t, "k", "k2", 0), event(t, "o", "o1", 0))
	addEvents(t, pool, event(t, "o", "o2", 0))
	waitPending(t, pool, 0, "an empty outbox: a row the broker refuses must leave it so that the rows after it are published")
	if got := payloads(kafkatest.ReadEvents(t, cfg.Brokers, "things", 2, kafkatest.OfSubject("k"))); got != "[k1 k2]" {
		t.Fatalf("subject k published %s, want [k1 k2]: the rows around a refused one go out in order", got)
	}
	if got := payloads(kafkatest.ReadEvents(t, cfg.Brokers, "things", 2, kafkatest.OfSubject("o"))); got != "[o1 o2]" {
		t.Fatalf("subject o published %s, want [o1 o2]", got)
	}
	dead := deadLetters(t, pool)
	if len(dead) != 1 || !strings.Contains(strings.ToLower(dead[big.ID]), "too large") {
		t.Fatalf("dead letters = %v, want only the refused event %s, with the broker's error", dead, big.ID)
	}
	var value []byte
	if err := pool.QueryRow(context.Background(), "SELECT value FROM outbox_dead_letters").Scan(&value); err != nil ||
		!strings.Contains(string(value), big.ID) {
		t.Fatalf("the dead letter must keep the row's message to replay it: %.100s, %v", value, err)
	}
	if n := metrictest.Sum(t, reg, "outbox_dead_letters_total", map[string]string{"topic": "things"}); n != 1 {
		t.Fatalf("outbox_dead_letters_total{topic=things} = %v, want 1", n)
	}
	if n := metrictest.Sum(t, reg, "outbox_dead_letter_rows", nil); n != 1 {
		t.Fatalf("outbox_dead_letter_rows = %v, want 1", n)
	}
	if n := metrictest.Sum(t, reg, "outbox_published_total", nil); n != 4 {
		t.Fatalf("outbox_published_total = %v, want 4", n)
	}
}

// A batch the broker refuses as a whole (small messages that add up to more than its
// message.max.bytes) is no reason to dead-letter any of them: one by one they pass.
func TestRelayDoesNotDeadLetterTheRowsOfARefusedBatch(t *testing.T) {
	pool, wake := newPool(t)
	broker := smallBroker(t, 4096)
	cfg := broker.Config()
	w := cfg.Writer()
	defer w.Close()
	var evts []events.Envelope
	for i := range 30 {
		evts = append(evts, event(t, "k", strconv.Itoa(i), 200))
	}
	addEvents(t, pool, evts...)
	runRelay(t, pool, wake, w, cfg.EnsureTopics)
	waitPending(t, pool, 0, "an empty outbox: the rows of a batch the broker refuses as a whole are published one by one")
	for i, e := range kafkatest.ReadEvents(t, cfg.Brokers, "things", len(evts), nil) {
		if e.ID != evts[i].ID {
			t.Fatalf("event %d is %s, want %s: the rows of a refused batch go out in order", i, e.ID, evts[i].ID)
		}
	}
	if dead := deadLetters(t, pool); len(dead) != 0 {
		t.Fatalf("dead letters = %v: rows the broker takes one by one must not be dead-lettered", dead)
	}
}

// The producer refuses a message over its own limit before sending anything; that row is
// dead-lettered and the others are published.
func TestRelayDeadLettersWhatTheProducerRefuses(t *testing.T) {
	pool, wake := newPool(t)
	broker := kafkatest.Start(t)
	cfg := broker.Config()
	cfg.MaxMessageBytes = 4096
	w := cfg.Writer()
	defer w.Close()
	runRelay(t, pool, wake, w, cfg.EnsureTopics)
	big := event(t, "k", "big", 8000)
	addEvents(t, pool, event(t, "k", "k1", 0), big, event(t, "k", "k2", 0))
	waitPending(t, pool, 0, "an empty outbox: a row the producer refuses must leave it so that the rows after it are published")
	if got := payloads(kafkatest.ReadEvents(t, cfg.Brokers, "things", 2, nil)); got != "[k1 k2]" {
		t.Fatalf("published %s, want [k1 k2]", got)
	}
	if dead := deadLetters(t, pool); len(dead) != 1 || dead[big.ID] == "" {
		t.Fatalf("dead letters = %v, want only %s", dead, big.ID)
	}
}

// A row whose stored headers cannot be decoded can never be sent; it is dead-lettered
// instead of stopping the relay for good.
func TestRelayDeadLettersARowItCannotDecode(t *testing.T) {
	pool, wake := newPool(t)
	rec := newRecorder()
	if _, err := pool.Exec(context.Background(), `INSERT INTO outbox (topic, event_id, msg_key, value, headers)
		VALUES ('things', 'evt_bad', 'k', '{}', '{"n": 1}')`); err != nil {
		t.Fatal(err)
	}
	write(t, pool, "after")
	runRelay(t, pool, wake, rec)
	rec.wait(t, 1)
	waitPending(t, pool, 0, "an empty outbox: an undecodable row must leave it")
	if dead := deadLetters(t, pool); !strings.Contains(dead["evt_bad"], "headers") {
		t.Fatalf("dead letters = %v, want evt_bad with the decoding error", dead)
	}
}

// flaky is a Publisher whose writes fail, message by message, with a given error until
// it is healed.
type flaky struct {
	*recorder
	mu    sync.Mutex
	err   error
	tries int
}

func (f *flaky) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	f.mu.Lock()
	err := f.err
	f.tries++
	f.mu.Unlock()
	if err != nil {
		we := make(kafka.WriteErrors, len(msgs))
		for i := range we {
			we[i] = err
		}
		return we
	}
	return f.recorder.WriteMessages(ctx, msgs...)
}

func (f *flaky) heal() { f.mu.Lock(); f.err = nil; f.mu.Unlock() }

func (f *flaky) attempts() int { f.mu.Lock(); defer f.mu.Unlock(); return f.tries }

// Errors that heal (no leader, no connection) are retried until they do, as before: they
// are never a reason to dead-letter.
func TestRelayRetriesTransientErrorsForever(t *testing.T) {
	for _, cause := range []error{kafka.LeaderNotAvailable, kafka.NotEnoughReplicas, kafka.TopicAuthorizationFailed,
		fmt.Errorf("dial tcp 127.0.0.1:9: connect: connection refused")} {
		t.Run(cause.Error(), func(t *testing.T) {
			pool, wake := newPool(t)
			f := &flaky{recorder: newRecorder(), err: cause}
			runRelay(t, pool, wake, f)
			write(t, pool, "e1", "e2")
			testwait.For(t, 10*time.Second, "the relay's third attempt", func() (bool, string) {
				n := f.attempts()
				return n >= 3, fmt.Sprintf("%d attempts", n)
			})
			if n := pending(t, pool); n != 2 {
				t.Fatalf("outbox holds %d rows while Kafka fails with %v, want 2", n, cause)
			}
			f.heal()
			f.wait(t, 2)
			waitPending(t, pool, 0, "the rows to be published once Kafka heals")
			if dead := deadLetters(t, pool); len(dead) != 0 {
				t.Fatalf("dead letters = %v after %v: a transient error must never dead-letter", dead, cause)
			}
		})
	}
}
