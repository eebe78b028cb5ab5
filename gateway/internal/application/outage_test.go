package application

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/testwait"
)

// dbLink forwards TCP connections to a database; cut drops every connection and refuses
// new ones (an outage, or a failover in progress) until mend.
type dbLink struct {
	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

// newDBLink returns dbURL rewritten to go through a link the test can cut.
func newDBLink(t *testing.T, dbURL string) (*dbLink, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln := pgtest.Listen(t)
	l := &dbLink{conns: map[net.Conn]bool{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go l.forward(c, target)
		}
	}()
	t.Cleanup(l.cut)
	u.Host = ln.Addr().String()
	return l, u.String()
}

func (l *dbLink) forward(c net.Conn, target string) {
	l.mu.Lock()
	if l.down {
		l.mu.Unlock()
		_ = c.Close()
		return
	}
	l.conns[c] = true
	l.mu.Unlock()
	s, err := net.Dial("tcp", target)
	if err != nil {
		_ = c.Close()
		return
	}
	l.mu.Lock()
	l.conns[s] = true
	l.mu.Unlock()
	go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
	_, _ = io.Copy(c, s)
	_ = c.Close()
}

func (l *dbLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for c := range l.conns {
		_ = c.Close()
	}
	clear(l.conns)
}

func (l *dbLink) mend() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = false
}

// readyzLocal is the pod's readiness probe: its status and body.
func readyzLocal(t *testing.T, g *gw) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", g.public+"/readyz/local", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken) // the failures' texts too
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var keyCacheAge = regexp.MustCompile(`(?m)^gateway_key_cache_age_seconds ([0-9.e+]+)$`)

// An outage of the gateway's own database is no API outage: keys are served from
// memory, so the gateway stays ready (reporting the database as degraded) and keeps
// authenticating requests while its key cache is younger than KEY_CACHE_MAX_STALENESS,
// turns not ready past it (a revoked key might then be accepted), and ready again once
// the database is back. The cache's age is a metric all along.
func TestGatewayDatabaseOutage(t *testing.T) {
	const maxStale = 5 * time.Second
	link, dbURL := newDBLink(t, pgtest.NewDatabase(t))
	up := echo(t)
	g := start(t, dbURL, map[string]string{"topics": up.URL}, func(c *Config) {
		c.KeyRefresh = 200 * time.Millisecond
		c.KeyMaxStaleness = maxStale
	})
	_, key := g.newKey(t, map[string]any{"tenantIds": []string{"acme"}})
	c := g.client(t, key)
	c.Contract = nil // the upstream is an echo
	if status, body := readyzLocal(t, g); status != 200 {
		t.Fatalf("before the outage: readyz/local = %d %s", status, body)
	}

	cut := time.Now()
	link.cut()
	testwait.For(t, 5*time.Second, "the outage to show as a degraded database", func() (bool, string) {
		status, body := readyzLocal(t, g)
		if status != 200 {
			t.Fatalf("%s into its database's outage the gateway answered readyz/local %d %s: "+
				"it must stay ready while its key cache is younger than KEY_CACHE_MAX_STALENESS (the database check is optional)",
				time.Since(cut).Round(time.Millisecond), status, body)
		}
		return strings.Contains(body, `"degraded"`) && strings.Contains(body, "database"), body
	})
	if r := c.Do("GET", "/v0/topics", nil); r.Status != 200 {
		t.Fatalf("during its database's outage the gateway must still authenticate keys from memory: %s", r)
	}

	var notReadyAfter time.Duration
	testwait.For(t, maxStale+10*time.Second, "readiness to fail once the key cache is older than KEY_CACHE_MAX_STALENESS", func() (bool, string) {
		status, body := readyzLocal(t, g)
		if status == 200 {
			return false, body
		}
		notReadyAfter = time.Since(cut)
		return strings.Contains(body, "keys") && strings.Contains(body, "stale"), body
	})
	// The cache last loaded at most one refresh before the cut.
	if notReadyAfter < maxStale-200*time.Millisecond {
		t.Fatalf("the gateway turned not ready %s into the outage, before its key cache was %s old", notReadyAfter, maxStale)
	}
	m := keyCacheAge.FindStringSubmatch(scrape(t, g))
	if m == nil {
		t.Fatal("the admin listener's /metrics has no gateway_key_cache_age_seconds")
	}
	if age, _ := strconv.ParseFloat(m[1], 64); age < maxStale.Seconds()-1 {
		t.Fatalf("gateway_key_cache_age_seconds = %v during an outage of %s: it must be the time since the last load", age, time.Since(cut))
	}

	link.mend()
	testwait.For(t, 20*time.Second, "readiness to come back with the database", func() (bool, string) {
		status, body := readyzLocal(t, g)
		return status == 200 && strings.Contains(body, `"ready"`), body
	})
}
