package postgres_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/testwait"
)

func TestListenLoopWakesOnNotifyNotOnTimer(t *testing.T) {
	pool := pgtest.NewPool(t)
	var calls atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		postgres.ListenLoop(ctx, pool, "work", time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)),
			func(context.Context) (time.Duration, error) { calls.Add(1); return 0, nil })
		close(done)
	}()
	defer func() { cancel(); <-done }()
	waitCalls(t, &calls, 1) // the start-up run
	for i := 2; i <= 4; i++ {
		if _, err := pool.Exec(context.Background(), "SELECT pg_notify('work', '')"); err != nil {
			t.Fatal(err)
		}
		waitCalls(t, &calls, int32(i))
	}
}

func TestListenLoopHonoursTheReturnedWait(t *testing.T) {
	pool := pgtest.NewPool(t)
	var calls atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		postgres.ListenLoop(ctx, pool, "timer", time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)),
			func(context.Context) (time.Duration, error) { calls.Add(1); return 20 * time.Millisecond, nil })
		close(done)
	}()
	defer func() { cancel(); <-done }()
	waitCalls(t, &calls, 5)
}

func waitCalls(t *testing.T, calls *atomic.Int32, n int32) {
	t.Helper()
	testwait.For(t, 5*time.Second, fmt.Sprintf("%d calls of the work function", n), func() (bool, string) {
		got := calls.Load()
		return got >= n, fmt.Sprintf("%d calls", got)
	})
}
