package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

func TestCoalescerCommitsConcurrentWritesTogether(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE items (id int PRIMARY KEY, note text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	c := postgres.NewCoalescer(pool, 2, 64)
	const writers, each = 32, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := g*each + i
				b := &pgx.Batch{}
				b.Queue(`INSERT INTO items (id, note) VALUES ($1, $2)`, id, "row")
				b.Queue(`UPDATE items SET note = $2 WHERE id = $1`, id, fmt.Sprint("row ", id))
				errs <- c.Exec(ctx, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var rows, txs, wrong int
	err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT xmin::text),
		count(*) FILTER (WHERE note <> 'row ' || id) FROM items`).Scan(&rows, &txs, &wrong)
	if err != nil {
		t.Fatal(err)
	}
	if rows != writers*each || wrong != 0 {
		t.Fatalf("%d rows (%d with the wrong note), want %d", rows, wrong, writers*each)
	}
	if txs >= rows {
		t.Fatalf("%d rows in %d transactions: nothing was coalesced", rows, txs)
	}
	t.Logf("%d writes in %d transactions", rows, txs)
}

func TestCoalescerGivesEachWriteItsOwnOutcome(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE items (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO items VALUES (0)`); err != nil {
		t.Fatal(err)
	}
	c := postgres.NewCoalescer(pool, 1, 64)
	// Every tenth write collides with the existing row; the others must commit anyway.
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := i + 1
			if i%10 == 0 {
				id = 0
			}
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO items VALUES ($1)`, id)
			errs[i] = c.Exec(ctx, b)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if collide := i%10 == 0; collide != postgres.IsCode(err, postgres.UniqueViolation) {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if want := 1 + n - n/10; rows != want {
		t.Fatalf("%d rows, want %d", rows, want)
	}

	// A write whose context ended before it was sent is not written.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO items VALUES (-1)`)
	if err := c.Exec(cancelled, b); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled write: %v", err)
	}
}
