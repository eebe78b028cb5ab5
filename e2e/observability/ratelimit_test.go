package observability

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/testwait"
)

// outcome is one request of the load: when it was sent and answered, by which replica,
// with which status.
type outcome struct {
	sent, done time.Time
	replica    int
	status     int
}

// hammer sends GET /v0/topics?limit=1 with key from workers goroutines, each alternating
// between the two gateway replicas, as fast as they are answered, until stop is closed.
func hammer(key string, workers int, stop <-chan struct{}) []outcome {
	var mu sync.Mutex
	var all []outcome
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []outcome
			for i := w; ; i++ {
				select {
				case <-stop:
					mu.Lock()
					all = append(all, mine...)
					mu.Unlock()
					return
				default:
				}
				r := i % 2
				req, _ := http.NewRequest("GET", sys.gateways[r].url+"/v0/topics?limit=1", nil)
				req.Header.Set("x-api-key", key)
				o := outcome{sent: time.Now(), replica: r}
				resp, err := client.Do(req)
				o.done = time.Now()
				if err != nil {
					o.status = -1
				} else {
					o.status = resp.StatusCode
					resp.Body.Close()
				}
				mine = append(mine, o)
			}
		}()
	}
	wg.Wait()
	return all
}

// phase is the requests sent at or after from and answered before to.
type phase struct {
	name          string
	from, to      time.Time
	admitted      int
	limited       int
	perReplica    [2]int
	bound, single float64 // bound 0: measured, not checked
}

func (p *phase) count(os []outcome) {
	for _, o := range os {
		if o.sent.Before(p.from) || !o.done.Before(p.to) {
			continue
		}
		switch o.status {
		case 200:
			p.admitted++
			p.perReplica[o.replica]++
		case 429:
			p.limited++
		}
	}
}

func (p *phase) String() string {
	d := p.to.Sub(p.from).Seconds()
	bound := "not checked"
	if p.bound > 0 {
		bound = fmt.Sprintf("%.0f", p.bound)
	}
	return fmt.Sprintf("%s: %d admitted (%d + %d by the two replicas), %d refused in %.2f s; bound %s; "+
		"one replica's limit over the span (limit + D/T) %.0f, measured %.2f× that", p.name, p.admitted,
		p.perReplica[0], p.perReplica[1], p.limited, d, bound, p.single, float64(p.admitted)/p.single)
}

// TestRateLimitAcrossReplicasWithRedis: two gateway replicas share one key's limit
// through a real redis-server under a concurrent load split over both. While Redis is
// up the admitted count stays within the bound of docs/rate-limiting.md (limit + D/T
// over any span D: the burst plus the refill); when Redis is stopped mid-run each
// replica goes on deciding locally (at most N × that), counts the fallback, and no
// request fails with 5xx; once Redis is back the shared limit holds again. The admitted
// count of each phase, and of the transition while the restarted (empty) Redis takes
// over, is logged: docs/rate-limiting.md quotes it beside the bound.
func TestRateLimitAcrossReplicasWithRedis(t *testing.T) {
	need(t)
	const limit = 20
	const window = time.Second
	interval := window / limit // T
	_, key := newKey(t, map[string]int{"limit": limit, "windowMs": int(window / time.Millisecond)})
	// Both replicas know the key (the second learns it through the database's NOTIFY).
	for r := range sys.gateways {
		testwait.For(t, 5*time.Second, fmt.Sprintf("replica %d to know the new key", r), func() (bool, string) {
			status, _ := call(t, sys.gateways[r].url, key, "GET", "/v0/topics?limit=1", nil)
			return status == 200 || status == 429, fmt.Sprintf("it answered %d", status)
		})
	}
	time.Sleep(window + 100*time.Millisecond) // the clock must move: a whole window refills the burst the probes took
	fallbacks := func(r int) float64 {
		return scrape(t, sys.gateways[r].admin, "gateway_ratelimit_redis_failures_total")
	}
	byRedis := func(r int) float64 {
		return scrape(t, sys.gateways[r].admin, `gateway_ratelimit_decisions_total{decided_by="redis",result="allowed"}`) +
			scrape(t, sys.gateways[r].admin, `gateway_ratelimit_decisions_total{decided_by="redis",result="limited"}`)
	}
	before := [2]float64{fallbacks(0), fallbacks(1)}

	stop := make(chan struct{})
	var results []outcome
	finished := make(chan struct{})
	start := time.Now()
	go func() { results = hammer(key, 4, stop); close(finished) }()

	const span = 3 * time.Second
	time.Sleep(span) // a measured phase of the load: Redis up
	killed := time.Now()
	sys.redis.stop() // mid-run: the replicas' pooled connections to Redis break
	time.Sleep(span) // a measured phase of the load: Redis down
	after := [2]float64{fallbacks(0), fallbacks(1)}
	restarted := time.Now()
	if err := sys.redis.start(); err != nil {
		close(stop)
		<-finished
		t.Fatal(err)
	}
	// Redis answers again once both replicas' decisions by Redis move on.
	mark := [2]float64{byRedis(0), byRedis(1)}
	if !testwait.Until(10*time.Second, func() bool { return byRedis(0) != mark[0] && byRedis(1) != mark[1] }) {
		close(stop)
		<-finished
		t.Fatal("the replicas did not go back to Redis within 10 s of its restart")
	}
	back := time.Now()
	time.Sleep(span) // a measured phase of the load: Redis back
	end := time.Now()
	close(stop)
	<-finished

	single := func(from, to time.Time) float64 { return limit + float64(to.Sub(from))/float64(interval) }
	shared := &phase{name: "Redis up", from: start, to: killed}
	down := &phase{name: "Redis down", from: killed, to: restarted}
	again := &phase{name: "Redis back", from: back, to: end}
	for _, p := range []*phase{shared, down, again} {
		p.count(results)
		p.single = single(p.from, p.to)
		p.bound = p.single + 1
	}
	down.bound = 2 * (down.single + 1) // N replicas, each within the single bound
	// From the restart until both replicas use Redis again: measured for
	// docs/rate-limiting.md, not bounded here (the restarted Redis is empty, so the key
	// gets its burst once more, while a replica may still decide locally).
	returning := &phase{name: "Redis returning", from: restarted, to: back}
	returning.count(results)
	returning.single = single(returning.from, returning.to)
	total, fiveXX := 0, 0
	for _, o := range results {
		total++
		if o.status >= 500 || o.status < 0 {
			fiveXX++
		}
	}
	t.Logf("%d requests in %.1f s, limit %d per %s (T = %s):", total, end.Sub(start).Seconds(), limit, window, interval)
	for _, p := range []*phase{shared, down, returning, again} {
		t.Logf("  %s", p)
		if p == returning {
			continue
		}
		if float64(p.admitted) > p.bound {
			t.Errorf("%s: %d admitted, over the bound of %.0f", p.name, p.admitted, p.bound)
		}
		if p.admitted < limit/2 || p.limited == 0 {
			t.Errorf("%s: %d admitted, %d refused: the load did not reach the limit", p.name, p.admitted, p.limited)
		}
	}
	if fiveXX != 0 {
		t.Errorf("%d of %d requests failed with 5xx or no answer; a Redis outage must not fail requests", fiveXX, total)
	}
	for r := range sys.gateways {
		if after[r] <= before[r] {
			t.Errorf("replica %d: gateway_ratelimit_redis_failures_total did not rise while Redis was down (%v → %v)", r, before[r], after[r])
		}
		if down.perReplica[r] == 0 {
			t.Errorf("replica %d admitted nothing while Redis was down: it must keep deciding locally", r)
		}
	}
}
