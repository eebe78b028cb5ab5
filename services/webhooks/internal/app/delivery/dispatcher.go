// Package delivery is the delivery engine: it claims due deliveries from PostgreSQL,
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
package delivery

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/customerapi/platform/libs/worker"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

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
// another replica's claim held them locked for that moment, or a round of the turn
// across tenants stopped at maxTurnHops before coming round.
const contendedRetry = 50 * time.Millisecond

// ClaimTenants bounds the tenants with pending deliveries one claim's turn explores during
// a round (one index probe each); the next claim goes on where it stopped. The tenants the
// replica holds deliveries of, and those announced, are visited by every claim besides.
const ClaimTenants = 64

// QuietTenants bounds the tenants a claim's turn explores between rounds. Every due
// delivery the engine can know of is found by a round or visited as announced or held,
// so this turn is only a slow sweep that needs none of those signals; a claim that
// explored ClaimTenants here would probe them on every claim, doubling its time when a
// thousand tenants wait for retries.
const QuietTenants = 4

// maxTurnHops bounds the claims in a row that go on to the next tenants, during a round,
// because the previous one stopped at ClaimTenants (1,024 tenants per fill).
const maxTurnHops = 16

// round is a pass of the claims' turn across every tenant with pending deliveries. Most
// due deliveries need none, as the engine knows their tenant, which the claims visit
// directly (announced) besides the tenants the replica holds deliveries of: a new
// delivery's notification names it, and so does the engine's reading of the due times
// still to come (Queue.Upcoming: retries, mostly), when each comes. A round finds what
// the engine cannot know of that way: leases of a replica that stopped without giving
// its claims back (a round begins when the earliest lease read runs out), a delivery
// written without a notification or one missed while the listener was down (a round
// begins at start, when the listener (re)connects, and at least every Idle), due times
// past a full reading of them (more than dueBatch falling due at one moment), and a
// tenant left out of the announced ones (beyond maxAnnounced, or announced while the
// replica could not claim until the announcement ran out). It ends when the turn has
// come round to where it began and the last claim did not stop at its limit. Between
// rounds a claim explores QuietTenants only, and one that stops at that bound does not
// make the engine go on or poll: with many tenants waiting for retries, that would be a
// claim every few milliseconds for nothing.
type round struct {
	open    bool
	from    string // the turn's position when it began
	wrapped bool   // the turn went past the last tenant to the first
}

// dueBatch bounds the due times still to come the engine reads at once (Queue.Upcoming).
const dueBatch = 32

// rereadAfter is how long the engine goes at most without reading the due times still to
// come while it is busy (its claims stop at their limit, or the replica holds all it
// may): a retry is scheduled at least seconds ahead, so it is read before it is due.
const rereadAfter = time.Second

// Dispatcher runs the delivery engine of one replica.
type Dispatcher struct {
	cfg     Config
	queue   domain.Queue
	sender  domain.Sender
	notes   domain.Notifications
	log     *slog.Logger
	metrics domain.EngineMetrics

	wake    worker.Waker
	results chan domain.Result
	sends   sync.WaitGroup
	sendCtx context.Context
	after   string // where the next claim's turn across tenants begins (claim loop only)
	round   round  // claim loop only
	// roundBy is when the next round begins at the latest: Idle after the last one
	// began. Claim loop only.
	roundBy time.Time
	// upcoming are the due times still to come, with their tenants, as last read and not
	// come yet; horizon is the last of them when the reading was full (dueBatch: later due
	// times were not read), zero when it held every due time to come; leaseEnd is when the
	// earliest lease runs out, as last read (zero: none); all on the replica's clock
	// (readUpcoming). readAt is when they were read. Claim loop only.
	upcoming []domain.Falling
	horizon  time.Time
	leaseEnd time.Time
	readAt   time.Time
	// reround asks the claim loop for a round (askRound).
	reround atomic.Bool

	mu      sync.Mutex
	lanes   map[string]*lane   // by subscription ID
	tenants map[string]*tenant // by tenant ID, while the replica holds any of its deliveries
	// announced holds the tenants named by notifications (new deliveries), those whose
	// due times came (upcoming) and those the replica just finished holding deliveries
	// of, until a claim begun after that takes some of their deliveries or announceFor
	// passes: claims visit them besides their turn.
	announced map[string]announcement
	floors    *floors   // where the claims' probes of a tenant may start
	held      int       // claimed deliveries in memory
	inFlight  int       // attempts being made
	ready     []*tenant // tenants with a job ready to start and a free slot, waiting for a worker, in turn
	stopping  bool
}

// announcement is a tenant the claims visit besides their turn.
type announcement struct {
	at time.Time // when it was announced
	// seen reports that a claim begun after at visited the tenant without stopping at its
	// limit or finding rows locked, and took none of its deliveries: none was due for
	// this replica (another took them, or they were not due yet).
	seen bool
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
	waiting  []domain.Job
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

// New returns a Dispatcher, woken by notes of new deliveries.
func New(cfg Config, queue domain.Queue, sender domain.Sender, notes domain.Notifications, log *slog.Logger, m domain.EngineMetrics) *Dispatcher {
	if cfg.TenantConcurrency <= 0 {
		cfg.TenantConcurrency = cfg.Workers
	}
	return &Dispatcher{cfg: cfg, queue: queue, sender: sender, notes: notes, log: log, metrics: m,
		wake: worker.NewWaker(), results: make(chan domain.Result, 2*cfg.Workers),
		lanes: map[string]*lane{}, tenants: map[string]*tenant{}, announced: map[string]announcement{}, floors: newFloors()}
}

// announceFor is how long a notified tenant is visited by every claim unless a claim
// takes some of its deliveries first (the notification arrives when they are committed,
// so the next claim sees them; the rest is slack for claims of a busy replica).
const announceFor = 2 * time.Second

// maxAnnounced bounds the notified tenants remembered at once; beyond it, a tenant is
// found by a round of the claims' turn across tenants.
const maxAnnounced = 1024

// announce makes the claims visit a tenant that has new deliveries, even if the replica
// holds none of its deliveries by the time they claim.
func (d *Dispatcher) announce(tenantID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.announceLocked(tenantID)
}

// announceLocked is announce with d.mu held. A tenant beyond maxAnnounced asks for a
// round instead.
func (d *Dispatcher) announceLocked(tenantID string) {
	if _, ok := d.announced[tenantID]; ok || len(d.announced) < maxAnnounced {
		d.announced[tenantID] = announcement{at: time.Now()}
		return
	}
	d.askRound()
}

// askRound makes the engine begin a round as soon as none is open.
func (d *Dispatcher) askRound() {
	d.reround.Store(true)
	d.Poke()
}

// listener pokes the engine on every notification of new deliveries (and once at start
// and after every reconnection, for what happened meanwhile, when it also forgets the
// floors), announcing the tenant the notification names and lowering its floor to when
// they are due.
type listener struct{ d *Dispatcher }

// Listening implements domain.NotificationHandler.
func (l listener) Listening() {
	l.d.askRound() // notifications may have been missed meanwhile
	l.d.floors.forget(time.Now())
}

// Waiting implements domain.NotificationHandler.
func (l listener) Waiting() { l.d.Poke() }

// Notified implements domain.NotificationHandler.
func (l listener) Notified(tenantID string, due time.Time, known bool) {
	l.d.floors.notified(tenantID, due, known)
	l.d.announce(tenantID)
}

// Poke makes the engine look for due deliveries now. It never blocks.
func (d *Dispatcher) Poke() { d.wake.Wake() }

// Run delivers until ctx ends, then releases what it holds: claimed deliveries not yet
// attempted at once, attempts in flight after ShutdownGrace.
func (d *Dispatcher) Run(ctx context.Context) error {
	sendCtx, cancelSends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSends()
	d.sendCtx = sendCtx
	written := make(chan struct{})
	go func() { d.writeResults(context.WithoutCancel(ctx)); close(written) }()
	listened := make(chan struct{})
	go func() { d.notes.Listen(ctx, d.cfg.Idle, listener{d}); close(listened) }()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
		case <-d.wake.C():
		case <-timer.C:
		}
		if ctx.Err() != nil {
			break
		}
		d.fallDue(time.Now())
		if !d.round.open && (d.reround.Swap(false) || !time.Now().Before(d.roundBy)) {
			d.round = round{open: true, from: d.after}
			d.roundBy = time.Now().Add(d.cfg.Idle)
		}
		wait, settled := d.fill(ctx)
		if ctx.Err() == nil && (settled || time.Since(d.readAt) >= rereadAfter) && d.readUpcoming(ctx) {
			wait = 0 // something came by the database's clock: look again at once
		}
		timer.Reset(max(min(wait, d.untilNext()), time.Millisecond))
	}
	d.shutdown(cancelSends)
	close(d.results)
	<-written
	<-listened
	return nil
}

// fill claims due deliveries while the replica has room and returns how long to wait
// before looking again (a notification, a finished attempt or a due time read may come
// sooner), and whether it settled: nothing more is due that it could claim now.
func (d *Dispatcher) fill(ctx context.Context) (wait time.Duration, settled bool) {
	for hops := 0; ; {
		free, exclude, rooms := d.capacity()
		if free <= 0 {
			return d.cfg.Idle, false // a finishing attempt pokes
		}
		n := min(free, d.cfg.ClaimBatch)
		began := time.Now()
		c, err := d.claim(ctx, n, exclude, rooms)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("claiming deliveries failed; retrying", slog.Any("error", err))
			}
			return time.Second, false
		}
		d.accept(c.Jobs, began)
		got := len(c.Jobs)
		if got < n && c.Locked == 0 {
			d.visited(rooms, began)
		}
		d.advance(c, got == n)
		switch {
		case ctx.Err() != nil:
			return d.cfg.Idle, false // shutdown began: claim no more
		case got == n, got > 0 && c.More:
			continue // more may be due now
		case d.round.open && hops < maxTurnHops:
			hops++
			continue // the round goes on to the tenants after this claim's turn
		case c.Locked > 0, d.round.open:
			return contendedRetry, false
		}
		return d.cfg.Idle, true
	}
}

// readUpcoming reads the due times still to come and the earliest lease end, after
// announcing what came of the last reading by the database's clock, and reports whether
// something did. When the last reading was full and its horizon has come, due times past
// it may have come unread (a burst of retries due at one moment): a round finds them.
//
// The times read are kept on the replica's clock: shifted by how far the database's clock
// (Upcoming.Now) is from the replica's at the middle of the read. A replica whose clock
// ran ahead of the database's would otherwise find a due time come that the database
// does not, and claim for nothing, again and again, until the database's clock got there.
func (d *Dispatcher) readUpcoming(ctx context.Context) bool {
	began := time.Now()
	up, err := d.queue.Upcoming(ctx, dueBatch)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("reading the due times to come failed; retrying", slog.Any("error", err))
		}
		return false
	}
	d.readAt = time.Now()
	now := began.Add(d.readAt.Sub(began) / 2) // up.Now on the replica's clock
	came := d.fallDue(now)
	if !d.horizon.IsZero() && !d.horizon.After(now) {
		d.reround.Store(true)
		came = true
	}
	local := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return now.Add(t.Sub(up.Now))
	}
	for i := range up.Due {
		up.Due[i].At = local(up.Due[i].At)
	}
	d.upcoming, d.leaseEnd, d.horizon = up.Due, local(up.LeaseEnd), time.Time{}
	if len(up.Due) == dueBatch {
		d.horizon = up.Due[len(up.Due)-1].At
	}
	return came
}

// fallDue announces the tenants of the due times read that have come by now, and asks
// for a round when the lease end read has come. It reports whether anything came.
func (d *Dispatcher) fallDue(now time.Time) bool {
	n := 0
	for n < len(d.upcoming) && !d.upcoming[n].At.After(now) {
		n++
	}
	if n > 0 {
		d.mu.Lock()
		for _, f := range d.upcoming[:n] {
			d.announceLocked(f.TenantID)
		}
		d.mu.Unlock()
		d.upcoming = d.upcoming[n:]
	}
	lease := !d.leaseEnd.IsZero() && !d.leaseEnd.After(now)
	if lease {
		d.leaseEnd = time.Time{}
		d.reround.Store(true)
	}
	return n > 0 || lease
}

// untilNext returns how long until the next thing the engine waits for by the clock:
// the next due time read, the earliest lease end read, or (with no round open) the next
// round at the latest, which is now when one was asked for (askRound) while the last was
// open: its wake-up was taken by the loop that went on with that round; Idle when none
// is sooner.
func (d *Dispatcher) untilNext() time.Duration {
	if !d.round.open && d.reround.Load() {
		return 0
	}
	wait := d.cfg.Idle
	if len(d.upcoming) > 0 {
		wait = min(wait, time.Until(d.upcoming[0].At))
	}
	if !d.leaseEnd.IsZero() {
		wait = min(wait, time.Until(d.leaseEnd))
	}
	if !d.round.open {
		wait = min(wait, time.Until(d.roundBy))
	}
	return wait
}

// visited marks the announced tenants among rooms as seen by a claim begun at began.
func (d *Dispatcher) visited(rooms map[string]int, began time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id := range rooms {
		if a, ok := d.announced[id]; ok && a.at.Before(began) && !a.seen {
			a.seen = true
			d.announced[id] = a
		}
	}
}

// advance moves the claims' turn across tenants on to where the claim c left it, and
// ends the round when the turn has come round (within c, or past the last tenant and on
// to where the round began), unless c stopped at its limit (full): then c.After is the
// last tenant it served, and tenants its turn explored after that may have due
// deliveries.
func (d *Dispatcher) advance(c domain.Claimed, full bool) {
	prev := d.after
	d.after = c.After
	r := &d.round
	if !r.open {
		return
	}
	if c.After <= prev {
		r.wrapped = true
	}
	if !full && (!c.Unvisited || r.wrapped && c.After >= r.from) {
		*r = round{}
	}
}

// claimTimeout bounds one claim query.
const claimTimeout = 10 * time.Second

// claim leases up to n due deliveries, in turns across tenants, none of the
// subscriptions in exclude, at most rooms[t] of a tenant t the replica holds deliveries
// of and laneDepth × TenantConcurrency of another. The query runs on a context that
// shutdown does not cancel: a claim cancelled in flight may still have committed its
// leases on the server, and deliveries the engine never saw would wait out the whole
// lease. A claim that completes is accepted and then released by shutdown like any other.
func (d *Dispatcher) claim(ctx context.Context, n int, exclude []string, rooms map[string]int) (domain.Claimed, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	began := time.Now()
	floors, gen := d.floors.begin(began)
	tenants := QuietTenants
	if d.round.open {
		tenants = ClaimTenants
	}
	c, err := d.queue.Claim(ctx, domain.ClaimRequest{Limit: n, PerSubscription: laneDepth * d.cfg.PerSubscription,
		Exclude: exclude, After: d.after, Tenants: tenants, Rooms: rooms, DefaultRoom: d.tenantHeld(),
		Lease: d.cfg.Lease, Floors: floors})
	d.metrics.Claimed(time.Since(began).Seconds())
	d.floors.learn(gen, c.Floors)
	return c, err
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
	rooms := make(map[string]int, len(d.tenants)+len(d.announced))
	for id, t := range d.tenants {
		rooms[id] = max(d.tenantHeld()-t.held, 0)
	}
	now := time.Now()
	for id, a := range d.announced {
		switch _, held := d.tenants[id]; {
		case now.Sub(a.at) > announceFor:
			delete(d.announced, id)
			if !held && !a.seen {
				d.askRound() // no claim could take its deliveries meanwhile
			}
		case !held:
			rooms[id] = d.tenantHeld()
		}
	}
	return heldPerWorker*d.cfg.Workers - d.held, full, rooms
}

// accept queues jobs claimed by a claim begun at began in their lanes and starts what
// may start.
func (d *Dispatcher) accept(jobs []domain.Job, began time.Time) {
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
		if a, ok := d.announced[j.TenantID]; ok && a.at.Before(began) {
			delete(d.announced, j.TenantID) // the claim came after the notification
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
	d.metrics.InFlight(1)
	d.sends.Add(1)
	go d.attempt(j)
}

// attempt sends one job and hands its result to the writer.
func (d *Dispatcher) attempt(j domain.Job) {
	defer d.sends.Done()
	var res domain.Result
	if !j.Active {
		// The subscription was deactivated after the delivery was recorded.
		res = result(j, nil, domain.StatusFailed)
		d.metrics.Delivered("failed")
	} else {
		att, out := d.sender.Send(d.sendCtx, j)
		if d.sendCtx.Err() != nil {
			res = release(j) // abandoned at shutdown: attempt it again later
		} else {
			d.metrics.Attempted(out.Result, float64(att.DurationMs)/1000)
			res = d.decide(j, att, out)
		}
	}
	d.results <- res
	d.finish(j)
}

func result(j domain.Job, att *domain.Attempt, status domain.Status) domain.Result {
	return domain.Result{TenantID: j.TenantID, DeliveryID: j.DeliveryID, SubscriptionID: j.SubscriptionID,
		LeaseToken: j.LeaseToken, AttemptNo: j.AttemptNo, Attempt: att, Status: status, RetryStep: j.RetryStep}
}

// release gives a claim back unattempted: due again at once, same place in the schedule.
func release(j domain.Job) domain.Result { return result(j, nil, domain.StatusPending) }

// decide turns an attempt into the delivery's next state.
func (d *Dispatcher) decide(j domain.Job, att domain.Attempt, out domain.Outcome) domain.Result {
	switch {
	case out.Success:
		d.metrics.Delivered("succeeded")
		return result(j, &att, domain.StatusSucceeded)
	case out.Gone:
		d.metrics.Delivered("failed")
		r := result(j, &att, domain.StatusFailed)
		r.Gone = true
		return r
	}
	delay, ok := d.cfg.Policy.Next(j.RetryStep, out.RetryAfter, rand.Float64())
	if !ok {
		d.metrics.Delivered("failed")
		return result(j, &att, domain.StatusFailed)
	}
	d.metrics.Delivered("retry_scheduled")
	r := result(j, &att, domain.StatusPending)
	r.Delay, r.RetryStep = delay, j.RetryStep+1
	return r
}

// finish frees the job's slot and worker and starts what may start now: tenants already
// waiting for a worker go first, then this one. It wakes the claim loop when the lane
// runs low or the replica or the tenant held all it may: otherwise the lane still has
// work and claiming for it now would cost a query for a few rows.
func (d *Dispatcher) finish(j domain.Job) {
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
	d.metrics.InFlight(-1)
	d.offer(l)
	d.dispatch()
	low := l.inFlight+len(l.waiting) < d.cfg.PerSubscription
	if l.inFlight == 0 && len(l.waiting) == 0 {
		delete(d.lanes, j.SubscriptionID)
	}
	if t.held == 0 {
		delete(d.tenants, j.TenantID)
		// It may have more due (a claim takes at most laneDepth × PerSubscription of a
		// subscription): the next claims visit it as if notified.
		d.announceLocked(j.TenantID)
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
	var waiting []domain.Job
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
// previous batch is written goes in the next transaction. ctx carries no cancellation:
// results that arrive while Run stops are still recorded (write gives up on its own).
func (d *Dispatcher) writeResults(ctx context.Context) {
	batch := make([]domain.Result, 0, 256)
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
		d.write(ctx, batch)
	}
}

// write records one batch, retrying while the database is unreachable (the attempts
// waiting to report hold their slots meanwhile, which pauses the engine). At shutdown it
// gives up after a few tries: the leases run out and the deliveries are attempted again.
func (d *Dispatcher) write(ctx context.Context, batch []domain.Result) {
	var backoff worker.Backoff
	for try := 1; ; try++ {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		disabled, err := d.queue.Complete(wctx, batch, d.cfg.DisableAfter)
		cancel()
		if err == nil {
			d.floors.done(batch)
			for _, s := range disabled {
				reason := "failing"
				if s.Gone {
					reason = "gone"
				}
				d.metrics.Disabled(reason)
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
		backoff.Sleep(ctx) // ctx does not end: the results are recorded or given up above
	}
}
