package delivery

import (
	"maps"
	"sync"
	"time"

	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// maxFloors bounds the tenants whose floors are kept; the others' probes start at the
// front of their part of the queue's index, as without floors.
const maxFloors = 256

// floorLife is how long floors are kept at most before they are all forgotten: the bound
// on how late a delivery written outside the service (without a notification) is found.
const floorLife = time.Minute

// floorAfter is how many deliveries of a tenant the replica must have finished since the
// floors were last forgotten before it keeps the tenant's floor. A floor costs the claim a
// second short probe (the turn looks for other tenants before the floored one, then
// probes it), which pays only when the tenant left enough dead entries to walk: two per
// finished delivery, about a hundred to an index page.
const floorAfter = 256

// maxFinished bounds the tenants whose finished deliveries are counted.
const maxFinished = 4096

// floors keeps, for tenants the claims probed that finished many deliveries lately
// (floorAfter), a time before which none of the tenant's pending deliveries is due: its
// floor (domain.ClaimRequest.Floors). A claim's probes of the tenant start there
// instead of walking the index entries of every delivery the tenant finished since
// vacuum last ran, thousands at a high rate.
//
// A claim's floors (domain.Claimed.Floors) hold in its snapshot. A delivery may
// become pending later in three ways, and must never be due before a floor kept:
//   - an attempt's result (a retry, a claim given back) makes it due again no earlier
//     than when it was claimed, so no earlier than the floor of any snapshot it was
//     pending in;
//   - a new delivery (the intake, a test event, a retry by hand) is announced by a
//     notification that says when it is due: it lowers the tenant's floor, and also what
//     the claim in flight learns, as that claim's snapshot may not have seen it;
//   - anything without a notification (a delivery written by hand, or one announced
//     while the listener was down): the floors are forgotten when the listener
//     (re)connects and at least every floorLife, and a claim in flight then learns nothing.
type floors struct {
	mu       sync.Mutex
	at       map[string]time.Time
	finished map[string]int // deliveries finished per tenant since the floors were forgotten
	// claiming is true while a claim is in flight; lowered then holds the earliest due
	// time notified per tenant since it began (the zero time: not said, forget the
	// tenant), and spoiled that more tenants were notified than lowered may hold.
	claiming bool
	lowered  map[string]time.Time
	spoiled  bool
	gen      uint64    // counts the times every floor was forgotten
	since    time.Time // when every floor was last forgotten
}

func newFloors() *floors {
	return &floors{at: map[string]time.Time{}, finished: map[string]int{}, lowered: map[string]time.Time{}, since: time.Now()}
}

// done counts the deliveries of a written batch of results per tenant (each left dead
// index entries behind).
func (f *floors) done(results []domain.Result) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range results {
		if _, ok := f.finished[r.TenantID]; ok || len(f.finished) < maxFinished {
			f.finished[r.TenantID]++
		}
	}
}

// notified takes in a notification of pending deliveries of tenantID due at due (known
// false: the notification did not say when).
func (f *floors) notified(tenantID string, due time.Time, known bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !known {
		delete(f.at, tenantID)
	} else if floor, ok := f.at[tenantID]; ok && due.Before(floor) {
		f.at[tenantID] = due
	}
	if !f.claiming {
		return
	}
	low, ok := f.lowered[tenantID]
	switch {
	case !ok && len(f.lowered) >= maxFloors:
		f.spoiled = true
	case !known:
		f.lowered[tenantID] = time.Time{}
	case !ok || !low.IsZero() && due.Before(low):
		f.lowered[tenantID] = due
	}
}

// begin starts a claim at now: it returns the floors the claim may use and the token to
// give learn with what the claim found.
func (f *floors) begin(now time.Time) (map[string]time.Time, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Sub(f.since) >= floorLife {
		f.forgetLocked(now)
	}
	f.claiming, f.spoiled = true, false
	clear(f.lowered)
	return maps.Clone(f.at), f.gen
}

// learn takes in the floors found by the claim begun with token gen (nil when the claim
// failed), lowered by what was notified meanwhile.
func (f *floors) learn(gen uint64, found map[string]time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claiming = false
	if gen != f.gen || f.spoiled {
		return
	}
	for id, floor := range found {
		if low, ok := f.lowered[id]; ok {
			if low.IsZero() {
				delete(f.at, id)
				continue
			}
			floor = minTime(floor, low)
		}
		if _, ok := f.at[id]; ok || len(f.at) < maxFloors && f.finished[id] >= floorAfter {
			f.at[id] = floor
		}
	}
}

// forget drops every floor, and what the claim in flight would learn (notifications may
// have been missed).
func (f *floors) forget(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgetLocked(now)
}

func (f *floors) forgetLocked(now time.Time) {
	clear(f.at)
	clear(f.finished)
	f.gen++
	f.since = now
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
