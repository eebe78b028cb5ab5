package pgtest

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// RoundTrips is a pgx tracer that counts the round trips to the server: each statement
// sent on its own (BEGIN and COMMIT included) is one, and so is each batch, whatever it
// holds. Tests use it to pin how many waits for the server a write costs.
type RoundTrips struct{ n atomic.Int64 }

// TraceQueryStart counts a statement sent on its own.
func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}

// TraceQueryEnd does nothing.
func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts a batch.
func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}

// TraceBatchQuery does nothing: a batch's statements share its round trip.
func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd does nothing.
func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Take returns the round trips counted since the last Take.
func (r *RoundTrips) Take() int64 { return r.n.Swap(0) }
