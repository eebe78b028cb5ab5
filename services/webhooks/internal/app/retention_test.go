package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// purges answers PurgeFinished from a script of batch sizes and cancels the context once
// the script is used up.
type purges struct {
	sizes  []int64
	err    error
	before []time.Time
	limits []int
	cancel context.CancelFunc
}

func (p *purges) PurgeFinished(_ context.Context, before time.Time, limit int) (int64, error) {
	p.before, p.limits = append(p.before, before), append(p.limits, limit)
	if p.err != nil {
		p.cancel()
		return 0, p.err
	}
	n := p.sizes[0]
	p.sizes = p.sizes[1:]
	if len(p.sizes) == 0 {
		p.cancel()
	}
	return n, nil
}

func TestRetentionDeletesInBatchesUntilOneComesBackShort(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &purges{sizes: []int64{purgeBatch, purgeBatch, 17}, cancel: cancel}
	start := time.Now()
	const keep = 7 * 24 * time.Hour
	runRetention(t, ctx, p, keep)
	end := time.Now()
	if len(p.limits) != 3 {
		t.Fatalf("%d batches; a full batch must be followed by another, a short one ends the pass (want 3)", len(p.limits))
	}
	for i, b := range p.before {
		if b.Before(start.Add(-keep)) || b.After(end.Add(-keep)) {
			t.Fatalf("batch %d deleted deliveries updated before %v; the retention keeps 7 days (%v to %v)",
				i, b, start.Add(-keep), end.Add(-keep))
		}
		if p.limits[i] != purgeBatch {
			t.Fatalf("batch %d limit %d, want %d", i, p.limits[i], purgeBatch)
		}
	}
}

func TestRetentionFailureEndsThePassNotTheLoop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &purges{err: errors.New("database down"), cancel: cancel}
	runRetention(t, ctx, p, time.Hour)
	if len(p.limits) != 1 {
		t.Fatalf("%d attempts after a failure; a failed pass must wait for the next tick, not spin", len(p.limits))
	}
}

// runRetention runs RunRetention until the script of p is used up, failing the test if
// the loop stops calling before that (it would wait for the next hourly pass).
func runRetention(t *testing.T, ctx context.Context, p *purges, keep time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { RunRetention(ctx, p, keep, slog.New(slog.NewTextHandler(io.Discard, nil))); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the pass stopped after %d batches with %d scripted batches left", len(p.limits), len(p.sizes))
	}
}
