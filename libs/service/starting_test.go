package service_test

import (
	"net/http"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/libs/service/servicetest"
)

// A migration that runs longer than the start-up's connect deadline is not cut off
// (a cut-off migration rolled back and the pod restarted, crash-looping an upgrade),
// and while it runs the process answers /healthz (the startup and liveness probes keep
// it) but not /readyz/local (no traffic comes to it).
func TestLongMigrationIsNotCutOffAndTheProcessLooksAliveButNotReady(t *testing.T) {
	slow := postgres.MigrationSet{Name: "slow", FS: fstest.MapFS{
		"0001_slow.sql": {Data: []byte("SELECT pg_sleep(2);\nCREATE TABLE slow_done (id int);\n")},
	}}
	type probe struct{ healthz, readyz int }
	var mu sync.Mutex
	var probes []probe
	stop := make(chan struct{})
	polled := make(chan struct{})
	poll := func(addr string) {
		defer close(polled)
		client := &http.Client{Timeout: time.Second} // a kubelet probe's default timeoutSeconds
		status := func(path string) int {
			resp, err := client.Get("http://" + addr + path)
			if err != nil {
				return 0
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			p := probe{healthz: status("/healthz"), readyz: status("/readyz/local")}
			mu.Lock()
			probes = append(probes, p)
			mu.Unlock()
		}
	}
	s := servicetest.Start(t, "whoami", []postgres.MigrationSet{slow}, whoami, servicetest.Options{
		Configure: func(c *service.Config) {
			c.ConnectTimeout = 500 * time.Millisecond
			go poll(c.HTTPAddr)
		}})
	close(stop)
	<-polled
	var exists bool
	if err := s.Runtime.Pool.QueryRow(t.Context(), "SELECT to_regclass('slow_done') IS NOT NULL").Scan(&exists); err != nil || !exists {
		t.Fatalf("the slow migration did not finish (%v)", err)
	}
	alive := 0
	// Probes sent before the process listened at all (the poller starts with the
	// configuration; on a busy machine that can be a few hundred milliseconds before
	// the listener) say nothing about the migration: skip them.
	for len(probes) > 0 && probes[0].healthz == 0 && probes[0].readyz == 0 {
		probes = probes[1:]
	}
	for _, p := range probes {
		if p.readyz == http.StatusOK {
			continue // the runtime was up by then
		}
		if p.healthz != http.StatusOK || p.readyz != http.StatusServiceUnavailable {
			t.Errorf("while migrating: /healthz %d, /readyz/local %d; want 200 (alive: the probes must not kill a long migration) and 503 (not ready)", p.healthz, p.readyz)
			continue
		}
		alive++
	}
	if alive < 5 {
		t.Errorf("%d probes answered during a 2 s migration (%v); want the process to answer its probes while it migrates", alive, probes)
	}
}
