package adapters_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// operational returns the payloads of the operational deliveries queued for sub.
func operational(t *testing.T, pool *pgxpool.Pool, sub, typ string) []map[string]any {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT body FROM deliveries
		WHERE subscription_id = $1 AND event_type = $2 AND status = 'pending' ORDER BY seq`, sub, typ)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var body domain.Body
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := json.Unmarshal(raw, &body); err != nil || json.Unmarshal(body.Payload, &p) != nil {
			t.Fatalf("body %s: %v", raw, err)
		}
		out = append(out, p)
	}
	return out
}

func result(j domain.Job, status domain.Status, code int, gone bool) domain.Result {
	msg := "the receiver answered an error"
	return domain.Result{TenantID: j.TenantID, DeliveryID: j.DeliveryID, SubscriptionID: j.SubscriptionID,
		LeaseToken: j.LeaseToken, AttemptNo: j.AttemptNo, Status: status, Gone: gone, Delay: time.Hour,
		Attempt: &domain.Attempt{AttemptedAt: time.Now().UTC().Truncate(time.Millisecond), StatusCode: &code, Error: &msg}}
}

// A subscription the platform disables is announced, in the same transaction, to the
// tenant's other subscriptions that take the type (and only those); the event is kept
// for the events API.
func TestDisablingAnnouncesTheSubscriptionDisabledEvent(t *testing.T) {
	s, pool := newStore(t)
	fill(t, s, pool, []string{"whsub_a"}, 1)
	addSubscription(t, s, "acme", "whsub_ops", true, []string{events.TypeWebhookSubscriptionDisabled})
	addSubscription(t, s, "acme", "whsub_forms", true, []string{events.TypeFormSubmitted})
	addSubscription(t, s, "globex", "whsub_other", true, nil)
	jobs := claim(t, s, 10, 10, nil, time.Minute).Jobs
	if len(jobs) != 1 {
		t.Fatal(jobs)
	}
	if _, err := s.Complete(context.Background(), []domain.Result{result(jobs[0], domain.StatusFailed, 410, true)}, time.Hour); err != nil {
		t.Fatal(err)
	}
	got := operational(t, pool, "whsub_ops", events.TypeWebhookSubscriptionDisabled)
	if len(got) != 1 || got[0]["subscriptionId"] != "whsub_a" || got[0]["reason"] != domain.ReasonGone ||
		got[0]["url"] != "https://hooks.example.com/whsub_a" || got[0]["disabledAt"] == nil {
		t.Fatalf("the disabled subscription was announced as %v, want one event about whsub_a", got)
	}
	for _, sub := range []string{"whsub_forms", "whsub_other", "whsub_a"} {
		if n := len(operational(t, pool, sub, events.TypeWebhookSubscriptionDisabled)); n != 0 {
			t.Fatalf("%s got %d announcements: only subscriptions of the tenant taking the type do", sub, n)
		}
	}
	// A 410 is no delivery failed for good: the disabled event says it all.
	if n := len(operational(t, pool, "whsub_ops", events.TypeWebhookDeliveryFailed)); n != 0 {
		t.Fatalf("a 410 announced %d failed deliveries", n)
	}
	list, err := s.ListEvents(context.Background(), "acme", domain.EventFilter{Type: events.TypeWebhookSubscriptionDisabled, Subject: "whsub_a"}, 10)
	if err != nil || len(list) != 1 {
		t.Fatalf("events API: %v %v, want the announcement", list, err)
	}
}

// A delivery whose retries are exhausted is announced; one of an operational event (no
// chain) or of a test event is not, nor a failure that still has retries.
func TestADeliveryFailedForGoodIsAnnouncedOnce(t *testing.T) {
	s, pool := newStore(t)
	fill(t, s, pool, []string{"whsub_a"}, 2)
	addSubscription(t, s, "acme", "whsub_ops", true, nil) // every type, operational ones too
	// The subscription whose delivery fails takes every type too, but is not told of its own.
	if _, err := pool.Exec(context.Background(), "UPDATE subscriptions SET events = NULL WHERE subscription_id = 'whsub_a'"); err != nil {
		t.Fatal(err)
	}
	jobs := claim(t, s, 10, 10, nil, time.Minute).Jobs
	if len(jobs) != 2 {
		t.Fatal(jobs)
	}
	if _, err := s.Complete(context.Background(), []domain.Result{
		result(jobs[0], domain.StatusFailed, 503, false),
		result(jobs[1], domain.StatusPending, 503, false),
	}, 100*time.Hour); err != nil {
		t.Fatal(err)
	}
	got := operational(t, pool, "whsub_ops", events.TypeWebhookDeliveryFailed)
	if len(got) != 1 || got[0]["deliveryId"] != jobs[0].DeliveryID || got[0]["subscriptionId"] != "whsub_a" ||
		got[0]["eventId"] != jobs[0].EventID || got[0]["eventType"] != events.TypeFormSubmitted ||
		got[0]["attemptsCount"] != float64(jobs[0].AttemptNo) || got[0]["lastStatusCode"] != float64(503) {
		t.Fatalf("announced %v, want one webhook_delivery.failed of %s", got, jobs[0].DeliveryID)
	}
	if own := operational(t, pool, "whsub_a", events.TypeWebhookDeliveryFailed); len(own) != 0 {
		t.Fatalf("the subscription whose delivery failed was told of it: %v", own)
	}

	// The announcement's own delivery fails for good: nothing more is announced.
	if _, err := pool.Exec(context.Background(), "UPDATE deliveries SET status = 'succeeded', next_attempt_at = NULL WHERE subscription_id = 'whsub_a'"); err != nil {
		t.Fatal(err)
	}
	ops := claim(t, s, 10, 10, nil, time.Minute).Jobs
	if len(ops) != 1 || ops[0].SubscriptionID != "whsub_ops" {
		t.Fatalf("claimed %+v, want the announcement's delivery", ops)
	}
	if _, err := s.Complete(context.Background(), []domain.Result{result(ops[0], domain.StatusFailed, 500, false)}, 100*time.Hour); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM events WHERE event_type = $1", events.TypeWebhookDeliveryFailed).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d webhook_delivery.failed events (%v), want 1: an operational delivery's failure announced again", n, err)
	}

	// A test event's delivery failing for good is not announced either.
	if _, err := s.RecordTestDelivery(context.Background(), "acme", "whsub_a", "delivery_test", "evt_test", events.TypeFormSubmitted, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	tests := claim(t, s, 10, 10, nil, time.Minute).Jobs
	if len(tests) != 1 || !tests[0].Test {
		t.Fatalf("claimed %+v, want the test delivery", tests)
	}
	if _, err := s.Complete(context.Background(), []domain.Result{result(tests[0], domain.StatusFailed, 500, false)}, 100*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM events WHERE event_type = $1", events.TypeWebhookDeliveryFailed).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d webhook_delivery.failed events (%v), want 1: a test delivery's failure was announced", n, err)
	}
}
