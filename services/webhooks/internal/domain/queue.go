package domain

import (
	"context"
	"time"
)

// Job is a claimed delivery with everything an attempt needs.
type Job struct {
	TenantID       string
	DeliveryID     string
	SubscriptionID string
	EventID        string
	// OrderingKey is the event's subject: jobs with the same key go one at a time.
	OrderingKey string
	Seq         int64
	Body        []byte
	DueAt       time.Time
	RetryStep   int
	// AttemptNo numbers the attempt this claim makes.
	AttemptNo int
	// LeaseToken proves the claim when the result is written.
	LeaseToken int64
	URL        string
	Secret     string
	// PreviousSecret is set during the grace period after a rotation.
	PreviousSecret *string
	// Active is false when the subscription was deactivated after the delivery was made.
	Active bool
	// Test is true for the delivery of a test event (Repository.RecordTestDelivery).
	Test bool
}

// ClaimRequest says what one claim may take.
type ClaimRequest struct {
	// Limit bounds the deliveries claimed.
	Limit int
	// PerSubscription bounds the deliveries claimed of one subscription.
	PerSubscription int
	// Exclude lists subscriptions of which nothing is claimed.
	Exclude []string
	// After is the tenant after which the claim's turn across tenants begins: the previous
	// claim's Claimed.After ("" begins with the first tenant).
	After string
	// Tenants bounds the tenants with pending deliveries the claim's turn explores; the
	// tenants in Rooms with room are visited besides.
	Tenants int
	// Rooms bounds the deliveries claimed of each tenant listed (0: none); DefaultRoom
	// bounds those of the others.
	Rooms       map[string]int
	DefaultRoom int
	// Lease is how long the claimed deliveries are held.
	Lease time.Duration
	// Floors are what the engine knows of some tenants: none of the tenant's pending
	// deliveries is due before its floor. A tenant's probes start there instead of at
	// the front of its part of the queue's index, which holds the entries of its finished
	// deliveries until vacuum removes them. A floor too late would hide deliveries: see
	// Claimed.Floors for where they come from.
	Floors map[string]time.Time
}

// Claimed is what a claim took and where the next claim should look.
type Claimed struct {
	// Jobs are the claimed deliveries, in due order.
	Jobs []Job
	// After is where the next claim's turn across tenants should begin.
	After string
	// Unvisited reports that the turn stopped at the Tenants bound before coming round:
	// tenants after After may have due deliveries.
	Unvisited bool
	// More reports that a tenant may have more due deliveries than the claim looked at.
	More bool
	// Locked counts the deliveries the claim meant to take but found held by another claim.
	Locked int
	// Floors holds, for every tenant the claim probed, the earliest due time of its
	// pending deliveries, or the claim's time when it had none. It was true in the
	// claim's snapshot; a delivery that becomes pending later may be due before it only
	// if its transaction began before the claim, and its notification says when it is due
	// (Notifications).
	Floors map[string]time.Time
}

// Falling is a pending delivery's due time still to come, and its tenant.
type Falling struct {
	At       time.Time
	TenantID string
}

// Upcoming is what falls due after now: no claim can take it yet.
type Upcoming struct {
	// Now is the database's clock when it was read.
	Now time.Time
	// Due are the earliest due times of pending deliveries after Now, in due order, at
	// most the limit asked: retries, mostly (a new delivery is due when written).
	Due []Falling
	// LeaseEnd is when the earliest lease still running runs out (zero: none): a
	// replica that claimed the delivery stopped without giving it back.
	LeaseEnd time.Time
}

// Result is the end of one claim: an attempt's outcome, or a claim given back.
type Result struct {
	TenantID       string
	DeliveryID     string
	SubscriptionID string
	LeaseToken     int64
	AttemptNo      int
	// Attempt is what was tried; nil when nothing was sent (a claim released at
	// shutdown, or a delivery of a deactivated subscription).
	Attempt *Attempt
	// Status is the delivery's new state. Pending schedules the next attempt after Delay
	// (a released claim is due again at once), unless the subscription is no longer
	// active, which fails the delivery instead.
	Status    Status
	Delay     time.Duration
	RetryStep int
	// Gone reports a 410 answer: the subscription is disabled at once.
	Gone bool
}

// Disabled reports a subscription the platform deactivated while completing results.
type Disabled struct {
	TenantID, SubscriptionID, Reason string
	Gone                             bool
	// URL is the subscription's, At when it was disabled.
	URL string
	At  time.Time
}

// QueueStats describes the pending deliveries.
type QueueStats struct {
	// Pending counts the pending deliveries (due, held or waiting for a retry): exactly up
	// to a bound (adapters.ExactDepth), PostgreSQL's planner estimate beyond it.
	Pending int64
	// OldestPendingAge is the age of the oldest pending delivery.
	OldestPendingAge time.Duration
	// DispatchLag is how long the earliest due, unheld delivery has been waiting.
	DispatchLag time.Duration
}

// Resealed is what one pass of Resealer.ResealSecrets did.
type Resealed struct {
	// Sealed counts the rows sealed again under the primary key.
	Sealed int
	// Unreadable lists the subscriptions whose secrets no key of the ring opens.
	Unreadable []string
	// Remaining counts the rows still not sealed under the primary key after the pass
	// (the unreadable ones, rows locked at the time, rows written meanwhile by a replica
	// with another primary key).
	Remaining int64
}

// Queue is what the delivery engine needs from storage.
type Queue interface {
	// Claim leases due deliveries for an attempt each, in turns across tenants.
	Claim(ctx context.Context, req ClaimRequest) (Claimed, error)
	// Upcoming reads the earliest due times still to come, at most limit, and the earliest lease end.
	Upcoming(ctx context.Context, limit int) (Upcoming, error)
	// Complete records a batch of results and returns the subscriptions it disabled.
	Complete(ctx context.Context, results []Result, disableAfter time.Duration) ([]Disabled, error)
}

// NotificationHandler takes in the notifications of new deliveries.
type NotificationHandler interface {
	// Listening is called when the listener (re)connects: notifications may have been missed.
	Listening()
	// Waiting is called before each wait for the next notification (at most idle long).
	Waiting()
	// Notified takes a notification of pending deliveries of tenantID due at due (known
	// false: the notification did not say when).
	Notified(tenantID string, due time.Time, known bool)
}

// Notifications tell the engine of new deliveries as they are committed.
type Notifications interface {
	// Listen passes notifications to h until ctx ends, reconnecting after a failure.
	Listen(ctx context.Context, idle time.Duration, h NotificationHandler)
}

// Outcome classifies an attempt for the retry decision.
type Outcome struct {
	// Result labels the attempt for metrics: success, http_error, timeout,
	// network_error or refused.
	Result string
	// Success is a 2xx answer.
	Success bool
	// Gone is a 410 answer: the receiver asks to stop.
	Gone bool
	// RetryAfter is the wait a 429 or 503 answer asked for (0 when none).
	RetryAfter time.Duration
}

// Sender makes one attempt of a claimed delivery.
type Sender interface {
	Send(ctx context.Context, job Job) (Attempt, Outcome)
}

// EngineMetrics records what the delivery engine does.
type EngineMetrics interface {
	// Claimed records a claim query's duration in seconds.
	Claimed(seconds float64)
	// InFlight adds n to the attempts in flight.
	InFlight(n int)
	// Attempted records an attempt's result (Outcome.Result) and duration in seconds.
	Attempted(result string, seconds float64)
	// Delivered records a delivery's outcome after an attempt: succeeded, retry_scheduled or failed.
	Delivered(outcome string)
	// Disabled records a subscription disabled, by reason: gone or failing.
	Disabled(reason string)
}

// Purger deletes up to limit finished deliveries last updated before a time and says how
// many it deleted.
type Purger interface {
	PurgeFinished(ctx context.Context, before time.Time, limit int) (int64, error)
}

// Resealer seals stored secrets again under the primary key.
type Resealer interface {
	ResealSecrets(ctx context.Context, batch int) (Resealed, error)
}
