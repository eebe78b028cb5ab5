package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/worker"
)

// ListenLoop runs fn whenever a notification arrives on channel, once at start (and after
// every reconnection, for what happened meanwhile), and at the latest after the wait fn
// returned (or idle when it returned 0). It is how workers wake on new rows instead of
// polling: writers NOTIFY in their transaction, and the notification arrives at commit.
// It listens on a dedicated connection, reconnects with backoff, and returns when ctx ends.
func ListenLoop(ctx context.Context, pool *pgxpool.Pool, channel string, idle time.Duration, log *slog.Logger,
	fn func(ctx context.Context) (time.Duration, error)) {
	backoff := worker.Backoff{First: 200 * time.Millisecond}
	for ctx.Err() == nil {
		err := listenOnce(ctx, pool, channel, idle, fn)
		if ctx.Err() != nil {
			return
		}
		log.Warn("listener interrupted; reconnecting", slog.String("channel", channel), slog.Any("error", err),
			slog.Duration("backoff", backoff.Peek()))
		backoff.Sleep(ctx)
	}
}

func listenOnce(ctx context.Context, pool *pgxpool.Pool, channel string, idle time.Duration,
	fn func(ctx context.Context) (time.Duration, error)) error {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	conn := pc.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+quoteIdent(channel)); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	for {
		wait, err := fn(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if wait <= 0 || wait > idle {
			wait = idle
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		err = conn.PgConn().WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !pgconn.Timeout(err) {
			return fmt.Errorf("wait: %w", err)
		}
	}
}

func quoteIdent(s string) string {
	out := []byte{'"'}
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			out = append(out, '"')
		}
		out = append(out, s[i])
	}
	return string(append(out, '"'))
}
