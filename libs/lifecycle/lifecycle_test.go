package lifecycle

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestStackReleasesInReverseOnce(t *testing.T) {
	var s Stack
	var got []int
	for i := 1; i <= 3; i++ {
		s.Push(func() { got = append(got, i) })
	}
	s.Close()
	s.Close()
	if want := []int{3, 2, 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("release order %v; the last opened must be released first, each once (want %v)", got, want)
	}
	s.Push(func() { got = append(got, 4) })
	s.Close()
	if len(got) != 4 || got[3] != 4 {
		t.Fatalf("a release pushed after Close did not run at the next Close: %v", got)
	}
}

func TestRunStopsEveryTaskWhenOneFails(t *testing.T) {
	boom := errors.New("boom")
	stopped := make(chan struct{})
	err := Run(context.Background(),
		func(ctx context.Context) error { return boom },
		Forever(func(ctx context.Context) { <-ctx.Done(); close(stopped) }),
	)
	if !errors.Is(err, boom) {
		t.Fatalf("Run returned %v; it must return the failing task's error", err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Run returned before the other task had stopped")
	}
}

func TestRunEndsCleanlyWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Run(ctx,
		func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
		Forever(func(ctx context.Context) { <-ctx.Done() }),
	)
	if err != nil {
		t.Fatalf("tasks stopped by cancellation are a clean end, Run returned %v", err)
	}
}
