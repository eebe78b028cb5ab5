// Package lifecycle holds what a process opens and what it runs: a stack of resources
// released in reverse order, and a group of tasks that run until the first one fails or
// the context ends. Every service's runtime and the gateway use it, so start and
// shutdown behave the same everywhere.
package lifecycle

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Stack releases what was opened, last opened first. The zero value is ready to use.
type Stack struct {
	mu      sync.Mutex
	release []func()
}

// Push adds a release function, run by Close before those pushed earlier.
func (s *Stack) Push(release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release = append(s.release, release)
}

// Close runs the release functions in reverse order, each once: a second Close does
// nothing, and a function pushed after a Close runs at the next one.
func (s *Stack) Close() {
	s.mu.Lock()
	release := s.release
	s.release = nil
	s.mu.Unlock()
	for i := len(release) - 1; i >= 0; i-- {
		release[i]()
	}
}

// Task is work that runs until its context ends; a non-nil error stops the others.
type Task func(ctx context.Context) error

// Forever turns a loop that only ends with its context into a Task.
func Forever(loop func(ctx context.Context)) Task {
	return func(ctx context.Context) error { loop(ctx); return nil }
}

// Run runs the tasks together until ctx ends or one fails; the others' context is then
// cancelled and Run waits for all of them. It returns the first failure, or nil when
// the tasks ended because ctx did (context.Canceled is how a task says it stopped).
func Run(ctx context.Context, tasks ...Task) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, task := range tasks {
		g.Go(func() error { return task(ctx) })
	}
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
