package delivery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/metrics"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/secretbox"
	"github.com/customerapi/platform/services/webhooks/internal/adapters/sender"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
	"github.com/customerapi/platform/services/webhooks/migrations"
)

func noStats(context.Context) (domain.QueueStats, error) { return domain.QueueStats{}, nil }

// claimCount reads how many claims the engine has made.
func claimCount(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "webhook_claim_duration_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("no webhook_claim_duration_seconds")
	return 0
}

// waitingTenants adds n tenants (tenant_0001 to tenant_n, in the claims' turn order), each
// with a subscription to url and one delivery that waits for a retry due in an hour.
func waitingTenants(t *testing.T, pool *pgxpool.Pool, n int, url string) {
	t.Helper()
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `INSERT INTO subscriptions (tenant_id, subscription_id, url, active, secret, created_at, updated_at)
		SELECT 'tenant_' || lpad(i::text, 4, '0'), 'whsub_' || i, $1, true, 'whsec_c2VjcmV0', now(), now()
		FROM generate_series(1, $2::int) AS i`, url, n); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type,
			ordering_key, body, status, next_attempt_at, created_at, updated_at)
		SELECT 'tenant_' || lpad(i::text, 4, '0'), 'delivery_' || i, 'whsub_' || i, 'evt_' || i, 'form.submitted', 'k' || i,
			convert_to('{"eventId":"evt_' || i || '"}', 'UTF8'), 'pending', now() + interval '1 hour', now(), now()
		FROM generate_series(1, $1::int) AS i`, n); err != nil {
		t.Fatal(err)
	}
}

// dueIn makes tenant i's waiting delivery due after d, as a retry written without a
// notification.
func dueIn(t *testing.T, pool *pgxpool.Pool, i int, d time.Duration) {
	t.Helper()
	if _, err := pool.Exec(t.Context(), `UPDATE deliveries SET next_attempt_at = now() + make_interval(secs => $2)
		WHERE delivery_id = 'delivery_' || $1::int`, i, d.Seconds()); err != nil {
		t.Fatal(err)
	}
}

// retryEngine starts an engine with the service's limits, claims of at most batch and a
// backstop of idle among n tenants waiting for retries (waitingTenants), whose receiver
// is the returned log (all closes after want events), once it rests (startResting).
func retryEngine(t *testing.T, n, want, batch int, idle time.Duration) (*restingQueue, *arrivalLog, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.NewPool(t, migrations.Set)
	arrivals := &arrivalLog{at: map[string]time.Time{}, want: want, all: make(chan struct{})}
	srv := httptest.NewServer(arrivals)
	t.Cleanup(srv.Close)
	waitingTenants(t, pool, n, srv.URL)
	queue, _ := startResting(t, pool, adapters.NewStore(pool, secretbox.Ephemeral()), Config{Workers: 256, PerSubscription: 8,
		TenantConcurrency: 64, ClaimBatch: batch, Idle: idle})
	return queue, arrivals, pool
}

// startResting runs an engine with cfg (and the service's retry schedule) on store until
// the test ends, and waits until it rests after its start-up rounds.
func startResting(t *testing.T, pool *pgxpool.Pool, store *adapters.Store, cfg Config) (*restingQueue, *prometheus.Registry) {
	t.Helper()
	cfg.Policy, cfg.DisableAfter = domain.RetryPolicy{Schedule: domain.DefaultSchedule}, time.Hour
	cfg.Lease, cfg.ShutdownGrace = time.Minute, 100*time.Millisecond
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	queue := &restingQueue{Queue: store, marker: "tenant_marker"}
	d := New(cfg, queue, sender.New(newGuard(), 10*time.Second, 16), &adapters.Listener{Pool: pool, Log: log}, log, metrics.New(reg, noStats, log))
	queue.d = d
	runUntilCleanup(t, d)
	queue.waitRest(t, pool)
	return queue, reg
}

// Many more tenants than one claim explores (ClaimTenants), each with a delivery waiting
// for a retry, cost nothing while nothing is due: the engine does not keep claiming. A
// new tenant's deliveries are claimed as their notification arrives, not when the turn
// across tenants comes round to it, and a retry that falls due without a notification
// is claimed when it is due. None of it takes a round once the start-up rounds are
// over: the claims probe QuietTenants of the waiting tenants besides the ones they
// visit, the retry's tenant is visited when its due time comes, and the new tenant's
// announcement, once its deliveries are done, runs out without asking for one.
func TestManyTenantsWaitingForRetries(t *testing.T) {
	const tenants = 8 * ClaimTenants
	pool := pgtest.NewPool(t, migrations.Set)
	store := adapters.NewStore(pool, secretbox.Ephemeral())
	waiting := &arrivalLog{at: map[string]time.Time{}, want: 1, all: make(chan struct{})}
	waitingSrv := httptest.NewServer(waiting)
	t.Cleanup(waitingSrv.Close)
	fresh := &arrivalLog{at: map[string]time.Time{}, want: 20, all: make(chan struct{})}
	freshSrv := httptest.NewServer(fresh)
	t.Cleanup(freshSrv.Close)

	waitingTenants(t, pool, tenants, waitingSrv.URL)
	subscribeAll(t, store, "tenant_0250x", "whsub_fresh", freshSrv.URL) // among the others in tenant order
	queue, reg := startResting(t, pool, store, Config{Workers: 256, PerSubscription: 8, TenantConcurrency: 64,
		ClaimBatch: 100, Idle: time.Minute})
	queue.probes()

	before := claimCount(t, reg)
	time.Sleep(500 * time.Millisecond) // the quiet window: nothing is due, so at most a claim or two may happen in it
	if n := claimCount(t, reg) - before; n > 2 {
		t.Errorf("%d claims in half a second with nothing due: the engine polls the tenants waiting for retries", n)
	}

	dueIn(t, pool, 7, 2*time.Second)
	written := time.Now()
	queue.d.Poke() // as the write of a retry's result does: the engine reads the due times to come
	enqueued := map[string]time.Time{}
	for i := range 20 {
		at := time.Now()
		e := enqueue(t, store, pool, "tenant_0250x", fmt.Sprintf("form_%d", i))
		enqueued[e.ID] = at
		time.Sleep(10 * time.Millisecond) // pacing: one new delivery every 10 ms, each timed from its enqueue
	}
	select {
	case <-fresh.all:
	case <-time.After(10 * time.Second):
		t.Fatal("a new tenant's deliveries did not arrive within 10 s")
	}
	fresh.mu.Lock()
	var slowest time.Duration
	for id, at := range fresh.at {
		slowest = max(slowest, at.Sub(enqueued[id]))
	}
	fresh.mu.Unlock()
	if slowest > time.Second {
		t.Errorf("a new tenant's delivery took %s from enqueue to receiver among %d tenants waiting for retries", slowest, tenants)
	}

	select {
	case <-waiting.all:
		if at := waiting.at["evt_7"]; at.Sub(written) < 2*time.Second {
			t.Errorf("the retry due after 2 s arrived after %s", at.Sub(written))
		}
	case <-time.After(time.Until(written.Add(5 * time.Second))):
		t.Fatal("a retry that fell due without a notification was not attempted within 3 s of its due time")
	}
	time.Sleep(announceFor + 300*time.Millisecond)
	queue.d.Poke() // a claim notices the announcements that ran out
	time.Sleep(200 * time.Millisecond)

	var rounds, quiet, over, most int
	for _, p := range queue.probes() {
		if p.round {
			rounds++
			continue
		}
		quiet++
		if turn := p.probed - p.rooms; turn > QuietTenants {
			over, most = over+1, max(most, turn)
		}
	}
	if rounds > 0 {
		t.Errorf("%d claims in rounds after the start-up rounds: a retry falling due, or an announcement running out "+
			"after a claim visited its tenant, began a round", rounds)
	}
	if quiet == 0 || over > 0 {
		t.Errorf("%d of %d claims between rounds probed more than QuietTenants (%d) tenants besides those announced or "+
			"held, up to %d: the turn explores the tenants waiting for retries on every claim", over, quiet, QuietTenants, most)
	}
	waiting.mu.Lock()
	defer waiting.mu.Unlock()
	if len(waiting.at) != 1 {
		t.Errorf("%d deliveries waiting for a retry were attempted, want only the one due", len(waiting.at))
	}
	t.Logf("new tenant's slowest delivery %s, %d claims", slowest, quiet)
}

// A delivery that falls due without a notification (a retry of a tenant the last round
// did not see, one written by hand) is found by the round that begins at least every
// Idle, even while pokes (notifications, finished attempts) keep resetting the engine's
// timer before it fires. The delivery is the last tenant the claims' slow sweep between
// rounds would reach: 128 claims away.
func TestARoundBeginsEveryIdleWhilePokesKeepComing(t *testing.T) {
	queue, arrivals, pool := retryEngine(t, 8*ClaimTenants, 1, 100, time.Second)

	poking := time.NewTicker(250 * time.Millisecond) // a quarter of Idle: the timer never runs out by itself
	defer poking.Stop()
	dueIn(t, pool, restsAt(t, queue), 0)
	wrote := time.Now()
	for {
		select {
		case <-arrivals.all:
			if took := time.Since(wrote); took > 3*time.Second {
				t.Errorf("the delivery written without a notification arrived after %s, want within Idle (1 s) and a round", took)
			}
			return
		case <-poking.C:
			queue.d.Poke()
		case <-time.After(time.Until(wrote.Add(10 * time.Second))):
			t.Fatal("a delivery written without a notification was not attempted within 10 s while pokes kept coming: " +
				"no round began within Idle")
		}
	}
}

// More retries falling due at one moment than the engine reads at once (dueBatch), of as
// many tenants, are all claimed then: the due times past the last one read, which no
// reading saw while they were to come, bring a round, not the next Idle (a minute here).
// An endpoint that fails for every tenant at once makes such a burst.
func TestABurstOfRetriesBeyondOneReadingIsClaimed(t *testing.T) {
	const burst = dueBatch + 8
	queue, arrivals, pool := retryEngine(t, 8*ClaimTenants, burst, 100, time.Minute)
	if _, err := pool.Exec(t.Context(), `UPDATE deliveries SET next_attempt_at = now() + interval '1500 milliseconds'
		WHERE delivery_id IN (SELECT 'delivery_' || (i * 12) FROM generate_series(1, $1::int) AS i)`, burst); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	queue.d.Poke() // as the write of the retries' results does: the engine reads the due times to come
	select {
	case <-arrivals.all:
		t.Logf("all %d retries arrived %s after they were written", burst, time.Since(written))
	case <-time.After(5 * time.Second):
		arrivals.mu.Lock()
		defer arrivals.mu.Unlock()
		t.Fatalf("%d of %d retries due at one moment arrived within 3.5 s of their due time: those past the "+
			"engine's reading of %d due times were left for the next round", len(arrivals.at), burst, dueBatch)
	}
}

// A tenant notified while the engine remembers as many as it may (maxAnnounced) is not
// forgotten: past the bound it asks for a round at once. The first maxAnnounced
// notifications name tenants with nothing pending (their deliveries taken by another
// replica, say); the next name 64 tenants with a delivery due, spread among 512 waiting
// for retries. An event many tenants subscribe to, or a listener catching up, makes such
// a burst. Without the ask, the claims between rounds (exploring QuietTenants each) find
// a few of the 64, and the rest wait until some announcement runs out unvisited (2 s) or
// the next Idle (a minute here).
func TestATenantNotifiedPastTheAnnouncedBoundBringsARound(t *testing.T) {
	const waiting, due = 8 * ClaimTenants, 64
	queue, arrivals, pool := retryEngine(t, waiting, due, 100, time.Minute)
	queue.probes()
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `UPDATE deliveries SET next_attempt_at = now()
		WHERE delivery_id IN (SELECT 'delivery_' || (i * 8) FROM generate_series(1, $1::int) AS i)`, due); err != nil {
		t.Fatal(err)
	}
	// One statement: the listener receives every notification at its commit, in order.
	notified := time.Now()
	if _, err := pool.Exec(ctx, `SELECT pg_notify($1, name || ' ' || (extract(epoch FROM now()) * 1000000)::bigint)
		FROM (SELECT 1 AS k, i, 'tenant_idle_' || i AS name FROM generate_series(1, $2::int) AS i
			UNION ALL SELECT 2, i, 'tenant_' || lpad((i * 8)::text, 4, '0') FROM generate_series(1, $3::int) AS i
			ORDER BY k, i) AS n`, adapters.Channel, maxAnnounced, due); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrivals.all:
	case <-time.After(10 * time.Second):
		arrivals.mu.Lock()
		defer arrivals.mu.Unlock()
		t.Fatalf("%d of %d deliveries of tenants notified past the %d the engine remembers arrived within 10 s",
			len(arrivals.at), due, maxAnnounced)
	}
	for _, p := range queue.probes() {
		if p.round {
			if after := p.began.Sub(notified); after > announceFor*3/4 {
				t.Errorf("the first round after the burst began %s after it: the tenants past the bound did not ask "+
					"for one (an announcement running out did)", after)
			}
			return
		}
	}
	t.Error("no round after the burst: the tenants past the bound were found by the claims between rounds alone")
}

// A round asked for while a round is open begins when that one ends, however many claims
// the open one takes. Here a round of more tenants than one fill's hops cover
// (maxTurnHops claims of ClaimTenants) has passed a tenant when that tenant's delivery is
// made due without a notification and a round is asked for (as a lease running out
// does). The ask used to be kept, but nothing woke the engine to act on it when the long
// round ended, so the delivery waited for the next Idle (a minute here).
func TestARoundAskedForDuringALongRoundFollowsIt(t *testing.T) {
	const tenants = (maxTurnHops + 2) * ClaimTenants
	queue, arrivals, pool := retryEngine(t, tenants, 1, 100, time.Minute)
	asked := make(chan time.Time, 1)
	queue.mu.Lock()
	queue.inRound = func(from string) { // after the round's first claim, which probed the tenant after from
		n, err := strconv.Atoi(strings.TrimPrefix(from, "tenant_"))
		if err != nil {
			t.Errorf("the round began at %q, want a waiting tenant", from)
		}
		if _, err := pool.Exec(context.Background(), `UPDATE deliveries SET next_attempt_at = now()
			WHERE delivery_id = 'delivery_' || $1::int`, n%tenants+1); err != nil {
			t.Error(err) // the claim loop's goroutine: no Fatal
		}
		queue.d.askRound()
		asked <- time.Now()
	}
	queue.mu.Unlock()
	queue.d.askRound()
	var at time.Time
	select {
	case at = <-asked:
	case <-time.After(5 * time.Second):
		t.Fatal("no round began within 5 s of asking for one")
	}
	select {
	case <-arrivals.all:
		t.Logf("arrived %s after the round was asked for", time.Since(at))
	case <-time.After(5 * time.Second):
		t.Fatal("a delivery made due behind an open round, with a round asked for, was not attempted within 5 s: " +
			"the round asked for did not follow the open one")
	}
}

// A delivery leased by a replica that stopped without giving it back is claimed again when
// its lease runs out: the engine reads when the earliest lease ends, and a round begins
// then, not at the next Idle (a minute here).
func TestALeaseThatRunsOutBringsARound(t *testing.T) {
	queue, arrivals, pool := retryEngine(t, 8*ClaimTenants, 1, 100, time.Minute)

	if _, err := pool.Exec(t.Context(), `UPDATE deliveries SET next_attempt_at = now(),
			lease_expires_at = now() + interval '1500 milliseconds', lease_token = lease_token + 1
		WHERE delivery_id = 'delivery_' || $1::int`, restsAt(t, queue)); err != nil {
		t.Fatal(err)
	}
	leased := time.Now()
	queue.d.Poke() // a claim's wake-up: the engine reads the due times and lease ends to come
	select {
	case <-arrivals.all:
		if took := time.Since(leased); took < 1500*time.Millisecond {
			t.Errorf("the leased delivery arrived %s after it was leased for 1.5 s", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a delivery whose lease ran out after 1.5 s was not attempted within 5 s: no round began when it ran out")
	}
}

// A tenant announced while the replica holds all it may is not forgotten when its
// announcement runs out before a claim could take its deliveries: a round finds it once
// the replica has room again, not the next Idle (a minute here).
func TestAnAnnouncementThatRunsOutBringsARound(t *testing.T) {
	const tenants = 8 * ClaimTenants
	pool := pgtest.NewPool(t, migrations.Set)
	store := adapters.NewStore(pool, secretbox.Ephemeral())
	release := make(chan struct{})
	var once sync.Once
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { <-release }) // the first attempt holds the only worker until released
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	arrivals := &arrivalLog{at: map[string]time.Time{}, want: 1, all: make(chan struct{})}
	fast := httptest.NewServer(arrivals)
	t.Cleanup(fast.Close)
	waitingTenants(t, pool, tenants, fast.URL)
	subscribeAll(t, store, "tenant_0100x", "whsub_busy1", slow.URL)
	subscribeAll(t, store, "tenant_0100x", "whsub_busy2", slow.URL)
	subscribeAll(t, store, "tenant_0300x", "whsub_late", fast.URL)
	// One worker holds heldPerWorker (4) deliveries: two of each of the busy tenant's
	// subscriptions (laneDepth × PerSubscription), within its laneDepth × TenantConcurrency.
	startResting(t, pool, store, Config{Workers: 1, PerSubscription: 1, TenantConcurrency: 2, ClaimBatch: 100, Idle: time.Minute})

	for i := range heldPerWorker / 2 { // the replica holds all it may: one attempt in flight, the rest waiting
		enqueue(t, store, pool, "tenant_0100x", fmt.Sprintf("busy_%d", i))
	}
	time.Sleep(200 * time.Millisecond)
	e := enqueue(t, store, pool, "tenant_0300x", "late")
	time.Sleep(announceFor + 500*time.Millisecond)
	close(release)
	released := time.Now()
	select {
	case <-arrivals.all:
		arrivals.mu.Lock()
		defer arrivals.mu.Unlock()
		if _, ok := arrivals.at[e.ID]; !ok {
			t.Fatalf("arrived %v, want the announced tenant's delivery", arrivals.at)
		}
		t.Logf("arrived %s after the replica had room", time.Since(released))
	case <-time.After(5 * time.Second):
		t.Fatal("a tenant whose announcement ran out while the replica was full was not served within 5 s of room")
	}
}

// A round goes on while its claims stop at their limit: the tenants after the last one
// served, which the claim's turn explored, have due deliveries too. Ten tenants get a
// delivery due, written without a notification, among forty waiting for retries (fewer
// than one claim explores): the two right after where the claims' turn rests, then a
// gap of twenty, then eight. The round asked for then serves all ten at once with claims
// of two. Had it ended after its first claim, the claims' slow sweep between rounds
// would stop in the gap, and the eight would wait for the next round (2 s later, when
// the first two tenants' announcements run out).
func TestARoundGoesOnWhileItsClaimsAreFull(t *testing.T) {
	const tenants = 50
	queue, arrivals, pool := retryEngine(t, tenants, 10, 2, time.Minute)
	rest := restsAt(t, queue)
	for _, k := range []int{1, 2, 23, 24, 25, 26, 27, 28, 29, 30} {
		dueIn(t, pool, (rest-1+k)%tenants+1, 0)
	}
	queue.d.askRound()
	select {
	case <-arrivals.all:
	case <-time.After(10 * time.Second):
		t.Fatal("the ten due deliveries did not all arrive within 10 s: the round ended when its first claim took its limit")
	}
	arrivals.mu.Lock()
	defer arrivals.mu.Unlock()
	var first, last time.Time
	for _, at := range arrivals.at {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	if spread := last.Sub(first); spread > 500*time.Millisecond {
		t.Errorf("the ten due deliveries arrived over %s, want one round (under 500 ms): the round ended when its "+
			"first claim took its limit", spread)
	}
}

// restsAt returns the number of the waiting tenant (waitingTenants) where the claims'
// turn across tenants rests: the next claim's turn begins after it.
func restsAt(t *testing.T, q *restingQueue) int {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	n, err := strconv.Atoi(strings.TrimPrefix(q.after, "tenant_"))
	if err != nil {
		t.Fatalf("the turn rests at %q, want a waiting tenant", q.after)
	}
	return n
}

// restingQueue is the engine's queue in a test that must know when the start-up rounds
// are over: the one at start and the one the listener asks for once it has connected.
type restingQueue struct {
	domain.Queue
	d      *Dispatcher
	marker string // a tenant of no delivery, named by the test's notifications

	mu      sync.Mutex
	visited bool // a claim visited marker: the listener had connected, and asked for its round, before
	resting bool // the last call was Upcoming, after visited, with no round open or asked for
	probed  []probe
	after   string // where the last claim left the turn across tenants
	// inRound, when set, runs once after the next claim made in a round, with where that
	// round began (by the claim loop).
	inRound func(from string)
}

// probe is what one claim probed.
type probe struct {
	began  time.Time // when the claim was sent
	round  bool      // a round was open
	probed int       // tenants probed (Claimed.Floors)
	rooms  int       // tenants visited as announced or held (ClaimRequest.Rooms)
}

func (q *restingQueue) Claim(ctx context.Context, req domain.ClaimRequest) (domain.Claimed, error) {
	q.mu.Lock()
	if _, ok := req.Rooms[q.marker]; ok {
		q.visited = true
	}
	q.resting = false
	q.mu.Unlock()
	round := q.d.round.open // the claim loop calls Claim
	began := time.Now()
	c, err := q.Queue.Claim(ctx, req)
	q.mu.Lock()
	q.probed = append(q.probed, probe{began: began, round: round, probed: len(c.Floors), rooms: len(req.Rooms)})
	if err == nil {
		q.after = c.After
	}
	hook := q.inRound
	if round {
		q.inRound = nil
	}
	q.mu.Unlock()
	if round && hook != nil {
		hook(q.d.round.from)
	}
	return c, err
}

// probes returns what the claims since the last call probed.
func (q *restingQueue) probes() []probe {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.probed
	q.probed = nil
	return p
}

// Upcoming is called after a fill (by the claim loop): with no round open and none asked
// for (reround false), the rounds asked for are over.
func (q *restingQueue) Upcoming(ctx context.Context, limit int) (domain.Upcoming, error) {
	up, err := q.Queue.Upcoming(ctx, limit)
	q.mu.Lock()
	q.resting = q.visited && !q.d.round.open && !q.d.reround.Load()
	q.mu.Unlock()
	return up, err
}

// waitRest waits until the claim loop rests after its start-up rounds, notifying marker
// until a claim visits it (a notification sent before the listener connected is lost).
func (q *restingQueue) waitRest(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	testwait.For(t, 10*time.Second, "the engine to rest after its start-up rounds", func() (bool, string) {
		q.mu.Lock()
		visited, resting := q.visited, q.resting
		q.mu.Unlock()
		if !visited {
			if _, err := pool.Exec(t.Context(), "SELECT pg_notify($1, $2)", adapters.Channel, q.marker); err != nil {
				t.Fatal(err)
			}
		}
		return resting, fmt.Sprintf("listener's notification seen %v, resting %v", visited, resting)
	})
}
