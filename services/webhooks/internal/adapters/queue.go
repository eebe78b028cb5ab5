package adapters

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/consumer"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// recordSQL records the deliveries of one event in one statement: it numbers the
// matching subscriptions, gives the ones numbered in ($7, $7 + len($6)] the pre-made IDs
// in $6, inserts them (a delivery already there for the event is kept as it is), wakes
// the workers if it inserted any, and returns the number of matches and of inserts.
const recordSQL = `
WITH matched AS (
	SELECT subscription_id, row_number() OVER (ORDER BY subscription_id) AS rn
	FROM subscriptions
	WHERE tenant_id = $1 AND active AND (events IS NULL OR $3 = ANY (events))
), inserted AS (
	INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type, ordering_key, body,
		status, next_attempt_at, created_at, updated_at)
	SELECT $1, ($6::text[])[m.rn - $7], m.subscription_id, $2, $3, $4, $5, 'pending', n.now, n.now, n.now
	FROM matched m, (SELECT date_trunc('milliseconds', now()) AS now) AS n
	WHERE m.rn > $7 AND m.rn <= $7 + cardinality($6::text[])
	ON CONFLICT (tenant_id, subscription_id, event_id) DO NOTHING
	RETURNING 1
)
SELECT (SELECT count(*) FROM matched), (SELECT count(*) FROM inserted),
	(SELECT count(*) FROM (SELECT pg_notify($8, '') FROM inserted LIMIT 1) AS woken)`

// idsPerRound is how many delivery IDs a round of the intake brings: most events match
// fewer subscriptions, so one statement records them all.
const idsPerRound = 16

// RecordEvent is the intake: inside the consumer's transaction it records one pending
// delivery of evt per active subscription of the event's tenant that lists its type. A
// delivery is unique per subscription and event ID, so an event seen twice adds nothing.
// It wakes the workers (the notification arrives when tx commits) and returns the number
// of deliveries added.
func (s *Store) RecordEvent(ctx context.Context, tx pgx.Tx, evt events.Envelope) (int64, error) {
	body, err := domain.NewBody(evt)
	if err != nil {
		return 0, consumer.Permanent(err) // retrying cannot repair the payload
	}
	key := evt.Subject
	if key == "" {
		key = evt.ID
	}
	var added int64
	for offset := 0; ; offset += idsPerRound {
		deliveryIDs := make([]string, idsPerRound)
		for i := range deliveryIDs {
			deliveryIDs[i] = ids.New("delivery")
		}
		var matched, inserted, woken int64
		if err := tx.QueryRow(ctx, recordSQL, evt.TenantID, evt.ID, evt.Type, key, body, deliveryIDs, offset, Channel).
			Scan(&matched, &inserted, &woken); err != nil {
			return 0, fmt.Errorf("record deliveries: %w", err)
		}
		added += inserted
		if matched <= int64(offset+idsPerRound) {
			return added, nil
		}
	}
}

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
}

// claimSQL leases up to $1 due deliveries, at most $2 per subscription, none of the
// subscriptions in $3, for $4 seconds. It looks at a bounded window of the earliest due
// deliveries (so a claim costs the same however long the queue), ranks them per
// subscription, and locks with SKIP LOCKED so replicas claiming at once never wait for
// or double-claim a row. The update re-checks each row after locking. Deliveries are
// only ever reached by primary key: joined to subscriptions directly, the planner may
// walk a subscription's every delivery instead.
const claimSQL = `
WITH candidates AS (
	SELECT tenant_id, delivery_id, subscription_id, next_attempt_at, seq
	FROM deliveries
	WHERE status = 'pending' AND next_attempt_at <= now()
	  AND (lease_expires_at IS NULL OR lease_expires_at <= now())
	  AND subscription_id <> ALL ($3::text[])
	ORDER BY next_attempt_at, seq
	LIMIT $1 * 4
), ranked AS (
	SELECT *, row_number() OVER (PARTITION BY subscription_id ORDER BY next_attempt_at, seq) AS rn
	FROM candidates
), picked AS (
	SELECT d.tenant_id, d.delivery_id
	FROM deliveries d JOIN ranked r ON r.tenant_id = d.tenant_id AND r.delivery_id = d.delivery_id
	WHERE r.rn <= $2
	ORDER BY r.next_attempt_at, r.seq
	LIMIT $1
	FOR NO KEY UPDATE OF d SKIP LOCKED
), claimed AS (
	UPDATE deliveries d
	SET lease_expires_at = now() + make_interval(secs => $4::float8), lease_token = d.lease_token + 1,
	    attempt_count = d.attempt_count + 1
	FROM picked p
	WHERE d.tenant_id = p.tenant_id AND d.delivery_id = p.delivery_id
	  AND d.status = 'pending' AND d.next_attempt_at <= now()
	  AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= now())
	RETURNING d.tenant_id, d.delivery_id, d.subscription_id, d.event_id, d.ordering_key, d.seq, d.body,
		d.next_attempt_at, d.retry_step, d.attempt_count, d.lease_token
)
SELECT c.*, s.url, s.secret, CASE WHEN s.previous_secret_until > now() THEN s.previous_secret END, s.active
FROM claimed c JOIN subscriptions s ON s.tenant_id = c.tenant_id AND s.subscription_id = c.subscription_id`

// Claim leases up to limit due deliveries for an attempt each, at most perSubscription
// of one subscription and none of the subscriptions in exclude, in due order.
func (s *Store) Claim(ctx context.Context, limit, perSubscription int, exclude []string, lease time.Duration) ([]Job, error) {
	if exclude == nil {
		exclude = []string{}
	}
	rows, err := s.pool.Query(ctx, claimSQL, limit, perSubscription, exclude, lease.Seconds())
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Job, error) {
		var j Job
		err := r.Scan(&j.TenantID, &j.DeliveryID, &j.SubscriptionID, &j.EventID, &j.OrderingKey, &j.Seq, &j.Body,
			&j.DueAt, &j.RetryStep, &j.AttemptNo, &j.LeaseToken, &j.URL, &j.Secret, &j.PreviousSecret, &j.Active)
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	// RETURNING keeps no order; attempts start in due order.
	slices.SortFunc(jobs, func(a, b Job) int {
		return cmp.Or(a.DueAt.Compare(b.DueAt), cmp.Compare(a.Seq, b.Seq))
	})
	return jobs, nil
}

// NextDue returns how long until a delivery may be claimed: the earliest due time of an
// unheld delivery outside exclude, or the earliest lease to run out. ok is false when
// nothing is pending.
func (s *Store) NextDue(ctx context.Context, exclude []string) (wait time.Duration, ok bool, err error) {
	if exclude == nil {
		exclude = []string{}
	}
	var secs *float64
	err = s.pool.QueryRow(ctx, `SELECT extract(epoch FROM least(
		(SELECT next_attempt_at FROM deliveries
			WHERE status = 'pending' AND lease_expires_at IS NULL AND subscription_id <> ALL ($1::text[])
			ORDER BY next_attempt_at, seq LIMIT 1),
		(SELECT min(lease_expires_at) FROM deliveries WHERE lease_expires_at IS NOT NULL)) - now())::float8`,
		exclude).Scan(&secs)
	if err != nil {
		return 0, false, fmt.Errorf("next due delivery: %w", err)
	}
	if secs == nil {
		return 0, false, nil
	}
	return time.Duration(*secs * float64(time.Second)), true, nil
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
	Attempt *domain.Attempt
	// Status is the delivery's new state. Pending schedules the next attempt after Delay
	// (a released claim is due again at once), unless the subscription is no longer
	// active, which fails the delivery instead.
	Status    domain.Status
	Delay     time.Duration
	RetryStep int
	// Gone reports a 410 answer: the subscription is disabled at once.
	Gone bool
}

// Disabled reports a subscription the platform deactivated while completing results.
type Disabled struct {
	TenantID, SubscriptionID, Reason string
	Gone                             bool
}

type subKey struct{ tenant, sub string }

// streak sums up a batch's attempts of one subscription in time order.
type streak struct {
	succeeded bool       // some attempt succeeded
	since     *time.Time // first failure after the last success (or of the batch)
	lastFail  *time.Time
	gone      bool
}

// Complete records a batch of results in one transaction: the attempts, each
// subscription's failure streak (a success ends it), disabling of subscriptions that
// answered 410 or failed for disableAfter without a success (their pending deliveries
// fail), and the deliveries' new states. A result whose lease was taken over by another
// claim (the lease ran out) records its attempt but leaves the delivery to that claim.
// Without failures in the batch every statement goes in one round trip.
func (s *Store) Complete(ctx context.Context, results []Result, disableAfter time.Duration) ([]Disabled, error) {
	streaks := summarise(results)
	failing := false
	for _, st := range streaks {
		failing = failing || st.gone || st.lastFail != nil
	}
	var disabled []Disabled
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		disabled = nil
		b := &pgx.Batch{}
		queueAttempts(b, results)
		queueStreaks(b, streaks)
		if !failing {
			queueDeliveries(b, results)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("record results: %w", err)
		}
		if !failing {
			return nil
		}
		var err error
		if disabled, err = disable(ctx, tx, streaks, disableAfter); err != nil {
			return err
		}
		b = &pgx.Batch{}
		queueDeliveries(b, results)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("update deliveries: %w", err)
		}
		return nil
	})
	return disabled, err
}

// queueAttempts inserts the attempts of the results. A delivery deleted with its
// subscription meanwhile keeps no attempts.
func queueAttempts(b *pgx.Batch, results []Result) {
	var (
		tenants, deliveries []string
		nos, durations      []int64
		at                  []time.Time
		codes               []*int
		errs, snippets      []*string
	)
	for _, r := range results {
		if a := r.Attempt; a != nil {
			tenants, deliveries = append(tenants, r.TenantID), append(deliveries, r.DeliveryID)
			nos, at, codes = append(nos, int64(r.AttemptNo)), append(at, a.AttemptedAt), append(codes, a.StatusCode)
			durations, errs, snippets = append(durations, a.DurationMs), append(errs, a.Error), append(snippets, a.ResponseSnippet)
		}
	}
	if len(tenants) == 0 {
		return
	}
	b.Queue(`INSERT INTO delivery_attempts
			(tenant_id, delivery_id, attempt_no, attempted_at, status_code, duration_ms, error, response_snippet)
		SELECT u.* FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::int[], $6::int[], $7::text[], $8::text[])
			AS u(tenant_id, delivery_id, attempt_no, attempted_at, status_code, duration_ms, error, response_snippet)
		WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.tenant_id = u.tenant_id AND d.delivery_id = u.delivery_id)
		ON CONFLICT DO NOTHING`, tenants, deliveries, nos, at, codes, durations, errs, snippets)
}

func summarise(results []Result) map[subKey]*streak {
	var attempts []Result
	for _, r := range results {
		if r.Attempt != nil {
			attempts = append(attempts, r)
		}
	}
	slices.SortStableFunc(attempts, func(a, b Result) int { return a.Attempt.AttemptedAt.Compare(b.Attempt.AttemptedAt) })
	out := map[subKey]*streak{}
	for _, r := range attempts {
		k := subKey{r.TenantID, r.SubscriptionID}
		st := out[k]
		if st == nil {
			st = &streak{}
			out[k] = st
		}
		at := r.Attempt.AttemptedAt
		if r.Status == domain.StatusSucceeded {
			st.succeeded, st.since, st.lastFail = true, nil, nil
			continue
		}
		if st.since == nil {
			st.since = &at
		}
		st.lastFail = &at
		st.gone = st.gone || r.Gone
	}
	return out
}

// queueStreaks sets failing_since: a success in the batch restarts it from the first
// later failure (or clears it); failures only start it when none is running. Rows whose
// value stays are not written.
func queueStreaks(b *pgx.Batch, streaks map[subKey]*streak) {
	if len(streaks) == 0 {
		return
	}
	var tenants, subs []string
	var resets []bool
	var since []*time.Time
	for k, st := range streaks {
		tenants, subs = append(tenants, k.tenant), append(subs, k.sub)
		resets, since = append(resets, st.succeeded), append(since, st.since)
	}
	b.Queue(`UPDATE subscriptions s SET failing_since = v.next
		FROM (SELECT u.tenant_id, u.subscription_id,
				CASE WHEN u.reset THEN u.since ELSE coalesce(s2.failing_since, u.since) END AS next
			FROM unnest($1::text[], $2::text[], $3::bool[], $4::timestamptz[]) AS u(tenant_id, subscription_id, reset, since)
			JOIN subscriptions s2 ON s2.tenant_id = u.tenant_id AND s2.subscription_id = u.subscription_id) AS v
		WHERE s.tenant_id = v.tenant_id AND s.subscription_id = v.subscription_id
		  AND s.failing_since IS DISTINCT FROM v.next`, tenants, subs, resets, since)
}

// disable deactivates the subscriptions that answered 410, or whose failure streak
// reached disableAfter at their latest failed attempt, and fails their pending deliveries.
func disable(ctx context.Context, tx pgx.Tx, streaks map[subKey]*streak, disableAfter time.Duration) ([]Disabled, error) {
	var out []Disabled
	for k, st := range streaks {
		if !st.gone && st.lastFail == nil {
			continue
		}
		var since *time.Time
		err := tx.QueryRow(ctx, `SELECT failing_since FROM subscriptions
			WHERE tenant_id = $1 AND subscription_id = $2 AND active FOR NO KEY UPDATE`, k.tenant, k.sub).Scan(&since)
		if postgres.IsNoRows(err) {
			continue // deleted or already inactive
		}
		if err != nil {
			return nil, fmt.Errorf("check failure streak: %w", err)
		}
		var reason string
		switch {
		case st.gone:
			reason = domain.ReasonGone
		case since != nil && st.lastFail != nil && st.lastFail.Sub(*since) >= disableAfter:
			reason = domain.ReasonFailing(disableAfter, *since)
		default:
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE subscriptions SET active = false, disabled_reason = $3,
				disabled_at = date_trunc('milliseconds', now()), updated_at = date_trunc('milliseconds', now())
			WHERE tenant_id = $1 AND subscription_id = $2`, k.tenant, k.sub, reason); err != nil {
			return nil, fmt.Errorf("disable subscription: %w", err)
		}
		if err := failPending(ctx, tx, k.tenant, []string{k.sub}); err != nil {
			return nil, err
		}
		out = append(out, Disabled{TenantID: k.tenant, SubscriptionID: k.sub, Reason: reason, Gone: st.gone})
	}
	return out, nil
}

// queueDeliveries sets the deliveries' new states, for results whose claim still holds.
// A retry of a subscription that is no longer active fails instead. The subscription's
// state is looked up first, so that deliveries are reached by primary key only.
func queueDeliveries(b *pgx.Batch, results []Result) {
	n := len(results)
	tenants, deliveries, subs, statuses := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	tokens, delays, steps := make([]int64, n), make([]float64, n), make([]int64, n)
	for i, r := range results {
		tenants[i], deliveries[i], subs[i], statuses[i] = r.TenantID, r.DeliveryID, r.SubscriptionID, string(r.Status)
		tokens[i], delays[i], steps[i] = r.LeaseToken, r.Delay.Seconds(), int64(r.RetryStep)
	}
	b.Queue(`WITH u AS MATERIALIZED (
			SELECT u.tenant_id, u.delivery_id, u.token, u.status, u.delay, u.step, coalesce(s.active, false) AS active
			FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::float8[], $7::int[])
				AS u(tenant_id, delivery_id, subscription_id, token, status, delay, step)
			LEFT JOIN subscriptions s ON s.tenant_id = u.tenant_id AND s.subscription_id = u.subscription_id
		)
		UPDATE deliveries d SET
			status = CASE WHEN u.status = 'pending' AND NOT u.active THEN 'failed' ELSE u.status END,
			next_attempt_at = CASE WHEN u.status = 'pending' AND u.active
				THEN date_trunc('milliseconds', now() + make_interval(secs => u.delay)) END,
			retry_step = u.step, lease_expires_at = NULL, updated_at = date_trunc('milliseconds', now())
		FROM u
		WHERE d.tenant_id = u.tenant_id AND d.delivery_id = u.delivery_id AND d.lease_token = u.token`,
		tenants, deliveries, subs, tokens, statuses, delays, steps)
}

// QueueStats describes the pending deliveries.
type QueueStats struct {
	// Pending counts the pending deliveries (due, held or waiting for a retry).
	Pending int64
	// OldestPendingAge is the age of the oldest pending delivery.
	OldestPendingAge time.Duration
	// DispatchLag is how long the earliest due, unheld delivery has been waiting.
	DispatchLag time.Duration
}

// Stats reads the queue's size and ages.
func (s *Store) Stats(ctx context.Context) (QueueStats, error) {
	var st QueueStats
	var oldest, lag *float64
	err := s.pool.QueryRow(ctx, `SELECT count(*), extract(epoch FROM now() - min(created_at))::float8,
		extract(epoch FROM now() - min(next_attempt_at) FILTER (WHERE next_attempt_at <= now()
			AND (lease_expires_at IS NULL OR lease_expires_at <= now())))::float8
		FROM deliveries WHERE status = 'pending'`).Scan(&st.Pending, &oldest, &lag)
	if err != nil {
		return QueueStats{}, fmt.Errorf("queue stats: %w", err)
	}
	if oldest != nil {
		st.OldestPendingAge = time.Duration(max(*oldest, 0) * float64(time.Second))
	}
	if lag != nil {
		st.DispatchLag = time.Duration(max(*lag, 0) * float64(time.Second))
	}
	return st, nil
}

// PurgeFinished deletes up to limit deliveries (with their attempts) that ended before
// the given time, and returns how many it deleted.
func (s *Store) PurgeFinished(ctx context.Context, before time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM deliveries WHERE (tenant_id, delivery_id) IN (
		SELECT tenant_id, delivery_id FROM deliveries WHERE status <> 'pending' AND updated_at < $1
		ORDER BY updated_at LIMIT $2)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("purge deliveries: %w", err)
	}
	return tag.RowsAffected(), nil
}
