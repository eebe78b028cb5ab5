package adapters

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
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
// the workers if it inserted any (NotificationPayload: the tenant and when they are
// due), and returns the number of matches and of inserts. $9 names a subscription left
// out ("" for none).
const recordSQL = `
WITH n AS (
	SELECT date_trunc('milliseconds', now()) AS now
), matched AS (
	SELECT subscription_id, row_number() OVER (ORDER BY subscription_id) AS rn
	FROM subscriptions
	WHERE tenant_id = $1 AND active AND (events IS NULL OR $3 = ANY (events)) AND subscription_id <> $9
), inserted AS (
	INSERT INTO deliveries (tenant_id, delivery_id, subscription_id, event_id, event_type, ordering_key, body,
		status, next_attempt_at, created_at, updated_at)
	SELECT $1, ($6::text[])[m.rn - $7], m.subscription_id, $2, $3, $4, $5, 'pending', n.now, n.now, n.now
	FROM matched m, n
	WHERE m.rn > $7 AND m.rn <= $7 + cardinality($6::text[])
	ON CONFLICT (tenant_id, subscription_id, event_id) DO NOTHING
	RETURNING 1
)
SELECT (SELECT count(*) FROM matched), (SELECT count(*) FROM inserted),
	(SELECT count(*) FROM (SELECT pg_notify($8, $1 || ' ' || (extract(epoch FROM n.now) * 1000000)::bigint)
		FROM (SELECT 1 FROM inserted LIMIT 1) AS i, n) AS woken)`

// idsPerRound is how many delivery IDs a round of the intake brings: most events match
// fewer subscriptions, so one statement records them all.
const idsPerRound = 16

// Intake returns the intake's repository inside the consumer's transaction tx.
func Intake(tx pgx.Tx) domain.EventRecorder { return intake{tx} }

// intake is the intake's repository inside a transaction.
type intake struct{ tx pgx.Tx }

// RecordEvent records one pending delivery of evt per active subscription of the event's
// tenant that lists its type. A delivery is unique per subscription and event ID, so an
// event seen twice adds nothing. It wakes the workers (the notification arrives when the
// transaction commits) and returns the number of deliveries added.
func (i intake) RecordEvent(ctx context.Context, evt events.Envelope) (int64, error) {
	return recordDeliveries(ctx, i.tx, evt, "")
}

// recordDeliveries is intake.RecordEvent, leaving out the subscription except.
func recordDeliveries(ctx context.Context, tx pgx.Tx, evt events.Envelope, except string) (int64, error) {
	body, err := domain.NewBody(evt)
	if err != nil {
		return 0, consumer.Permanent(err) // retrying cannot repair the payload
	}
	key := evt.Subject
	if key == "" {
		key = evt.ID
	}
	if err := recordEvent(ctx, tx, evt.TenantID, evt.ID, evt.Type, key, evt.OccurredAt, body); err != nil {
		return 0, err
	}
	var added int64
	for offset := 0; ; offset += idsPerRound {
		deliveryIDs := make([]string, idsPerRound)
		for i := range deliveryIDs {
			deliveryIDs[i] = ids.New("delivery")
		}
		var matched, inserted, woken int64
		if err := tx.QueryRow(ctx, recordSQL, evt.TenantID, evt.ID, evt.Type, key, body, deliveryIDs, offset, Channel, except).
			Scan(&matched, &inserted, &woken); err != nil {
			return 0, fmt.Errorf("record deliveries: %w", err)
		}
		added += inserted
		if matched <= int64(offset+idsPerRound) {
			return added, nil
		}
	}
}

// claimSQL leases due deliveries in turns across tenants (deficit round robin). $1 bounds
// the deliveries, $2 those of one subscription, $3 lists subscriptions to skip, $4 is the
// lease in seconds; $5 is the tenant after which the turn begins, $6 bounds the tenants
// the turn explores, and each tenant may get up to its room: $8 for the tenants in $7,
// $9 for the others. $10 lists tenants in order (COLLATE "C") with their floors in $11
// (domain.ClaimRequest.Floors).
//
//   - ring explores the tenants with pending deliveries in order, from the one after $5
//     to the last, then (wrapped) from the first up to $5 itself, at most $6 of them: one
//     probe of deliveries_tenant_due each, which also reads the tenant's earliest pending
//     due time. A tenant of $10 is probed from its floor (kind 'found', or 'empty' when
//     nothing is pending); between two of them (or past the last), the next tenant with
//     pending deliveries is found by a skip scan bounded by the next one of $10, and the
//     wrap is a marker row. ki is the position in $10 of the next tenant with a floor.
//     probed adds the tenants of $7 with room (those the replica is busy with) that the
//     turn did not reach, so a busy tenant is never left out because many tenants wait
//     for retries; visited keeps the probed tenants with something pending.
//   - shares keeps the tenants with something due and room, in turn order from $5, and
//     gives each an equal share of $1 (at most its room); candidates looks at a window of
//     4 × share of each tenant's earliest due, unheld deliveries, by index in due order
//     from the earliest the probe found, so a claim costs the same however long any
//     tenant's queue (the inner LIMIT only tells the planner so: share <= $1).
//
// A finished delivery leaves dead entries at the front of its tenant's part of
// deliveries_tenant_due until vacuum removes them, and an index probe walks them all to
// find the first live one: thousands at a high rate. So a tenant with a floor is probed
// from there, and every tenant once: the turn ends at $5 instead of probing its first
// tenant again to see it has come round, probed reaches only the tenants the turn did
// not, and candidates starts at the earliest due time the probe read (the same
// snapshot: no pending row lies before it).
//   - ranked keeps at most $2 per subscription and numbers each tenant's rows in due
//     order; picked takes them round by round (every tenant's first, then every tenant's
//     second, …) within each tenant's room, up to $1, locking with SKIP LOCKED, so
//     replicas claiming at once never wait for or double-claim a row; claimed re-checks
//     each row and leases it.
//
// Deliveries are only ever reached by tenant index, primary key or tuple ID: joined to
// subscriptions directly, the planner may walk a subscription's every delivery instead.
// claimed reaches each row picked locked by its tuple ID (ctid): with the statistics of a
// queue that held nothing pending when last analyzed, the planner joined the picked rows
// to every due delivery of the tenant by its index instead (100,000 rows compared for a
// claim of 100 among 1,000 due). The lock holds the row for the statement, and the
// re-check still decides: a row another transaction changed between this statement's
// snapshot and its lock is either re-checked in its newest version or, when the ID read
// is one the snapshot cannot see, left for the next claim; never leased twice.
// After the claimed rows comes one summary row (summary true): the tenant after which the
// next claim's turn should begin (the last one served in round order when $1 ran out,
// else the last one the turn explored), the tenants explored, whether a tenant's window
// came back full (it may have more due), how many rows the claim meant to take, and the
// probed tenants with their earliest pending due times (NULL: none; the row's due time
// is the claim's).
const claimSQL = `
WITH RECURSIVE ring (tenant_id, earliest, kind, wrapped, pos, steps, ki) AS (
	SELECT $5::text COLLATE "C", NULL::timestamptz, 'start'::text, false, 0, 0,
		coalesce((SELECT min(k.i) FROM unnest($10::text[]) WITH ORDINALITY AS k(tenant_id, i)
			WHERE k.tenant_id COLLATE "C" > $5), cardinality($10::text[]) + 1)::int
	UNION ALL
	SELECT t.tenant_id, t.earliest, t.kind, t.wrapped, r.pos + (t.kind = 'found')::int, r.steps + 1, t.ki
	FROM ring r
	CROSS JOIN LATERAL (SELECT CASE WHEN NOT r.wrapped OR ($10::text[])[r.ki] COLLATE "C" <= $5
			THEN ($10::text[])[r.ki] COLLATE "C" END AS tenant_id, ($11::timestamptz[])[r.ki] AS floor) AS nk
	CROSS JOIN LATERAL (
		(SELECT d.tenant_id, d.next_attempt_at AS earliest, 'found' AS kind, r.wrapped AS wrapped, r.ki AS ki
		 FROM deliveries d
		 WHERE nk.tenant_id IS NOT NULL AND d.status = 'pending' AND d.tenant_id > r.tenant_id AND d.tenant_id < nk.tenant_id
		 ORDER BY d.tenant_id, d.next_attempt_at, d.seq LIMIT 1)
		UNION ALL
		(SELECT d.tenant_id, d.next_attempt_at, 'found', true, r.ki FROM deliveries d
		 WHERE nk.tenant_id IS NULL AND r.wrapped AND d.status = 'pending' AND d.tenant_id > r.tenant_id AND d.tenant_id <= $5
		 ORDER BY d.tenant_id, d.next_attempt_at, d.seq LIMIT 1)
		UNION ALL
		(SELECT d.tenant_id, d.next_attempt_at, 'found', false, r.ki FROM deliveries d
		 WHERE nk.tenant_id IS NULL AND NOT r.wrapped AND d.status = 'pending' AND d.tenant_id > r.tenant_id
		 ORDER BY d.tenant_id, d.next_attempt_at, d.seq LIMIT 1)
		UNION ALL
		SELECT nk.tenant_id, e.earliest, CASE WHEN e.earliest IS NULL THEN 'empty' ELSE 'found' END, r.wrapped, r.ki + 1
		FROM (SELECT (SELECT d.next_attempt_at FROM deliveries d
			WHERE d.tenant_id = nk.tenant_id AND d.status = 'pending' AND d.next_attempt_at >= nk.floor
			ORDER BY d.next_attempt_at, d.seq LIMIT 1) AS earliest) AS e
		WHERE nk.tenant_id IS NOT NULL
		UNION ALL
		SELECT '', NULL, 'wrap', true, 1 WHERE NOT r.wrapped
		LIMIT 1) AS t
	WHERE r.pos < $6 AND r.steps <= $6 + cardinality($10::text[])
), rooms AS (
	SELECT * FROM unnest($7::text[], $8::int[]) AS x(tenant_id, room)
), probed AS (
	SELECT tenant_id, earliest FROM ring WHERE kind IN ('found', 'empty')
	UNION ALL
	SELECT h.tenant_id, (SELECT d.next_attempt_at FROM deliveries d
		WHERE d.status = 'pending' AND d.tenant_id = h.tenant_id AND d.next_attempt_at >= h.floor
		ORDER BY d.next_attempt_at, d.seq LIMIT 1)
	FROM (SELECT x.tenant_id, coalesce(f.floor, '-infinity') AS floor
		FROM rooms x LEFT JOIN unnest($10::text[], $11::timestamptz[]) AS f(tenant_id, floor) ON f.tenant_id = x.tenant_id
		WHERE x.room > 0 AND NOT EXISTS (SELECT 1 FROM ring g WHERE g.tenant_id = x.tenant_id AND g.kind IN ('found', 'empty'))
		OFFSET 0) AS h -- filtered before the probes, not after
), visited AS (
	SELECT tenant_id, earliest FROM probed WHERE earliest IS NOT NULL
), shares AS (
	SELECT e.*, row_number() OVER (ORDER BY e.tenant_id <= $5, e.tenant_id) AS pos,
		least(e.room, ($1 + count(*) OVER () - 1) / count(*) OVER ())::int AS share
	FROM (SELECT v.tenant_id, v.earliest, coalesce(x.room, $9) AS room
		FROM visited v LEFT JOIN rooms x ON x.tenant_id = v.tenant_id
		WHERE v.earliest <= now() AND coalesce(x.room, $9) > 0) AS e
), candidates AS (
	SELECT c.*, sh.pos, sh.room, sh.share
	FROM shares sh CROSS JOIN LATERAL (
		SELECT * FROM (
			SELECT d.tenant_id, d.delivery_id, d.subscription_id, d.next_attempt_at, d.seq
			FROM deliveries d
			WHERE d.tenant_id = sh.tenant_id AND d.status = 'pending'
			  AND d.next_attempt_at >= sh.earliest AND d.next_attempt_at <= now()
			  AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= now())
			  AND d.subscription_id <> ALL ($3::text[])
			ORDER BY d.next_attempt_at, d.seq
			LIMIT $1 * 4) AS w -- a bound the planner can see (share <= $1): its estimates stay small
		LIMIT 4 * sh.share) AS c
), ranked AS (
	SELECT *, row_number() OVER (PARTITION BY tenant_id ORDER BY next_attempt_at, seq) AS turn
	FROM (SELECT *, row_number() OVER (PARTITION BY subscription_id ORDER BY next_attempt_at, seq) AS rn
		FROM candidates) AS c
	WHERE rn <= $2
), picked AS (
	SELECT d.ctid AS row_id, d.tenant_id, d.delivery_id, r.turn, r.pos
	FROM (SELECT * FROM ranked WHERE turn <= room ORDER BY turn, pos LIMIT $1 * 4) AS r
		JOIN deliveries d ON d.tenant_id = r.tenant_id AND d.delivery_id = r.delivery_id
	ORDER BY r.turn, r.pos
	LIMIT $1
	FOR NO KEY UPDATE OF d SKIP LOCKED
), claimed AS (
	UPDATE deliveries d
	SET lease_expires_at = now() + make_interval(secs => $4::float8), lease_token = d.lease_token + 1,
	    attempt_count = d.attempt_count + 1
	FROM picked p
	WHERE d.ctid = p.row_id AND d.tenant_id = p.tenant_id AND d.delivery_id = p.delivery_id
	  AND d.status = 'pending' AND d.next_attempt_at <= now()
	  AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= now())
	RETURNING d.tenant_id, d.delivery_id, d.subscription_id, d.event_id, d.ordering_key, d.seq, d.body,
		d.next_attempt_at, d.retry_step, d.attempt_count, d.lease_token, d.test
)
SELECT false AS summary, c.*, s.url, s.secret, CASE WHEN s.previous_secret_until > now() THEN s.previous_secret END, s.active,
	'' AS after, 0 AS visited, false AS more, 0 AS wanted,
	NULL::text[] AS probed, NULL::timestamptz[] AS probed_earliest
FROM claimed c JOIN subscriptions s ON s.tenant_id = c.tenant_id AND s.subscription_id = c.subscription_id
UNION ALL
SELECT true, '', '', '', '', '', 0, NULL, now(), 0, 0, 0, false, '', '', NULL, false,
	coalesce(CASE WHEN (SELECT count(*) FROM picked) >= $1
		THEN (SELECT tenant_id FROM picked ORDER BY turn DESC, pos DESC LIMIT 1)
		ELSE (SELECT tenant_id FROM ring WHERE kind = 'found' ORDER BY steps DESC LIMIT 1) END, $5),
	(SELECT count(*) FROM ring WHERE kind = 'found')::int,
	EXISTS (SELECT 1 FROM candidates GROUP BY tenant_id, share HAVING count(*) = 4 * share),
	least($1, (SELECT count(*) FROM ranked WHERE turn <= room))::int,
	(SELECT array_agg(tenant_id ORDER BY tenant_id) FROM probed),
	(SELECT array_agg(earliest ORDER BY tenant_id) FROM probed)`

// Claim leases due deliveries for an attempt each, in turns across tenants: every tenant
// with due deliveries and room gets its earliest first, then every tenant its next, and so
// on, within Limit, each tenant's room and PerSubscription, and none of the subscriptions
// in Exclude. Within a tenant deliveries are taken in due order.
func (s *Store) Claim(ctx context.Context, req domain.ClaimRequest) (domain.Claimed, error) {
	c, err := claim(ctx, s.pool, req)
	s.openJobs(c.Jobs)
	return c, err
}

// ExplainClaim runs the claim inside tx under EXPLAIN (ANALYZE, BUFFERS) and returns the
// plan's lines. The claim's leases are taken (roll tx back to give them back).
func ExplainClaim(ctx context.Context, tx pgx.Tx, req domain.ClaimRequest) ([]string, error) {
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+claimSQL, claimArgs(req)...)
	if err != nil {
		return nil, fmt.Errorf("explain claim: %w", err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("explain claim: %w", err)
	}
	return plan, nil
}

// claimArgs are claimSQL's parameters.
func claimArgs(req domain.ClaimRequest) []any {
	exclude := req.Exclude
	if exclude == nil {
		exclude = []string{}
	}
	roomTenants, rooms := make([]string, 0, len(req.Rooms)), make([]int32, 0, len(req.Rooms))
	for id, n := range req.Rooms {
		roomTenants, rooms = append(roomTenants, id), append(rooms, int32(max(n, 0)))
	}
	floorTenants := append([]string{}, slices.Sorted(maps.Keys(req.Floors))...) // in the order of COLLATE "C"; never NULL
	floors := make([]time.Time, len(floorTenants))
	for i, id := range floorTenants {
		floors[i] = req.Floors[id]
	}
	return []any{req.Limit, req.PerSubscription, exclude, req.Lease.Seconds(),
		req.After, max(req.Tenants, 1), roomTenants, rooms, req.DefaultRoom, floorTenants, floors}
}

func claim(ctx context.Context, q postgres.Conn, req domain.ClaimRequest) (domain.Claimed, error) {
	rows, err := q.Query(ctx, claimSQL, claimArgs(req)...)
	if err != nil {
		return domain.Claimed{}, fmt.Errorf("claim deliveries: %w", err)
	}
	defer rows.Close()
	var c domain.Claimed
	var visited, wanted int
	for rows.Next() {
		var (
			summary bool
			j       domain.Job
			after   string
			more    bool
			v, w    int
			probed  []string
			earlier []*time.Time
		)
		if err := rows.Scan(&summary, &j.TenantID, &j.DeliveryID, &j.SubscriptionID, &j.EventID, &j.OrderingKey, &j.Seq,
			&j.Body, &j.DueAt, &j.RetryStep, &j.AttemptNo, &j.LeaseToken, &j.Test, &j.URL, &j.Secret, &j.PreviousSecret, &j.Active,
			&after, &v, &more, &w, &probed, &earlier); err != nil {
			return domain.Claimed{}, fmt.Errorf("claim deliveries: %w", err)
		}
		if summary {
			c.After, visited, c.More, wanted = after, v, more, w
			c.Floors = make(map[string]time.Time, len(probed))
			for i, id := range probed {
				c.Floors[id] = j.DueAt // the claim's time: nothing was pending
				if i < len(earlier) && earlier[i] != nil {
					c.Floors[id] = *earlier[i]
				}
			}
			continue
		}
		c.Jobs = append(c.Jobs, j)
	}
	if err := rows.Err(); err != nil {
		return domain.Claimed{}, fmt.Errorf("claim deliveries: %w", err)
	}
	c.Unvisited = visited >= max(req.Tenants, 1)
	c.Locked = max(wanted-len(c.Jobs), 0)
	// RETURNING keeps no order; attempts start in due order.
	slices.SortFunc(c.Jobs, func(a, b domain.Job) int {
		return cmp.Or(a.DueAt.Compare(b.DueAt), cmp.Compare(a.Seq, b.Seq))
	})
	return c, nil
}

// Upcoming reads the earliest due times still to come, at most limit, with their
// tenants, and when the earliest lease runs out. Deliveries due already are the claims'
// business (domain.Claimed says when some were left).
func (s *Store) Upcoming(ctx context.Context, limit int) (domain.Upcoming, error) {
	var u domain.Upcoming
	var lease *time.Time
	var at []time.Time
	var tenants []string
	err := s.pool.QueryRow(ctx, `WITH f AS (
			SELECT next_attempt_at, seq, tenant_id FROM deliveries WHERE status = 'pending' AND next_attempt_at > now()
			ORDER BY next_attempt_at, seq LIMIT $1)
		SELECT now(), (SELECT min(lease_expires_at) FROM deliveries WHERE lease_expires_at > now()),
			array(SELECT next_attempt_at FROM f ORDER BY next_attempt_at, seq),
			array(SELECT tenant_id FROM f ORDER BY next_attempt_at, seq)`, limit).Scan(&u.Now, &lease, &at, &tenants)
	if err != nil {
		return domain.Upcoming{}, fmt.Errorf("upcoming deliveries: %w", err)
	}
	if lease != nil {
		u.LeaseEnd = *lease
	}
	u.Due = make([]domain.Falling, len(at))
	for i := range at {
		u.Due[i] = domain.Falling{At: at[i], TenantID: tenants[i]}
	}
	return u, nil
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
func (s *Store) Complete(ctx context.Context, results []domain.Result, disableAfter time.Duration) ([]domain.Disabled, error) {
	streaks := summarise(results)
	failing := false
	for _, st := range streaks {
		failing = failing || st.gone || st.lastFail != nil
	}
	var disabled []domain.Disabled
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		disabled = nil
		b := &pgx.Batch{}
		queueAttempts(b, results)
		queueStreaks(b, streaks)
		if !failing {
			queueDeliveries(b, results)
		}
		queueGivenBack(b, results)
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
		return announce(ctx, tx, results, disabled)
	})
	return disabled, err
}

// announce records the operational events of a batch in its transaction: a
// webhook_subscription.disabled per subscription disabled, and a webhook_delivery.failed
// per delivery the batch failed for good (its schedule exhausted; not a 410, whose
// subscription's event says it all). They reach the tenant's other subscriptions: not
// the one they are about.
func announce(ctx context.Context, tx pgx.Tx, results []domain.Result, disabled []domain.Disabled) error {
	var announced []announcement
	for _, d := range disabled {
		e, err := domain.SubscriptionDisabledEvent(d.TenantID, d.SubscriptionID, d.URL, d.Reason, d.At)
		if err != nil {
			return err
		}
		announced = append(announced, announcement{e, d.SubscriptionID})
	}
	failed, err := failedForGood(ctx, tx, results)
	if err != nil {
		return err
	}
	for _, a := range append(announced, failed...) {
		if _, err := recordDeliveries(ctx, tx, a.event, a.about); err != nil {
			return fmt.Errorf("announce %s: %w", a.event.Type, err)
		}
	}
	return nil
}

// announcement is an operational event and the subscription it is about, which does not
// receive it.
type announcement struct {
	event events.Envelope
	about string
}

// failedForGood returns the webhook_delivery.failed events of the results that failed
// their delivery in this transaction (the claim still held it) after an attempt, when
// domain.AnnouncesFailure says so.
func failedForGood(ctx context.Context, tx pgx.Tx, results []domain.Result) ([]announcement, error) {
	var tenants, deliveries []string
	var tokens []int64
	last := map[subKey]domain.Result{} // by tenant and delivery
	for _, r := range results {
		if r.Status == domain.StatusFailed && r.Attempt != nil && !r.Gone {
			tenants, deliveries, tokens = append(tenants, r.TenantID), append(deliveries, r.DeliveryID), append(tokens, r.LeaseToken)
			last[subKey{r.TenantID, r.DeliveryID}] = r
		}
	}
	if len(tenants) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT d.tenant_id, d.delivery_id, d.subscription_id, d.event_id, d.event_type, d.test, d.updated_at
		FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(tenant_id, delivery_id, token)
		JOIN deliveries d ON d.tenant_id = u.tenant_id AND d.delivery_id = u.delivery_id AND d.lease_token = u.token
		WHERE d.status = 'failed' AND d.updated_at = date_trunc('milliseconds', now())`, tenants, deliveries, tokens)
	if err != nil {
		return nil, fmt.Errorf("read failed deliveries: %w", err)
	}
	defer rows.Close()
	var out []announcement
	for rows.Next() {
		var tenantID string
		var d domain.Delivery
		var test bool
		var at time.Time
		if err := rows.Scan(&tenantID, &d.ID, &d.SubscriptionID, &d.EventID, &d.EventType, &test, &at); err != nil {
			return nil, fmt.Errorf("read failed deliveries: %w", err)
		}
		if !domain.AnnouncesFailure(d.EventType, test) {
			continue
		}
		r := last[subKey{tenantID, d.ID}]
		e, err := domain.DeliveryFailedEvent(tenantID, d, r.AttemptNo, *r.Attempt, at)
		if err != nil {
			return nil, err
		}
		out = append(out, announcement{e, d.SubscriptionID})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read failed deliveries: %w", err)
	}
	return out, nil
}

// queueGivenBack notifies the tenants of claims given back unattempted (a replica
// shutting down): they are due again at once (queueDeliveries sets the same time), and
// the other replicas' claims should visit those tenants now rather than when a round
// comes to them. The notification arrives at commit; one whose delivery another claim
// took over meanwhile only costs a visit.
func queueGivenBack(b *pgx.Batch, results []domain.Result) {
	var tenants []string
	for _, r := range results {
		if r.Attempt == nil && r.Status == domain.StatusPending && !slices.Contains(tenants, r.TenantID) {
			tenants = append(tenants, r.TenantID)
		}
	}
	if len(tenants) == 0 {
		return
	}
	b.Queue(`SELECT pg_notify($1, t || ' ' || (extract(epoch FROM date_trunc('milliseconds', now())) * 1000000)::bigint)
		FROM unnest($2::text[]) AS t`, Channel, tenants)
}

// queueAttempts inserts the attempts of the results. A delivery deleted with its
// subscription meanwhile keeps no attempts.
func queueAttempts(b *pgx.Batch, results []domain.Result) {
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

func summarise(results []domain.Result) map[subKey]*streak {
	var attempts []domain.Result
	for _, r := range results {
		if r.Attempt != nil {
			attempts = append(attempts, r)
		}
	}
	slices.SortStableFunc(attempts, func(a, b domain.Result) int { return a.Attempt.AttemptedAt.Compare(b.Attempt.AttemptedAt) })
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
func disable(ctx context.Context, tx pgx.Tx, streaks map[subKey]*streak, disableAfter time.Duration) ([]domain.Disabled, error) {
	var out []domain.Disabled
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
		d := domain.Disabled{TenantID: k.tenant, SubscriptionID: k.sub, Reason: reason, Gone: st.gone}
		if err := tx.QueryRow(ctx, `UPDATE subscriptions SET active = false, disabled_reason = $3,
				disabled_at = date_trunc('milliseconds', now()), updated_at = date_trunc('milliseconds', now())
			WHERE tenant_id = $1 AND subscription_id = $2 RETURNING url, disabled_at`, k.tenant, k.sub, reason).Scan(&d.URL, &d.At); err != nil {
			return nil, fmt.Errorf("disable subscription: %w", err)
		}
		if err := failPending(ctx, tx, k.tenant, []string{k.sub}); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// queueDeliveries sets the deliveries' new states, for results whose claim still holds.
// A retry of a subscription that is no longer active fails instead. The subscription's
// state is looked up first, so that deliveries are reached by primary key only.
func queueDeliveries(b *pgx.Batch, results []domain.Result) {
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

// ExactDepth bounds the exact count of pending deliveries behind domain.QueueStats.Pending.
// Counting costs a scrape a read of every entry counted (30 ms at 100,000 and 0.3 s at
// 1,000,000 here, on every replica at every scrape); beyond this many, the planner's
// estimate of the pending rows (from the table's size and its statistics of status) is
// reported instead, never below ExactDepth, as queue libraries such as Oban do past their
// estimate limit. A depth that large is read as "a backlog", not to the row.
const ExactDepth = 10000

// statsSQL reads the gauges in one round trip, each part bounded whatever the queue's
// size: the count stops at $1 (deliveries_due, index only), the oldest pending delivery is
// the first live entry of deliveries_pending_since, and the earliest due, unheld one
// the first such entry of deliveries_due (held ones are skipped by the index's included
// lease, and are at most the replicas' attempts in flight).
const statsSQL = `
	SELECT (SELECT count(*) FROM (SELECT 1 FROM deliveries WHERE status = 'pending' LIMIT $1) AS counted),
		extract(epoch FROM now() - (SELECT min(created_at) FROM deliveries WHERE status = 'pending'))::float8,
		extract(epoch FROM now() - (SELECT next_attempt_at FROM deliveries
			WHERE status = 'pending' AND next_attempt_at <= now() AND (lease_expires_at IS NULL OR lease_expires_at <= now())
			ORDER BY next_attempt_at, seq LIMIT 1))::float8`

// estimateSQL asks the planner how many deliveries are pending, without reading them.
const estimateSQL = `EXPLAIN (FORMAT JSON) SELECT 1 FROM deliveries WHERE status = 'pending'`

// Stats reads the queue's size and ages, at a cost that does not grow with the queue.
func (s *Store) Stats(ctx context.Context) (domain.QueueStats, error) {
	var st domain.QueueStats
	var oldest, lag *float64
	if err := s.pool.QueryRow(ctx, statsSQL, ExactDepth).Scan(&st.Pending, &oldest, &lag); err != nil {
		return domain.QueueStats{}, fmt.Errorf("queue stats: %w", err)
	}
	if st.Pending >= ExactDepth {
		var plan []struct {
			Plan struct {
				Rows float64 `json:"Plan Rows"`
			} `json:"Plan"`
		}
		if err := s.pool.QueryRow(ctx, estimateSQL).Scan(&plan); err != nil {
			return domain.QueueStats{}, fmt.Errorf("estimate queue depth: %w", err)
		}
		if len(plan) == 0 {
			return domain.QueueStats{}, errors.New("estimate queue depth: EXPLAIN returned no plan")
		}
		st.Pending = max(st.Pending, int64(plan[0].Plan.Rows))
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
