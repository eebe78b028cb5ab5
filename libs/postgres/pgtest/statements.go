package pgtest

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// StatementLog is a pgx tracer that records the statements a connection sends and their
// arguments, for tests that check what was sent (for instance by EXPLAIN-ing each one).
type StatementLog struct {
	mu    sync.Mutex
	stmts []Statement
}

// Statement is one logged statement: its SQL and arguments (query exec modes left out,
// so that the arguments can be sent again as they are).
type Statement struct {
	SQL  string
	Args []any
}

// TraceQueryStart records the statement.
func (l *StatementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	var args []any
	for _, a := range d.Args {
		if _, mode := a.(pgx.QueryExecMode); !mode {
			args = append(args, a)
		}
	}
	l.mu.Lock()
	l.stmts = append(l.stmts, Statement{SQL: d.SQL, Args: args})
	l.mu.Unlock()
	return ctx
}

// TraceQueryEnd does nothing.
func (l *StatementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Take returns the statements logged so far and forgets them.
func (l *StatementLog) Take() []Statement {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.stmts
	l.stmts = nil
	return out
}
