// Package dispatch is the delivery engine: it claims due deliveries from PostgreSQL,
// attempts them over HTTP with per-subscription concurrency limits and per-subject
// ordering, and records each outcome with the next retry. Tenants share the workers
// fairly: each has a bounded share, claims take tenants in turn, and free workers go to
// the tenants in turn, so one tenant's slow receivers or backlog never hold up another's.
//
// Deliveries are leased, not locked, during an attempt: a claim (FOR UPDATE SKIP LOCKED,
// safe with any number of replicas) sets a lease and returns at once, so no transaction
// or connection is held while a receiver is slow. A replica that dies leaves leases that
// run out, and another claims those deliveries again (at least once). The engine wakes on
// NOTIFY when deliveries are recorded, on its own attempts finishing, and when the next
// delivery falls due; it never polls.
package dispatch

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/webhooks/internal/adapters"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// Queue is what the engine needs from storage.
type Queue interface {
	Claim(ctx context.Context, req adapters.ClaimRequest) (adapters.Claimed, error)
	NextDue(ctx context.Context) (time.Duration, bool, error)
	Complete(ctx context.Context, results []adapters.Result, disableAfter time.Duration) ([]adapters.Disabled, error)
}

// Config tunes the engine. Limits are per replica.
type Config struct {
	// Workers bounds the attempts a replica makes at once. Claimed deliveries waiting
	// for their turn are bounded separately (heldPerWorker × Workers), so that lanes of
	// slow subscriptions full of waiting deliveries cannot stop claims for the others.
	Workers int
	// PerSubscription bounds the attempts in flight to one subscription, so a slow
	// receiver occupies at most this many workers and the others keep flowing. A
	// subscription's lane holds up to laneDepth times as many claimed deliveries, so that
	// a busy subscription is refilled by one claim per PerSubscription attempts.
	PerSubscription int
	// TenantConcurrency bounds the attempts in flight for one tenant, all its
	// subscriptions together, so a tenant with many slow receivers occupies at most this
	// many workers and the other tenants keep their pace; claims stop taking a tenant's
	// deliveries while it holds laneDepth times as many. 0 means Workers.
	TenantConcurrency int
	// Lease is how long a claim holds a delivery; it must outlast the wait for a free
	// slot of its subscription (up to 2×laneDepth-1 attempts ahead) or of its tenant (up
	// to one round of its attempts) and the attempt.
	Lease time.Duration
	// ClaimBatch bounds the deliveries claimed in one query.
	ClaimBatch int
	// Policy schedules retries.
	Policy domain.RetryPolicy
	// DisableAfter is the failure streak after which a subscription is disabled.
	DisableAfter time.Duration
	// ShutdownGrace is how long attempts in flight may finish at shutdown before they are
	// abandoned (and their deliveries released for another replica or the next start).
	ShutdownGrace time.Duration
	// Idle is the backstop wake-up when nothing is due and no notification arrives.
	Idle time.Duration
}

// laneDepth is how many rounds of PerSubscription (or TenantConcurrency) attempts a lane
// (or a tenant) holds claimed.
const laneDepth = 2

// heldPerWorker bounds the claimed deliveries per worker: a lane holds fewer than
// 2×laneDepth times its attempts in flight, so waiting deliveries never use up the
// room before the workers are all busy.
const heldPerWorker = 2 * laneDepth

// contendedRetry is the wait after a claim left due deliveries it could have taken:
// another replica's claim held them locked for that moment, or the claim's turn across
// tenants stopped before reaching every tenant.
const contendedRetry = 50 * time.Millisecond

// claimTenants bounds the tenants with pending deliveries one claim's turn explores (one
// index probe each); the next claim goes on where it stopped. The tenants the replica
// holds deliveries of are visited by every claim besides.
const claimTenants = 64

// maxTurnHops bounds the claims in a row that go on to the next tenants because the
// previous one stopped at claimTenants.
const maxTurnHops = 4

// Dispatcher runs the delivery engine of one replica.
type Dispatcher struct {
	cfg     Config
	queue   Queue
	sender  *Sender
	pool    *pgxpool.Pool
	log     *slog.Logger
	metrics *Metrics

	wake    chan struct{}
	results chan adapters.Result
	sends   sync.WaitGroup
	sendCtx context.Context
	after   string // where the next claim's turn across tenants begins (claim loop only)

	mu       sync.Mutex
	lanes    map[string]*lane   // by subscription ID
	tenants  map[string]*tenant // by tenant ID, while the replica holds any of its deliveries
	held     int                // claimed deliveries in memory
	inFlight int                // attempts being made
	ready    []*tenant          // tenants with a job ready to start and a free slot, waiting for a worker, in turn
	stopping bool
}

// tenant is what the replica holds of one tenant's deliveries.
type tenant struct {
	held     int     // claimed deliveries in memory, attempts in flight included
	inFlight int     // attempts being made
	ready    []*lane // its lanes with a job ready to start, waiting for a slot, in turn
	queued   bool    // in the dispatcher's ready tenants
}

// lane holds one subscription's claimed deliveries, in due order.
type lane struct {
	tenant   *tenant
	waiting  []adapters.Job
	inFlight int
	keys     map[string]bool // ordering keys with an attempt in flight
	queued   bool            // in its tenant's ready lanes
}

// next returns the index of the lane's first waiting job that may start now (the
// subscription has a free slot and no attempt of the job's ordering key is in flight;
// a job behind one of a busy key goes after that attempt, still before later jobs of its
// key), or -1.
func (l *lane) next(perSubscription int) int {
	if l.inFlight >= perSubscription {
		return -1
	}
	for i, j := range l.waiting {
		if !l.keys[j.OrderingKey] {
			return i
		}
	}
	return -1
}

// New returns a Dispatcher. pool carries the LISTEN connection.
func New(cfg Config, queue Queue, sender *Sender, pool *pgxpool.Pool, log *slog.Logger, m *Metrics) *Dispatcher {
	if cfg.TenantConcurrency <= 0 {
		cfg.TenantConcurrency = cfg.Workers
	}
	return &Dispatcher{cfg: cfg, queue: queue, sender: sender, pool: pool, log: log, metrics: m,
		wake: make(chan struct{}, 1), results: make(chan adapters.Result, 2*cfg.Workers),
		lanes: map[string]*lane{}, tenants: map[string]*tenant{}}
}

// Poke makes the engine look for due deliveries now. It never blocks.
func (d *Dispatcher) Poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then releases what it holds: claimed deliveries not yet
// attempted at once, attempts in flight after ShutdownGrace.
func (d *Dispatcher) Run(ctx context.Context) error {
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	d.sendCtx = sendCtx
	written := make(chan struct{})
	go func() { d.writeResults(); close(written) }()
	listened := make(chan struct{})
	go func() {
		postgres.ListenLoop(ctx, d.pool, adapters.Channel, d.cfg.Idle, d.log, func(context.Context) (time.Duration, error) {
			d.Poke()
			return 0, nil
		})
		close(listened)
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-timer.C:
		}
		if ctx.Err() != nil {
			break
		}
		timer.Reset(d.fill(ctx))
	}
	d.shutdown(cancelSends)
	close(d.results)
	<-written
	<-listened
	return nil
}

// fill claims due deliveries while the replica has room and returns how long to wait
// before looking again (a notification or a finished attempt may come sooner).
func (d *Dispatcher) fill(ctx context.Context) time.Duration {
	for hops := 0; ; {
		free, exclude, rooms := d.capacity()
		if free <= 0 {
			return d.cfg.Idle // a finishing attempt pokes
		}
		n := min(free, d.cfg.ClaimBatch)
		c, err := d.claim(ctx, n, exclude, rooms)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("claiming deliveries failed; retrying", slog.Any("error", err))
			}
			return time.Second
		}
		d.accept(c.Jobs)
		d.after = c.After
		got := len(c.Jobs)
		switch {
		case ctx.Err() != nil:
			return d.cfg.Idle // shutdown began: claim no more
		case got == n, got > 0 && c.More:
			continue // more may be due now
		case c.Unvisited && hops < maxTurnHops:
			hops++
			continue // the tenants after this claim's turn may have due deliveries
		case c.Locked > 0, c.Unvisited:
			return contendedRetry
		}
		break
	}
	wait, ok, err := d.queue.NextDue(ctx)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			d.log.Warn("reading the next due delivery failed; retrying", slog.Any("error", err))
		}
		return time.Second
	case !ok:
		return d.cfg.Idle
	}
	return min(max(wait, time.Millisecond), d.cfg.Idle)
}

// claimTimeout bounds one claim query.
const claimTimeout = 10 * time.Second

// claim leases up to n due deliveries, in turns across tenants, none of the
// subscriptions in exclude, at most rooms[t] of a tenant t the replica holds deliveries
// of and laneDepth × TenantConcurrency of another. The query runs on a context that
// shutdown does not cancel: a claim cancelled in flight may still have committed its
// leases on the server, and deliveries the engine never saw would wait out the whole
// lease. A claim that completes is accepted and then released by shutdown like any other.
func (d *Dispatcher) claim(ctx context.Context, n int, exclude []string, rooms map[string]int) (adapters.Claimed, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	return d.queue.Claim(ctx, adapters.ClaimRequest{Limit: n, PerSubscription: laneDepth * d.cfg.PerSubscription,
		Exclude: exclude, After: d.after, Tenants: claimTenants, Rooms: rooms, DefaultRoom: d.tenantHeld(),
		Lease: d.cfg.Lease})
}

// tenantHeld bounds the claimed deliveries of one tenant: its attempts in flight and as
// many waiting.
func (d *Dispatcher) tenantHeld() int { return laneDepth * d.cfg.TenantConcurrency }

// capacity returns how many more deliveries the replica may claim, the subscriptions
// whose lanes are full, and how many more of each tenant it holds deliveries of.
func (d *Dispatcher) capacity() (int, []string, map[string]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var full []string
	for id, l := range d.lanes {
		if l.inFlight+len(l.waiting) >= laneDepth*d.cfg.PerSubscription {
			full = append(full, id)
		}
	}
	rooms := make(map[string]int, len(d.tenants))
	for id, t := range d.tenants {
		rooms[id] = max(d.tenantHeld()-t.held, 0)
	}
	return heldPerWorker*d.cfg.Workers - d.held, full, rooms
}

// accept queues claimed jobs in their lanes and starts what may start.
func (d *Dispatcher) accept(jobs []adapters.Job) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var touched []*lane
	seen := map[*lane]bool{}
	for _, j := range jobs {
		t := d.tenants[j.TenantID]
		if t == nil {
			t = &tenant{}
			d.tenants[j.TenantID] = t
		}
		l := d.lanes[j.SubscriptionID]
		if l == nil {
			l = &lane{tenant: t, keys: map[string]bool{}}
			d.lanes[j.SubscriptionID] = l
		}
		l.waiting = append(l.waiting, j)
		t.held++
		d.held++
		if !seen[l] {
			seen[l] = true
			touched = append(touched, l)
		}
	}
	for _, l := range touched {
		d.offer(l)
	}
	d.dispatch()
}

// offer puts a lane with a job ready to start in its tenant's turn, and the tenant, when
// it has such a lane and a free slot, in the turn for a worker. Call with d.mu held.
func (d *Dispatcher) offer(l *lane) {
	t := l.tenant
	if !l.queued && l.next(d.cfg.PerSubscription) >= 0 {
		l.queued = true
		t.ready = append(t.ready, l)
	}
	if !t.queued && len(t.ready) > 0 && t.inFlight < d.cfg.TenantConcurrency {
		t.queued = true
		d.ready = append(d.ready, t)
	}
}

// dispatch gives free workers to the tenants in turn, one attempt per turn, and a
// tenant's turn to its ready lanes in turn, so a tenant with many subscriptions gets no
// more than one with few when workers are scarce. Call with d.mu held.
func (d *Dispatcher) dispatch() {
	for len(d.ready) > 0 && d.inFlight < d.cfg.Workers && !d.stopping {
		t := d.ready[0]
		d.ready = d.ready[1:]
		t.queued = false
		if len(t.ready) == 0 || t.inFlight >= d.cfg.TenantConcurrency {
			continue
		}
		l := t.ready[0]
		t.ready = t.ready[1:]
		l.queued = false
		if i := l.next(d.cfg.PerSubscription); i >= 0 {
			d.start(l, i)
		}
		d.offer(l) // behind the tenant's other lanes, and the tenant behind the others
	}
}

// start makes the attempt of the lane's waiting job i. Call with d.mu held.
func (d *Dispatcher) start(l *lane, i int) {
	j := l.waiting[i]
	l.waiting = append(l.waiting[:i], l.waiting[i+1:]...)
	l.inFlight++
	l.keys[j.OrderingKey] = true
	l.tenant.inFlight++
	d.inFlight++
	d.metrics.inFlight.Inc()
	d.sends.Add(1)
	go d.attempt(j)
}

// attempt sends one job and hands its result to the writer.
func (d *Dispatcher) attempt(j adapters.Job) {
	defer d.sends.Done()
	var res adapters.Result
	if !j.Active {
		// The subscription was deactivated after the delivery was recorded.
		res = result(j, nil, domain.StatusFailed)
		d.metrics.deliveries.WithLabelValues("failed").Inc()
	} else {
		att, out := d.sender.Send(d.sendCtx, j)
		if d.sendCtx.Err() != nil {
			res = release(j) // abandoned at shutdown: attempt it again later
		} else {
			d.metrics.attempts.WithLabelValues(out.Result).Inc()
			d.metrics.duration.Observe(float64(att.DurationMs) / 1000)
			res = d.decide(j, att, out)
		}
	}
	d.results <- res
	d.finish(j)
}

func result(j adapters.Job, att *domain.Attempt, status domain.Status) adapters.Result {
	return adapters.Result{TenantID: j.TenantID, DeliveryID: j.DeliveryID, SubscriptionID: j.SubscriptionID,
		LeaseToken: j.LeaseToken, AttemptNo: j.AttemptNo, Attempt: att, Status: status, RetryStep: j.RetryStep}
}

// release gives a claim back unattempted: due again at once, same place in the schedule.
func release(j adapters.Job) adapters.Result { return result(j, nil, domain.StatusPending) }

// decide turns an attempt into the delivery's next state.
func (d *Dispatcher) decide(j adapters.Job, att domain.Attempt, out Outcome) adapters.Result {
	switch {
	case out.Success:
		d.metrics.deliveries.WithLabelValues("succeeded").Inc()
		return result(j, &att, domain.StatusSucceeded)
	case out.Gone:
		d.metrics.deliveries.WithLabelValues("failed").Inc()
		r := result(j, &att, domain.StatusFailed)
		r.Gone = true
		return r
	}
	delay, ok := d.cfg.Policy.Next(j.RetryStep, out.RetryAfter, rand.Float64())
	if !ok {
		d.metrics.deliveries.WithLabelValues("failed").Inc()
		return result(j, &att, domain.StatusFailed)
	}
	d.metrics.deliveries.WithLabelValues("retry_scheduled").Inc()
	r := result(j, &att, domain.StatusPending)
	r.Delay, r.RetryStep = delay, j.RetryStep+1
	return r
}

// finish frees the job's slot and worker and starts what may start now: tenants already
// waiting for a worker go first, then this one. It wakes the claim loop when the lane
// runs low or the replica or the tenant held all it may: otherwise the lane still has
// work and claiming for it now would cost a query for a few rows.
func (d *Dispatcher) finish(j adapters.Job) {
	d.mu.Lock()
	l := d.lanes[j.SubscriptionID]
	t := l.tenant
	l.inFlight--
	delete(l.keys, j.OrderingKey)
	wasFull := d.held == heldPerWorker*d.cfg.Workers || t.held >= d.tenantHeld()
	d.held--
	t.held--
	t.inFlight--
	d.inFlight--
	d.metrics.inFlight.Dec()
	d.offer(l)
	d.dispatch()
	low := l.inFlight+len(l.waiting) < d.cfg.PerSubscription
	if l.inFlight == 0 && len(l.waiting) == 0 {
		delete(d.lanes, j.SubscriptionID)
	}
	if t.held == 0 {
		delete(d.tenants, j.TenantID)
	}
	d.mu.Unlock()
	if low || wasFull {
		d.Poke()
	}
}

// shutdown releases the claimed jobs not started, then waits for the attempts in flight
// for ShutdownGrace before cancelling them.
func (d *Dispatcher) shutdown(cancelSends context.CancelFunc) {
	d.mu.Lock()
	d.stopping = true
	d.ready = nil
	var waiting []adapters.Job
	for id, l := range d.lanes {
		waiting = append(waiting, l.waiting...)
		d.held -= len(l.waiting)
		l.tenant.held -= len(l.waiting)
		l.waiting, l.queued = nil, false
		if l.inFlight == 0 {
			delete(d.lanes, id)
		}
	}
	for id, t := range d.tenants {
		t.ready, t.queued = nil, false
		if t.held == 0 {
			delete(d.tenants, id)
		}
	}
	d.mu.Unlock()
	for _, j := range waiting {
		d.results <- release(j)
	}
	done := make(chan struct{})
	go func() { d.sends.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d.cfg.ShutdownGrace):
		cancelSends()
		<-done
	}
}

// writeResults records results in batches: whatever has arrived by the time the
// previous batch is written goes in the next transaction.
func (d *Dispatcher) writeResults() {
	batch := make([]adapters.Result, 0, 256)
	for r := range d.results {
		batch = append(batch[:0], r)
	more:
		for len(batch) < cap(batch) {
			select {
			case r, ok := <-d.results:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		d.write(batch)
	}
}

// write records one batch, retrying while the database is unreachable (the attempts
// waiting to report hold their slots meanwhile, which pauses the engine). At shutdown it
// gives up after a few tries: the leases run out and the deliveries are attempted again.
func (d *Dispatcher) write(batch []adapters.Result) {
	backoff := 100 * time.Millisecond
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		disabled, err := d.queue.Complete(ctx, batch, d.cfg.DisableAfter)
		cancel()
		if err == nil {
			for _, s := range disabled {
				reason := "failing"
				if s.Gone {
					reason = "gone"
				}
				d.metrics.disabled.WithLabelValues(reason).Inc()
				d.log.Warn("webhook subscription disabled", slog.String("tenant_id", s.TenantID),
					slog.String("subscription_id", s.SubscriptionID), slog.String("reason", s.Reason))
			}
			d.Poke() // a retry may now be due sooner than the loop's timer
			return
		}
		d.mu.Lock()
		stopping := d.stopping
		d.mu.Unlock()
		if stopping && try >= 3 {
			d.log.Error("delivery results not recorded at shutdown; their deliveries will be attempted again",
				slog.Int("results", len(batch)), slog.Any("error", err))
			return
		}
		d.log.Warn("recording delivery results failed; retrying", slog.Int("results", len(batch)), slog.Any("error", err))
		time.Sleep(backoff)
		backoff = min(backoff*2, 5*time.Second)
	}
}
