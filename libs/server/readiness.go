package server

import (
	"sync"
	"time"
)

// readyResult is one run of the readiness checks.
type readyResult struct {
	failed, degraded map[string]string
	at               time.Time
}

// readiness shares runs of the readiness checks among callers: one run at a time per
// kind (local or all), reused for a TTL.
type readiness struct {
	mu       sync.Mutex
	last     [2]readyResult
	inflight [2]*readyCall
	lastLog  string
}

// readyCall is a run in progress that later callers wait for.
type readyCall struct {
	done chan struct{}
	res  readyResult
}

// get returns a result younger than ttl, waiting for the run in progress if there is
// one, or running the checks itself.
func (r *readiness) get(local bool, ttl time.Duration, run func() readyResult) readyResult {
	i := 0
	if local {
		i = 1
	}
	r.mu.Lock()
	if ttl > 0 && !r.last[i].at.IsZero() && time.Since(r.last[i].at) < ttl {
		res := r.last[i]
		r.mu.Unlock()
		return res
	}
	if call := r.inflight[i]; call != nil {
		r.mu.Unlock()
		<-call.done
		return call.res
	}
	call := &readyCall{done: make(chan struct{})}
	r.inflight[i] = call
	r.mu.Unlock()

	call.res = run()
	call.res.at = time.Now()
	r.mu.Lock()
	r.last[i], r.inflight[i] = call.res, nil
	r.mu.Unlock()
	close(call.done)
	return call.res
}

// changed records key as the latest failure set and reports whether it differs from
// the one before.
func (r *readiness) changed(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if key == r.lastLog {
		return false
	}
	r.lastLog = key
	return true
}
