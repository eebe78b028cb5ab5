package service

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// startingServer answers the probes on the API listener while the runtime starts, before
// the API server takes the listener over: migrations may run for a long time, and a
// process that answered nothing would be killed by its startup probe and start them
// again. /healthz answers 200 (alive), everything else 503 (not ready: no traffic).
type startingServer struct {
	ln       *handoffListener
	deadline deadliner
	srv      *http.Server
	served   chan struct{}
}

// deadliner is a listener whose Accept can be interrupted without closing it.
type deadliner interface{ SetDeadline(time.Time) error }

// serveStarting answers on ln until stop; nil when ln cannot be handed over (no
// SetDeadline), in which case nothing answers until the API server does.
func serveStarting(ln net.Listener) *startingServer {
	d, ok := ln.(deadliner)
	if !ok {
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"starting"}`))
	})
	s := &startingServer{ln: &handoffListener{Listener: ln}, deadline: d, served: make(chan struct{}),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(s.ln)
	}()
	return s
}

// stop stops answering and leaves the listener open, with no deadline, for the API
// server; connections in flight are finished first.
func (s *startingServer) stop(ctx context.Context) {
	if s == nil {
		return
	}
	s.ln.stopped.Store(true)
	_ = s.deadline.SetDeadline(time.Now())
	<-s.served
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	_ = s.deadline.SetDeadline(time.Time{})
}

// handoffListener is a listener the starting server uses but does not own: its Close
// does nothing, and once stopped its Accept reports it closed.
type handoffListener struct {
	net.Listener
	stopped atomic.Bool
}

// Accept is the listener's, until stopped.
func (l *handoffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil && l.stopped.Load() {
		return nil, net.ErrClosed
	}
	return c, err
}

// Close leaves the listener open for the API server.
func (l *handoffListener) Close() error { return nil }
