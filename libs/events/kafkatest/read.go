package kafkatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/libs/events"
)

// ReadEvents reads topic from its start until n events that keep accepts (every event
// when keep is nil) have arrived, and returns them in the order read. The test fails when
// they do not arrive within 30 s, or when a message's key is not its event's subject.
func ReadEvents(t testing.TB, brokers []string, topic string, n int, keep func(events.Envelope) bool) []events.Envelope {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: fmt.Sprint("test-reader-", time.Now().UnixNano()),
		Topic: topic, StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []events.Envelope
	for len(out) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read %d of %d events from %s: %v", len(out), n, topic, err)
		}
		e, err := events.Decode(m)
		if err != nil {
			t.Fatalf("undecodable event on %s: %v", topic, err)
		}
		if keep != nil && !keep(e) {
			continue
		}
		if string(m.Key) != e.Subject {
			t.Fatalf("message key %q, want the subject %q", m.Key, e.Subject)
		}
		out = append(out, e)
	}
	return out
}

// OfSubject keeps the events of one subject.
func OfSubject(subject string) func(events.Envelope) bool {
	return func(e events.Envelope) bool { return e.Subject == subject }
}
