package pgtest

import (
	"context"
	"fmt"
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

// Run is what EXPLAIN (ANALYZE, BUFFERS) says of one run of a statement.
type Run struct {
	// Pages counts the shared buffers the whole plan hit or read.
	Pages int
	// Rows counts the rows the plan's top node returned.
	Rows int
}

// Rower is what Explain sends the statement on: a pool, a connection or a transaction.
type Rower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Explain runs s again under EXPLAIN (ANALYZE, BUFFERS) on q and returns what the plan
// says. The statement is executed: a write is done again (run it in a transaction to roll
// it back).
func Explain(ctx context.Context, q Rower, s Statement) (Run, error) {
	var plan []struct {
		Plan struct {
			Hit  int     `json:"Shared Hit Blocks"`
			Read int     `json:"Shared Read Blocks"`
			Rows float64 `json:"Actual Rows"`
		} `json:"Plan"`
	}
	if err := q.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+s.SQL, s.Args...).Scan(&plan); err != nil {
		return Run{}, fmt.Errorf("explain %s: %w", s.SQL, err)
	}
	if len(plan) == 0 {
		return Run{}, fmt.Errorf("explain %s: no plan", s.SQL)
	}
	return Run{Pages: plan[0].Plan.Hit + plan[0].Plan.Read, Rows: int(plan[0].Plan.Rows)}, nil
}
