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

// Listener is what Listen drives on its connection: the one LISTEN loop of the platform,
// which workers wake on instead of polling (writers NOTIFY in their transaction; the
// notification arrives at commit).
type Listener interface {
	// Listening is called once LISTEN holds: at start and after every reconnection, when
	// notifications may have been missed meanwhile.
	Listening()
	// Wait is called before each wait for a notification (and so after every
	// notification and every timeout): it does what is due and returns the longest wait
	// before it is called again; an error ends the connection, which is made again.
	Wait(ctx context.Context) (time.Duration, error)
	// Notified is called with each notification's payload.
	Notified(payload string)
}

// Listen listens on channel on a dedicated connection and drives l until ctx ends,
// reconnecting with backoff. A wait of 0 or longer than idle is idle.
func Listen(ctx context.Context, pool *pgxpool.Pool, channel string, idle time.Duration, log *slog.Logger, l Listener) {
	backoff := worker.Backoff{First: 200 * time.Millisecond}
	for ctx.Err() == nil {
		err := listenOnce(ctx, pool, channel, idle, l)
		if ctx.Err() != nil {
			return
		}
		log.Warn("listener interrupted; reconnecting", slog.String("channel", channel), slog.Any("error", err),
			slog.Duration("backoff", backoff.Peek()))
		backoff.Sleep(ctx)
	}
}

// ListenLoop runs fn whenever a notification arrives on channel, once at start (and after
// every reconnection, for what happened meanwhile), and at the latest after the wait fn
// returned (or idle when it returned 0): Listen for a worker that needs no payload.
func ListenLoop(ctx context.Context, pool *pgxpool.Pool, channel string, idle time.Duration, log *slog.Logger,
	fn func(ctx context.Context) (time.Duration, error)) {
	Listen(ctx, pool, channel, idle, log, loop(fn))
}

// loop is a Listener that only runs a function before each wait.
type loop func(ctx context.Context) (time.Duration, error)

func (loop) Listening()                                        {}
func (f loop) Wait(ctx context.Context) (time.Duration, error) { return f(ctx) }
func (loop) Notified(string)                                   {}

func listenOnce(ctx context.Context, pool *pgxpool.Pool, channel string, idle time.Duration, l Listener) error {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	conn := pc.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+quoteIdent(channel)); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	l.Listening()
	for {
		wait, err := l.Wait(ctx)
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
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !pgconn.Timeout(err):
			return fmt.Errorf("wait: %w", err)
		case err == nil:
			l.Notified(n.Payload)
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
