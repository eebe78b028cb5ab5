// Package dispatch is the delivery engine: it claims due deliveries from PostgreSQL,
// attempts them over HTTP with per-subscription concurrency limits and per-subject
// ordering, and records each outcome with the next retry.
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
	Claim(ctx context.Context, limit, perSubscription int, exclude []string, lease time.Duration) ([]adapters.Job, error)
	NextDue(ctx context.Context, exclude []string) (time.Duration, bool, error)
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
	// Lease is how long a claim holds a delivery; it must outlast the wait for a free
	// slot of its subscription (up to 2×laneDepth-1 attempts ahead) and the attempt.
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

// laneDepth is how many rounds of PerSubscription attempts a lane holds claimed.
const laneDepth = 2

// heldPerWorker bounds the claimed deliveries per worker: a lane holds fewer than
// 2×laneDepth times its attempts in flight, so waiting deliveries never use up the
// room before the workers are all busy.
const heldPerWorker = 2 * laneDepth

// contendedRetry is the wait after a claim found due deliveries it could not take:
// another replica's claim held them locked for that moment.
const contendedRetry = 50 * time.Millisecond

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

	mu       sync.Mutex
	lanes    map[string]*lane // by subscription ID
	held     int              // claimed deliveries in memory
	inFlight int              // attempts being made
	turns    []*lane          // lanes with a job ready to start, waiting for a worker, in turn
	stopping bool
}

// lane holds one subscription's claimed deliveries, in due order.
type lane struct {
	waiting  []adapters.Job
	inFlight int
	keys     map[string]bool // ordering keys with an attempt in flight
	queued   bool            // in the dispatcher's turns for a worker
}

// New returns a Dispatcher. pool carries the LISTEN connection.
func New(cfg Config, queue Queue, sender *Sender, pool *pgxpool.Pool, log *slog.Logger, m *Metrics) *Dispatcher {
	return &Dispatcher{cfg: cfg, queue: queue, sender: sender, pool: pool, log: log, metrics: m,
		wake: make(chan struct{}, 1), results: make(chan adapters.Result, 2*cfg.Workers), lanes: map[string]*lane{}}
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
	for {
		free, exclude := d.capacity()
		if free <= 0 {
			return d.cfg.Idle // a finishing attempt pokes
		}
		n := min(free, d.cfg.ClaimBatch)
		jobs, err := d.claim(ctx, n, exclude)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("claiming deliveries failed; retrying", slog.Any("error", err))
			}
			return time.Second
		}
		d.accept(jobs)
		if len(jobs) < n || ctx.Err() != nil {
			break // nothing more is due now, or shutdown began: claim no more
		}
	}
	_, exclude := d.capacity()
	wait, ok, err := d.queue.NextDue(ctx, exclude)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			d.log.Warn("reading the next due delivery failed; retrying", slog.Any("error", err))
		}
		return time.Second
	case !ok:
		return d.cfg.Idle
	case wait <= 0:
		return contendedRetry
	}
	return min(wait, d.cfg.Idle)
}

// claimTimeout bounds one claim query.
const claimTimeout = 10 * time.Second

// claim leases up to n due deliveries. The query runs on a context that shutdown does
// not cancel: a claim cancelled in flight may still have committed its leases on the
// server, and deliveries the engine never saw would wait out the whole lease. A claim
// that completes is accepted and then released by shutdown like any other.
func (d *Dispatcher) claim(ctx context.Context, n int, exclude []string) ([]adapters.Job, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	return d.queue.Claim(ctx, n, laneDepth*d.cfg.PerSubscription, exclude, d.cfg.Lease)
}

// capacity returns how many more deliveries the replica may claim, and the
// subscriptions whose lanes are full.
func (d *Dispatcher) capacity() (int, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var full []string
	for id, l := range d.lanes {
		if l.inFlight+len(l.waiting) >= laneDepth*d.cfg.PerSubscription {
			full = append(full, id)
		}
	}
	return heldPerWorker*d.cfg.Workers - d.held, full
}

// accept queues claimed jobs in their lanes and starts what may start.
func (d *Dispatcher) accept(jobs []adapters.Job) {
	d.mu.Lock()
	defer d.mu.Unlock()
	touched := map[*lane]bool{}
	for _, j := range jobs {
		l := d.lanes[j.SubscriptionID]
		if l == nil {
			l = &lane{keys: map[string]bool{}}
			d.lanes[j.SubscriptionID] = l
		}
		l.waiting = append(l.waiting, j)
		d.held++
		touched[l] = true
	}
	for l := range touched {
		d.startReady(l)
	}
}

// startReady starts the lane's waiting jobs in order while the subscription has free
// slots, skipping a job whose ordering key already has an attempt in flight (it goes
// after that attempt ends, still before later jobs of its key). When every worker is
// busy, the lane queues for the next free one. Call with d.mu held.
func (d *Dispatcher) startReady(l *lane) {
	for l.inFlight < d.cfg.PerSubscription && !d.stopping {
		i := -1
		for k, j := range l.waiting {
			if !l.keys[j.OrderingKey] {
				i = k
				break
			}
		}
		if i < 0 {
			return
		}
		if d.inFlight >= d.cfg.Workers {
			if !l.queued {
				l.queued = true
				d.turns = append(d.turns, l)
			}
			return
		}
		j := l.waiting[i]
		l.waiting = append(l.waiting[:i], l.waiting[i+1:]...)
		l.inFlight++
		l.keys[j.OrderingKey] = true
		d.inFlight++
		d.metrics.inFlight.Inc()
		d.sends.Add(1)
		go d.attempt(j)
	}
}

// startQueued gives free workers to the queued lanes, in turn. Call with d.mu held.
func (d *Dispatcher) startQueued() {
	for len(d.turns) > 0 && d.inFlight < d.cfg.Workers {
		l := d.turns[0]
		d.turns = d.turns[1:]
		l.queued = false
		d.startReady(l)
	}
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

// finish frees the job's slot and starts the lane's next job. It wakes the claim loop
// when the lane runs low or the replica was full: otherwise the lane still has work and
// claiming for it now would cost a query for a few rows.
func (d *Dispatcher) finish(j adapters.Job) {
	d.mu.Lock()
	l := d.lanes[j.SubscriptionID]
	l.inFlight--
	delete(l.keys, j.OrderingKey)
	wasFull := d.held == heldPerWorker*d.cfg.Workers
	d.held--
	d.inFlight--
	d.metrics.inFlight.Dec()
	// Lanes already waiting for a worker go first; then this one, queueing if need be.
	d.startQueued()
	if !l.queued {
		d.startReady(l)
	}
	low := l.inFlight+len(l.waiting) < d.cfg.PerSubscription
	if l.inFlight == 0 && len(l.waiting) == 0 {
		delete(d.lanes, j.SubscriptionID)
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
	d.turns = nil
	var waiting []adapters.Job
	for id, l := range d.lanes {
		waiting = append(waiting, l.waiting...)
		d.held -= len(l.waiting)
		l.waiting = nil
		if l.inFlight == 0 {
			delete(d.lanes, id)
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
