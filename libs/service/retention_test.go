package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/libs/service/servicetest"
)

// Every service prunes its inbox and its dead letters: processed event IDs older than
// INBOX_RETENTION and dead letters older than DEAD_LETTER_RETENTION are deleted by a
// background task; younger rows stay.
func TestServicePrunesTheInboxAndDeadLetters(t *testing.T) {
	s := servicetest.Start(t, "whoami", nil, whoami, servicetest.Options{Configure: func(c *service.Config) {
		c.InboxRetention, c.DeadLetterRetention, c.RetentionInterval = time.Hour, 2*time.Hour, 50*time.Millisecond
	}})
	ctx := context.Background()
	if _, err := s.Runtime.Pool.Exec(ctx, `
		INSERT INTO inbox (consumer, event_id, processed_at) VALUES
			('c', 'old', now() - interval '61 minutes'), ('c', 'young', now() - interval '59 minutes');
		INSERT INTO inbox_dead_letters (consumer, topic, kafka_partition, kafka_offset, error, value, created_at) VALUES
			('c', 't', 0, 1, 'old', 'x', now() - interval '121 minutes'), ('c', 't', 0, 2, 'young', 'x', now() - interval '90 minutes');
		INSERT INTO outbox_dead_letters (id, txid, topic, event_id, msg_key, value, headers, created_at, error, dead_at) VALUES
			(1, '1', 't', 'old', 'k', 'x', '{}', now() - interval '1 day', 'e', now() - interval '121 minutes'),
			(2, '1', 't', 'young', 'k', 'x', '{}', now() - interval '1 day', 'e', now() - interval '90 minutes')`); err != nil {
		t.Fatal(err)
	}
	const left = `SELECT (SELECT string_agg(event_id, ',') FROM inbox) || ' ' ||
		(SELECT string_agg(error, ',') FROM inbox_dead_letters) || ' ' || (SELECT string_agg(event_id, ',') FROM outbox_dead_letters)`
	var rows string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := s.Runtime.Pool.QueryRow(ctx, left).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows == "young young young" {
			return
		}
	}
	t.Fatalf("inbox, inbox_dead_letters, outbox_dead_letters hold %q after 5 s; want %q: the rule: rows older than their retention are pruned, younger rows stay", rows, "young young young")
}
