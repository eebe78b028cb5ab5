package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
)

// An event whose Kafka message would exceed the limit is refused when it is added, and
// the change that causes it rolls back with it; an event right at the limit is accepted.
func TestWriterRefusesAnEventTooLargeForKafka(t *testing.T) {
	pool, _ := newPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE things (id text PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	e, err := events.New("t", "thing.created", "a", map[string]string{"text": strings.Repeat("<", 1000)})
	if err != nil {
		t.Fatal(err)
	}
	// The message as the relay sends it: every '<' escaped as \u003c, the headers included.
	value, _ := json.Marshal(e)
	size := events.MessageSize([]byte(e.Subject), value, e.Headers(ctx))
	if size < 6000 {
		t.Fatalf("message size %d does not count the escaped value", size)
	}
	create := func(w outbox.Writer, id string) error {
		return postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO things (id) VALUES ($1)", id); err != nil {
				return err
			}
			return w.Add(ctx, tx, "things", e)
		})
	}
	err = create(outbox.Writer{MaxMessageBytes: size - 1}, "over")
	var tooLarge *events.TooLargeError
	if !errors.Is(err, events.ErrTooLarge) || !errors.As(err, &tooLarge) || tooLarge.Size != size || tooLarge.Max != size-1 {
		t.Fatalf("Add of a %d-byte event under a limit of %d: %v, want events.ErrTooLarge", size, size-1, err)
	}
	b := &pgx.Batch{}
	if err := (outbox.Writer{MaxMessageBytes: size - 1}).Queue(ctx, b, "things", e); !errors.Is(err, events.ErrTooLarge) || b.Len() != 0 {
		t.Fatalf("Queue of a too large event: %v with %d queued, want events.ErrTooLarge and nothing queued", err, b.Len())
	}
	var things, rows int
	if err := pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM things), (SELECT count(*) FROM outbox)").Scan(&things, &rows); err != nil {
		t.Fatal(err)
	}
	if things != 0 || rows != 0 {
		t.Fatalf("a refused event left %d changed rows and %d outbox rows: the change must roll back with it", things, rows)
	}
	if err := create(outbox.Writer{MaxMessageBytes: size}, "at"); err != nil {
		t.Fatalf("an event of exactly the limit (%d bytes) was refused: %v", size, err)
	}
	if err := create(outbox.Writer{}, "default"); err != nil {
		t.Fatalf("the default limit refused a %d-byte event: %v", size, err)
	}
}
