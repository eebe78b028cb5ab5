package outbox

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/worker"
)

// Wakeup starts the relay as soon as outbox rows are committed, without writers sending
// NOTIFY inside their own transactions. PostgreSQL serialises the commits of every
// transaction that sends NOTIFY (a database-wide lock held until the commit is flushed),
// which would cap a service's writes at one commit per disk flush and defeat group
// commit. Instead Wakeup is a pgx query tracer: it sees a commit of a transaction that
// inserted outbox rows and pokes the relay, directly when the local relay leads, else with
// one NOTIFY from its own small transaction (synchronous_commit off), coalescing pokes.
type Wakeup struct {
	pokes   worker.Waker
	local   worker.Waker
	leading atomic.Bool
	dirty   sync.Map // *pgx.Conn → struct{}: the open transaction inserted outbox rows
}

// NewWakeup returns a Wakeup; install it as the pool's tracer (ConnConfig.Tracer), run it
// with Run, and give it to the Relay.
func NewWakeup() *Wakeup {
	return &Wakeup{pokes: worker.NewWaker(), local: worker.NewWaker()}
}

// Poke signals that outbox rows were committed. It never blocks.
func (w *Wakeup) Poke() { w.pokes.Wake() }

type traceKey struct{}

const (
	traceInsert   = 1
	traceCommit   = 2
	traceRollback = 3
)

// TraceQueryStart implements pgx.QueryTracer.
func (w *Wakeup) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	switch sql := data.SQL; {
	case sql == "commit":
		return context.WithValue(ctx, traceKey{}, traceCommit)
	case sql == "rollback":
		return context.WithValue(ctx, traceKey{}, traceRollback)
	case strings.Contains(sql, "INSERT INTO outbox "):
		return context.WithValue(ctx, traceKey{}, traceInsert)
	}
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (w *Wakeup) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	kind, _ := ctx.Value(traceKey{}).(int)
	switch kind {
	case traceInsert:
		if data.Err != nil {
			return
		}
		if conn.PgConn().TxStatus() == 'I' { // not in a transaction: already committed
			w.Poke()
			return
		}
		w.dirty.Store(conn, struct{}{})
	case traceCommit:
		if _, ok := w.dirty.LoadAndDelete(conn); ok && data.Err == nil && data.CommandTag.String() == "COMMIT" {
			w.Poke()
		}
	case traceRollback:
		w.dirty.Delete(conn)
	}
}

type batchKey struct{}

// TraceBatchStart implements pgx.BatchTracer.
func (w *Wakeup) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, batchKey{}, new(bool))
}

// TraceBatchQuery implements pgx.BatchTracer.
func (w *Wakeup) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	if wrote, ok := ctx.Value(batchKey{}).(*bool); ok && data.Err == nil && strings.Contains(data.SQL, "INSERT INTO outbox ") {
		*wrote = true
	}
}

// TraceBatchEnd implements pgx.BatchTracer: a batch outside a transaction has committed
// when it ends without error; inside one, the commit decides.
func (w *Wakeup) TraceBatchEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchEndData) {
	wrote, ok := ctx.Value(batchKey{}).(*bool)
	if !ok || !*wrote || data.Err != nil {
		return
	}
	if conn.PgConn().TxStatus() == 'I' {
		w.Poke()
		return
	}
	w.dirty.Store(conn, struct{}{})
}

var (
	_ pgx.QueryTracer = (*Wakeup)(nil)
	_ pgx.BatchTracer = (*Wakeup)(nil)
)

// Run turns pokes into wake-ups until ctx ends.
func (w *Wakeup) Run(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.pokes.C():
		}
		if w.leading.Load() {
			w.local.Wake()
			continue
		}
		// The leader runs in another replica: tell it through the database. Losing this
		// notification in a crash costs nothing but latency, so it need not wait for a flush.
		nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := pool.Exec(nctx, "BEGIN; SET LOCAL synchronous_commit TO OFF; SELECT pg_notify('"+notifyChannel+"', ''); COMMIT")
		cancel()
		if err != nil && ctx.Err() == nil {
			log.Warn("outbox wake-up notification failed; the relay's backstop will pick the rows up", slog.Any("error", err))
		}
	}
}
