package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Coalescer commits concurrent writes together (group commit): the statements of the
// writes that arrive while earlier ones are being sent go out as one batch, which
// PostgreSQL runs as one implicit transaction with one commit, in one round trip. A write
// never waits for company: when a flush slot is free it is sent at once, alone if it is
// alone. When a batch fails, each of its writes is sent again on its own, so a write
// gets exactly its own outcome and one failing write never fails the others.
type Coalescer struct {
	pool    *pgxpool.Pool
	max     int
	slots   chan struct{}
	timeout time.Duration

	mu      sync.Mutex
	pending []*coalescedWrite
}

type coalescedWrite struct {
	batch *pgx.Batch
	taken chan struct{} // closed when a flusher has taken the write
	done  chan error
}

// NewCoalescer returns a Coalescer that sends at most flushes batches at a time, each of
// at most maxWrites writes.
func NewCoalescer(pool *pgxpool.Pool, flushes, maxWrites int) *Coalescer {
	return &Coalescer{pool: pool, max: max(maxWrites, 1), slots: make(chan struct{}, max(flushes, 1)),
		timeout: 30 * time.Second}
}

// Exec runs the statements of b in one transaction that it may share with other writes
// (their results are not read: b holds writes only). It returns when the write is
// committed or has failed. A write already sent when ctx ends is waited for, since it may
// commit.
func (c *Coalescer) Exec(ctx context.Context, b *pgx.Batch) error {
	w := &coalescedWrite{batch: b, taken: make(chan struct{}), done: make(chan error, 1)}
	c.mu.Lock()
	c.pending = append(c.pending, w)
	c.mu.Unlock()
	for {
		select {
		case <-w.taken:
			return <-w.done
		case c.slots <- struct{}{}:
			c.flush() //nolint:contextcheck // the batch carries several requests' writes: none's context may cancel the others'
			<-c.slots
		case <-ctx.Done():
			if c.withdraw(w) {
				return ctx.Err()
			}
			return <-w.done
		}
	}
}

// withdraw removes w from the pending writes; false when a flusher has taken it.
func (c *Coalescer) withdraw(w *coalescedWrite) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, p := range c.pending {
		if p == w {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			return true
		}
	}
	return false
}

// flush takes up to max pending writes and sends them.
func (c *Coalescer) flush() {
	c.mu.Lock()
	n := min(len(c.pending), c.max)
	batch := make([]*coalescedWrite, n)
	copy(batch, c.pending)
	c.pending = append(c.pending[:0], c.pending[n:]...)
	c.mu.Unlock()
	if n == 0 {
		return
	}
	for _, w := range batch {
		close(w.taken)
	}
	// The writes belong to several requests: none of their contexts may cancel the others'.
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	err := c.send(ctx, batch...)
	if err == nil || n == 1 {
		for _, w := range batch {
			w.done <- err
		}
		return
	}
	// Nothing of a failed batch was committed: each write again, alone, for its own outcome.
	for _, w := range batch {
		w.done <- c.send(ctx, w)
	}
}

func (c *Coalescer) send(ctx context.Context, writes ...*coalescedWrite) error {
	b := &pgx.Batch{}
	for _, w := range writes {
		for _, q := range w.batch.QueuedQueries {
			// A fresh QueuedQuery for every send: pgx keeps the prepared statement a
			// query was sent with in it, and a failed batch deallocates that statement.
			b.QueuedQueries = append(b.QueuedQueries, &pgx.QueuedQuery{SQL: q.SQL, Arguments: q.Arguments, Fn: q.Fn})
		}
	}
	if err := c.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("postgres: coalesced write: %w", err)
	}
	return nil
}
