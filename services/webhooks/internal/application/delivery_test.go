package application_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/webhooks/internal/application"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// A delivery is the event's body, signed so that a receiver verifies it with the secret
// from the create response, under both header styles.
func TestDeliveryIsSignedAndVerifies(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, nil)
	subID, secret := subscribe(t, c, rc.URL+"/hook", []string{"page.version.created"})

	evt := event(t, "acme", events.TypePageVersionCreated, "audience_1")
	publish(t, s.Broker, evt)
	testwait.Eventually(t, 20*time.Second, "the delivery", func() bool { return rc.count() == 1 })

	got := rc.all()[0]
	want := `{"timestamp":"` + timestamp.Format(evt.OccurredAt) + `","eventId":"` + evt.ID + `","payload":` + string(evt.Payload) + `}`
	if string(got.body) != want {
		t.Fatalf("body\n%s\nwant\n%s", got.body, want)
	}
	if !strings.HasPrefix(string(got.body), `{"timestamp":`) || !strings.Contains(string(got.body), `"payload":{"type":"page.version.created"`) {
		t.Fatalf("body shape: %s", got.body)
	}
	h := got.header
	if !verify256(secret, got.body, h.Get("X-Webhook-Signature-256")) {
		t.Fatalf("X-Webhook-Signature-256 %q does not verify", h.Get("X-Webhook-Signature-256"))
	}
	if !verifyStandard(secret, h, got.body) {
		t.Fatalf("webhook-signature %q does not verify", h.Get("webhook-signature"))
	}
	ms, err := strconv.ParseInt(h.Get("X-Webhook-Timestamp"), 10, 64)
	if err != nil || !regexp.MustCompile(`^\d{13}$`).MatchString(h.Get("X-Webhook-Timestamp")) {
		t.Fatalf("X-Webhook-Timestamp = %q", h.Get("X-Webhook-Timestamp"))
	}
	if d := time.Since(time.UnixMilli(ms)); d < 0 || d > 10*time.Second {
		t.Fatalf("X-Webhook-Timestamp is %s off", d)
	}
	if h.Get("webhook-id") != evt.ID || h.Get("webhook-timestamp") != strconv.FormatInt(ms/1000, 10) ||
		h.Get("Content-Type") != "application/json" || !strings.HasPrefix(h.Get("User-Agent"), "CustomerAPI-Webhooks/") {
		t.Fatalf("headers = %v", h)
	}
	// Another subscription's secret, or another body, does not verify.
	_, otherSecret := subscribe(t, c, rc.URL+"/other", []string{"form.enriched"})
	if verify256(otherSecret, got.body, h.Get("X-Webhook-Signature-256")) || verifyStandard(otherSecret, h, got.body) ||
		verify256(secret, append(got.body, ' '), h.Get("X-Webhook-Signature-256")) {
		t.Fatal("a wrong secret or body verified")
	}

	var d apitypes.WebhookDelivery
	testwait.Eventually(t, 10*time.Second, "the delivery to read as succeeded", func() bool {
		ds := deliveries(t, c, subID)
		d = ds[0]
		return len(ds) == 1 && d.Status == "succeeded"
	})
	a := d.Attempts[0]
	if d.EventId != evt.ID || d.EventType != "page.version.created" || d.NextAttemptAt != nil ||
		len(d.Attempts) != 1 || val(a.StatusCode) != 200 || a.Error != nil || val(a.ResponseSnippet) != `{"received":1}` {
		t.Fatalf("delivery = %s", show(d))
	}
	one := getDelivery(t, c, subID, d.DeliveryId)
	if one.DeliveryId != d.DeliveryId || len(one.Attempts) != 1 {
		t.Fatalf("get delivery = %s", show(one))
	}
}

// Only active subscriptions of the event's tenant that list its type receive it.
func TestRoutingByTypeActivityAndTenant(t *testing.T) {
	s := start(t, nil, application.Options{})
	acme, globex := client(t, s, "acme"), client(t, s, "globex")
	everything, created, inactive, forms, foreign := newReceiver(t, nil), newReceiver(t, nil), newReceiver(t, nil), newReceiver(t, nil), newReceiver(t, nil)
	allID, _ := subscribe(t, acme, everything.URL, nil)
	createdID, _ := subscribe(t, acme, created.URL, []string{"page.version.created"})
	off := mustStatus(t, acme.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": inactive.URL, "events": nil, "active": false}), 201)
	formsID, _ := subscribe(t, acme, forms.URL, []string{"form.submitted", "form.enriched"})
	subscribe(t, globex, foreign.URL, nil)

	publish(t, s.Broker,
		event(t, "acme", events.TypePageVersionCreated, "audience_1"),
		event(t, "acme", events.TypePageVersionProcessed, "audience_1"),
		event(t, "acme", events.TypePageVersionPublished, "audience_1"),
		event(t, "acme", events.TypeFormEnrichmentFailed, "form_1"))
	testwait.Eventually(t, 20*time.Second, "four events at the catch-all subscription", func() bool { return everything.count() == 4 })
	// The deliveries of an event are all recorded in one transaction: once the catch-all
	// has every event, the others' deliveries exist too.
	if n := len(deliveries(t, acme, createdID)); n != 1 {
		t.Fatalf("page.version.created subscription has %d deliveries", n)
	}
	if n := len(deliveries(t, acme, formsID)); n != 0 {
		t.Fatalf("form subscription has %d deliveries", n)
	}
	if n := len(deliveries(t, acme, off["subscriptionId"].(string))); n != 0 {
		t.Fatalf("inactive subscription has %d deliveries", n)
	}
	testwait.Eventually(t, 10*time.Second, "the created event", func() bool { return created.count() == 1 })
	if inactive.count() != 0 || forms.count() != 0 || foreign.count() != 0 {
		t.Fatalf("unexpected deliveries: inactive %d, forms %d, other tenant %d", inactive.count(), forms.count(), foreign.count())
	}
	if n := len(deliveries(t, acme, allID)); n != 4 {
		t.Fatalf("catch-all has %d deliveries", n)
	}
}

// Events of one subject (an audience) reach a healthy receiver in order, while events of
// different subjects go in parallel.
func TestEventsOfOneSubjectArriveInOrder(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, func(n int, r *http.Request, w http.ResponseWriter) int {
		time.Sleep(2 * time.Millisecond) // a receiver slow enough for deliveries to overlap
		return 200
	})
	subscribe(t, c, rc.URL, nil)
	var evts []events.Envelope
	order := map[string][]string{}
	subjectOf := map[string]string{}
	for i := 0; i < 3; i++ {
		for _, typ := range []string{events.TypePageVersionCreated, events.TypePageVersionProcessed, events.TypePageVersionPublished} {
			for a := 0; a < 5; a++ {
				subject := fmt.Sprintf("audience_%d", a)
				e := event(t, "acme", typ, subject)
				evts = append(evts, e)
				order[subject] = append(order[subject], e.ID)
				subjectOf[e.ID] = subject
			}
		}
	}
	publish(t, s.Broker, evts...)
	testwait.Eventually(t, 30*time.Second, "every event", func() bool { return rc.count() == len(evts) })
	got := map[string][]string{}
	for _, id := range rc.eventIDs() {
		got[subjectOf[id]] = append(got[subjectOf[id]], id)
	}
	for subject, want := range order {
		if fmt.Sprint(got[subject]) != fmt.Sprint(want) {
			t.Errorf("%s arrived as %v, want %v", subject, got[subject], want)
		}
	}
}

// A receiver that fails twice still gets the event, with the same eventId and body.
func TestRetriesKeepEventIDAndBody(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, func(n int, r *http.Request, w http.ResponseWriter) int {
		if n <= 2 {
			return 500
		}
		return 204
	})
	subID, secret := subscribe(t, c, rc.URL, nil)
	evt := event(t, "acme", events.TypeFormSubmitted, "form_1")
	publish(t, s.Broker, evt)
	testwait.Eventually(t, 20*time.Second, "three attempts", func() bool { return rc.count() == 3 })
	got := rc.all()
	for i, r := range got {
		if !bytes.Equal(r.body, got[0].body) || r.header.Get("webhook-id") != evt.ID ||
			!verify256(secret, r.body, r.header.Get("X-Webhook-Signature-256")) || !verifyStandard(secret, r.header, r.body) {
			t.Fatalf("attempt %d differs or does not verify: %s %v", i+1, r.body, r.header)
		}
	}
	// The schedule's waits (100 ms, 200 ms, ±20%) separate the attempts.
	if gap := got[1].at.Sub(got[0].at); gap < 70*time.Millisecond {
		t.Fatalf("first retry after %s", gap)
	}
	if gap := got[2].at.Sub(got[1].at); gap < 150*time.Millisecond {
		t.Fatalf("second retry after %s", gap)
	}
	var d apitypes.WebhookDelivery
	testwait.Eventually(t, 10*time.Second, "the delivery to succeed", func() bool {
		d = deliveries(t, c, subID)[0]
		return d.Status == "succeeded"
	})
	var codes []any
	for _, a := range d.Attempts {
		codes = append(codes, val(a.StatusCode))
	}
	if fmt.Sprint(codes) != "[500 500 204]" {
		t.Fatalf("attempt codes %v", codes)
	}
	first := d.Attempts[0]
	if val(first.Error) != "receiver answered 500 Internal Server Error" || val(first.ResponseSnippet) != `{"received":1}` {
		t.Fatalf("first attempt = %s", show(first))
	}
}

// After the last retry of the schedule the delivery fails; a manual retry sends it again
// with a fresh schedule.
func TestScheduleExhaustedThenManualRetry(t *testing.T) {
	s := start(t, map[string]string{"WEBHOOK_RETRY_SCHEDULE": "50ms,50ms"}, application.Options{})
	c := client(t, s, "acme")
	var healthy atomic.Bool
	rc := newReceiver(t, func(n int, r *http.Request, w http.ResponseWriter) int {
		if healthy.Load() {
			return 200
		}
		return 503
	})
	subID, _ := subscribe(t, c, rc.URL, nil)
	ops := newReceiver(t, nil)
	subscribe(t, c, ops.URL, []string{events.TypeWebhookDeliveryFailed})
	publish(t, s.Broker, event(t, "acme", events.TypeFormEnriched, "form_1"))
	var d apitypes.WebhookDelivery
	testwait.Eventually(t, 20*time.Second, "the delivery to fail", func() bool {
		ds := deliveries(t, c, subID)
		if len(ds) == 0 {
			return false
		}
		d = ds[0]
		return d.Status == "failed"
	})
	if n := len(d.Attempts); n != 3 || rc.count() != 3 || d.NextAttemptAt != nil {
		t.Fatalf("failed after %d attempts (%d received): %s", n, rc.count(), show(d))
	}
	// The failure for good is announced on the tenant's other subscription.
	testwait.Eventually(t, 20*time.Second, "the webhook_delivery.failed announcement", func() bool { return ops.count() > 0 })
	var announced struct {
		Payload domain.DeliveryFailed `json:"payload"`
	}
	if err := json.Unmarshal(ops.all()[0].body, &announced); err != nil || ops.count() != 1 ||
		announced.Payload.DeliveryID != d.DeliveryId || announced.Payload.AttemptsCount != 3 ||
		announced.Payload.LastStatusCode == nil || *announced.Payload.LastStatusCode != 503 {
		t.Fatalf("%d announcements, the first %s (%v); want one webhook_delivery.failed of %s after 3 attempts",
			ops.count(), ops.all()[0].body, err, d.DeliveryId)
	}
	if n := len(deliveries(t, c, subID, "status=failed")); n != 1 {
		t.Fatalf("status filter: %d failed", n)
	}
	if n := len(deliveries(t, c, subID, "status=pending")); n != 0 {
		t.Fatalf("status filter: %d pending", n)
	}

	healthy.Store(true)
	path := "/v0/webhook_subscriptions/" + subID + "/deliveries/" + d.DeliveryId + "/retry"
	retried := apitest.Decode[apitypes.WebhookDelivery](t, c.Do("POST", path, nil), 202, "a manual retry")
	if retried.Status != "pending" || retried.NextAttemptAt == nil {
		t.Fatalf("retried = %s", show(retried))
	}
	testwait.Eventually(t, 10*time.Second, "the retried delivery to succeed", func() bool {
		return deliveries(t, c, subID)[0].Status == "succeeded"
	})
	if rc.count() != 4 {
		t.Fatalf("%d requests", rc.count())
	}
	// A delivery of an inactive subscription cannot be retried; unknown ones are 404.
	mustStatus(t, c.Do("PATCH", "/v0/webhook_subscriptions/"+subID, map[string]any{"active": false}), 200)
	if r := c.Do("POST", path, map[string]any{}); r.Status != 409 {
		t.Fatalf("retry on an inactive subscription: %s", r)
	}
	mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions/"+subID+"/deliveries/delivery_missing/retry", nil), 404)
	mustStatus(t, c.Do("GET", "/v0/webhook_subscriptions/"+subID+"/deliveries/delivery_missing", nil), 404)
	other, _ := subscribe(t, c, rc.URL, nil)
	mustStatus(t, c.Do("GET", "/v0/webhook_subscriptions/"+other+"/deliveries/"+d.DeliveryId, nil), 404)
}

// Retry-After on a 429 is honoured (within bounds) instead of the schedule.
func TestRetryAfterIsHonoured(t *testing.T) {
	s := start(t, map[string]string{"WEBHOOK_RETRY_SCHEDULE": "50ms,50ms"}, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, func(n int, r *http.Request, w http.ResponseWriter) int {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			return 429
		}
		return 200
	})
	subscribe(t, c, rc.URL, nil)
	publish(t, s.Broker, event(t, "acme", events.TypeFormSubmitted, "form_1"))
	testwait.Eventually(t, 20*time.Second, "the second attempt", func() bool { return rc.count() == 2 })
	got := rc.all()
	if gap := got[1].at.Sub(got[0].at); gap < 900*time.Millisecond {
		t.Fatalf("retried after %s despite Retry-After: 1", gap)
	}
}

// 410 Gone disables the subscription at once, with the reason; it then receives nothing.
func TestGoneDisablesTheSubscription(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int { return 410 })
	subID, _ := subscribe(t, c, rc.URL, nil)
	publish(t, s.Broker, event(t, "acme", events.TypeFormSubmitted, "form_1"))
	var sub map[string]any
	testwait.Eventually(t, 20*time.Second, "the subscription to be disabled", func() bool {
		sub = mustStatus(t, c.Do("GET", "/v0/webhook_subscriptions/"+subID, nil), 200)
		return sub["active"] == false
	})
	if !strings.Contains(fmt.Sprint(sub["disabledReason"]), "410") || sub["disabledAt"] == nil {
		t.Fatalf("disabled subscription = %v", sub)
	}
	ds := deliveries(t, c, subID)
	if len(ds) != 1 || ds[0].Status != "failed" || len(ds[0].Attempts) != 1 {
		t.Fatalf("deliveries = %s", show(ds))
	}
	// Later events are not delivered; a sentinel subscription shows they were processed.
	sentinel := newReceiver(t, nil)
	subscribe(t, c, sentinel.URL, nil)
	publish(t, s.Broker, event(t, "acme", events.TypeFormSubmitted, "form_2"))
	testwait.Eventually(t, 20*time.Second, "the sentinel", func() bool { return sentinel.count() == 1 })
	if rc.count() != 1 || len(deliveries(t, c, subID)) != 1 {
		t.Fatalf("a disabled subscription got %d requests", rc.count())
	}
	// Activating it again clears the reason.
	again := mustStatus(t, c.Do("PATCH", "/v0/webhook_subscriptions/"+subID, map[string]any{"active": true}), 200)
	if again["active"] != true || again["disabledReason"] != nil || again["disabledAt"] != nil {
		t.Fatalf("re-activated = %v", again)
	}
}

// A subscription whose every attempt fails for the configured period is disabled, and
// its pending deliveries end as failed.
func TestContinuousFailureDisablesTheSubscription(t *testing.T) {
	s := start(t, map[string]string{"WEBHOOK_DISABLE_AFTER": "1s",
		"WEBHOOK_RETRY_SCHEDULE": "200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms,200ms"}, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int { return 500 })
	subID, _ := subscribe(t, c, rc.URL, nil)
	publish(t, s.Broker, event(t, "acme", events.TypeFormSubmitted, "form_1"), event(t, "acme", events.TypeFormSubmitted, "form_2"))
	var sub map[string]any
	testwait.Eventually(t, 20*time.Second, "the subscription to be disabled", func() bool {
		sub = mustStatus(t, c.Do("GET", "/v0/webhook_subscriptions/"+subID, nil), 200)
		return sub["active"] == false
	})
	if !strings.Contains(fmt.Sprint(sub["disabledReason"]), "every delivery attempt failed for 1s") {
		t.Fatalf("reason = %v", sub["disabledReason"])
	}
	testwait.Eventually(t, 10*time.Second, "both deliveries to end as failed", func() bool {
		return len(deliveries(t, c, subID, "status=failed")) == 2
	})
	n := rc.count()
	time.Sleep(500 * time.Millisecond) // the quiet window, over two retry intervals: no attempt may happen in it
	if rc.count() != n {
		t.Fatal("attempts continue after the subscription was disabled")
	}
}

// Deactivating a subscription through the API fails its pending deliveries.
func TestDeactivationFailsPendingDeliveries(t *testing.T) {
	s := start(t, map[string]string{"WEBHOOK_RETRY_SCHEDULE": "1h"}, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int { return 502 })
	subID, _ := subscribe(t, c, rc.URL, nil)
	publish(t, s.Broker, event(t, "acme", events.TypeFormSubmitted, "form_1"))
	testwait.Eventually(t, 20*time.Second, "a retry to be scheduled", func() bool {
		ds := deliveries(t, c, subID)
		return len(ds) == 1 && len(ds[0].Attempts) == 1 && ds[0].Status == "pending"
	})
	mustStatus(t, c.Do("PATCH", "/v0/webhook_subscriptions/"+subID, map[string]any{"active": false}), 200)
	d := deliveries(t, c, subID)[0]
	if d.Status != "failed" || d.NextAttemptAt != nil {
		t.Fatalf("delivery after deactivation = %s", show(d))
	}
}

// A rotation switches X-Webhook-Signature-256 to the new secret at once, while
// webhook-signature also carries the old secret's signature.
func TestRotationSignsWithBothSecrets(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, nil)
	subID, old := subscribe(t, c, rc.URL, nil)
	cur := mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions/"+subID+"/rotate_secret", nil), 200)["signingSecret"].(string)
	publish(t, s.Broker, event(t, "acme", events.TypeFormSubmitted, "form_1"))
	testwait.Eventually(t, 20*time.Second, "the delivery", func() bool { return rc.count() == 1 })
	r := rc.all()[0]
	if !verify256(cur, r.body, r.header.Get("X-Webhook-Signature-256")) || verify256(old, r.body, r.header.Get("X-Webhook-Signature-256")) {
		t.Fatal("X-Webhook-Signature-256 must verify with the new secret only")
	}
	if !verifyStandard(cur, r.header, r.body) || !verifyStandard(old, r.header, r.body) {
		t.Fatalf("webhook-signature %q must verify with both secrets", r.header.Get("webhook-signature"))
	}
}

// A redelivered Kafka event (same event ID) makes no second delivery.
func TestRedeliveredEventMakesNoDuplicate(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, nil)
	subID, _ := subscribe(t, c, rc.URL, nil)
	evt := event(t, "acme", events.TypePageVersionCreated, "audience_1")
	publish(t, s.Broker, evt)
	testwait.Eventually(t, 20*time.Second, "the first delivery", func() bool { return rc.count() == 1 })
	// The same event again, then a sentinel on the same subject (same partition, so it
	// is consumed after the duplicate).
	sentinel := event(t, "acme", events.TypePageVersionProcessed, "audience_1")
	publish(t, s.Broker, evt, evt, sentinel)
	// The deliveries of one subject go out in order: once the sentinel is in, so is any
	// delivery the duplicate made (and the intake recorded it before the sentinel's).
	testwait.Eventually(t, 20*time.Second, "the sentinel", func() bool { return slices.Contains(rc.eventIDs(), sentinel.ID) })
	if ids := rc.eventIDs(); fmt.Sprint(ids) != fmt.Sprint([]string{evt.ID, sentinel.ID}) {
		t.Fatalf("received %v", ids)
	}
	if n := len(deliveries(t, c, subID)); n != 2 {
		t.Fatalf("%d deliveries", n)
	}
}

// An event whose payload breaks the contract is dead-lettered, not delivered; the
// events after it flow.
func TestMalformedPayloadIsNotDelivered(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, nil)
	subscribe(t, c, rc.URL, nil)
	bad, err := events.New("acme", events.TypeFormSubmitted, "form_1", map[string]any{"type": "form.enriched"})
	if err != nil {
		t.Fatal(err)
	}
	good := event(t, "acme", events.TypeFormSubmitted, "form_1")
	publish(t, s.Broker, bad, good)
	testwait.Eventually(t, 20*time.Second, "the good event", func() bool { return rc.count() == 1 })
	if ids := rc.eventIDs(); ids[0] != good.ID {
		t.Fatalf("received %v", ids)
	}
	var dead int
	if err := s.Runtime.Pool.QueryRow(t.Context(), "SELECT count(*) FROM inbox_dead_letters WHERE event_id = $1", bad.ID).Scan(&dead); err != nil || dead != 1 {
		t.Fatalf("dead letters %d, %v", dead, err)
	}
}

// Stopping the service in the middle of a backlog loses nothing: a new instance on the
// same database and broker delivers every event.
func TestRestartMidBacklogLosesNothing(t *testing.T) {
	env := map[string]string{"WEBHOOK_SUBSCRIPTION_CONCURRENCY": "2"}
	s := start(t, env, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int {
		time.Sleep(10 * time.Millisecond) // a slow receiver, so that the stop finds a backlog
		return 200
	})
	subID, _ := subscribe(t, c, rc.URL, nil)
	const n = 300
	want := map[string]bool{}
	var evts []events.Envelope
	for i := 0; i < n; i++ {
		e := event(t, "acme", events.TypeFormSubmitted, fmt.Sprintf("form_%d", i))
		evts = append(evts, e)
		want[e.ID] = true
	}
	publish(t, s.Broker, evts...)
	testwait.Eventually(t, 30*time.Second, "part of the backlog", func() bool { return rc.count() >= 20 })
	s.Stop()
	before := rc.count()
	if before >= n {
		t.Fatalf("the backlog was already delivered (%d)", before)
	}

	s2 := start(t, env, application.Options{}, servicetest.Options{DatabaseURL: s.DatabaseURL, Broker: s.Broker})
	testwait.Eventually(t, 60*time.Second, "every event after the restart", func() bool {
		got := map[string]bool{}
		for _, id := range rc.eventIDs() {
			got[id] = true
		}
		return len(got) == n
	})
	for _, id := range rc.eventIDs() {
		if !want[id] {
			t.Fatalf("unexpected event %s", id)
		}
	}
	c2 := client(t, s2, "acme")
	testwait.Eventually(t, 10*time.Second, "every delivery to read as succeeded", func() bool {
		r := mustStatus(t, c2.Do("GET", "/v0/webhook_subscriptions/"+subID+"/deliveries?status=succeeded&limit=1", nil), 200)
		return r["totalCount"] == float64(n)
	})
	t.Logf("%d delivered before the stop, %d requests in all for %d events", before, rc.count(), n)
}

// One slow receiver does not hold up the others: it occupies at most its
// subscription's concurrency.
func TestSlowReceiverDoesNotDelayOthers(t *testing.T) {
	s := start(t, map[string]string{"WEBHOOK_SUBSCRIPTION_CONCURRENCY": "2", "WEBHOOK_WORKERS": "8",
		"WEBHOOK_TIMEOUT": "3s"}, application.Options{})
	c := client(t, s, "acme")
	var inFlight, most atomic.Int32
	slow := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(2500 * time.Millisecond) // the slow receiver under test
		return 200
	})
	fast := newReceiver(t, nil)
	subscribe(t, c, slow.URL, []string{"form.submitted"})
	subscribe(t, c, fast.URL, []string{"form.enriched"})
	var evts []events.Envelope
	for i := 0; i < 30; i++ {
		evts = append(evts, event(t, "acme", events.TypeFormSubmitted, fmt.Sprintf("form_%d", i)))
	}
	publish(t, s.Broker, evts...)
	testwait.Eventually(t, 20*time.Second, "the slow receiver to be busy", func() bool { return slow.count() >= 2 })
	sent := time.Now()
	publish(t, s.Broker, event(t, "acme", events.TypeFormEnriched, "form_x"))
	testwait.Eventually(t, 20*time.Second, "the fast receiver", func() bool { return fast.count() == 1 })
	if d := fast.all()[0].at.Sub(sent); d > 2*time.Second {
		t.Fatalf("the fast receiver waited %s behind the slow one", d)
	}
	if n := most.Load(); n > 2 {
		t.Fatalf("the slow receiver had %d requests at once (limit 2)", n)
	}
}

// The DNS-rebinding case: a name that resolved to a public address when the subscription
// was written and resolves to 127.0.0.1 at delivery time is refused when dialing, and the
// refusal is recorded on the attempt.
func TestSSRFGuardRefusesAtConnectTime(t *testing.T) {
	rc := newReceiver(t, nil)
	names := newResolver(map[string]string{"rebind.example.com": "93.184.216.34"})
	s := start(t, map[string]string{"WEBHOOK_ALLOW_PRIVATE_TARGETS": "false", "WEBHOOK_RETRY_SCHEDULE": "50ms"},
		application.Options{Resolver: names})
	c := client(t, s, "acme")
	subID, _ := subscribe(t, c, "http://rebind.example.com:"+portOf(t, rc.Server)+"/hook", nil)
	names.set("rebind.example.com", "127.0.0.1")
	publish(t, s.Broker, event(t, "acme", events.TypeFormSubmitted, "form_1"))
	var d apitypes.WebhookDelivery
	testwait.Eventually(t, 20*time.Second, "the delivery to fail", func() bool {
		ds := deliveries(t, c, subID)
		if len(ds) == 0 {
			return false
		}
		d = ds[0]
		return d.Status == "failed"
	})
	for _, a := range d.Attempts {
		// The attempt says the destination is not allowed, never the address the name
		// resolved to (the operator's log has it).
		if msg := fmt.Sprint(val(a.Error)); a.StatusCode != nil || msg != domain.RefusedMessage || strings.Contains(msg, "127.0.0.1") {
			t.Fatalf("attempt = %s, want the error %q without the address", show(a), domain.RefusedMessage)
		}
	}
	if rc.count() != 0 {
		t.Fatalf("the private receiver got %d requests", rc.count())
	}
	if !strings.Contains(metrics(t, s), `webhook_delivery_attempts_total{result="refused"} 2`) {
		t.Fatal("refused attempts are not counted")
	}
}

func metrics(t *testing.T, s *servicetest.Service) string {
	t.Helper()
	resp, err := http.Get(s.MetricsURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestMetrics(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, func(n int, r *http.Request, w http.ResponseWriter) int {
		if n == 1 {
			return 500
		}
		return 200
	})
	subscribe(t, c, rc.URL, nil)
	publish(t, s.Broker, event(t, "acme", events.TypeFormSubmitted, "form_1"))
	testwait.Eventually(t, 20*time.Second, "the delivery", func() bool {
		return strings.Contains(metrics(t, s), `webhook_deliveries_total{outcome="succeeded"} 1`)
	})
	// The outcome is counted when the attempt ends; the queue gauges are read from the
	// database, where the writer records the result a moment later.
	testwait.Eventually(t, 5*time.Second, "the delivery's result recorded", func() bool {
		return strings.Contains(metrics(t, s), "\nwebhook_queue_depth 0\n")
	})
	m := metrics(t, s)
	for _, want := range []string{
		`webhook_deliveries_total{outcome="retry_scheduled"} 1`,
		`webhook_delivery_attempts_total{result="http_error"} 1`,
		`webhook_delivery_attempts_total{result="success"} 1`,
		`webhook_delivery_attempt_duration_seconds_count 2`,
		"webhook_queue_depth 0",
		"webhook_oldest_pending_age_seconds 0",
		"webhook_dispatch_lag_seconds 0",
		"webhook_delivery_attempts_in_flight 0",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestDeliveriesListNewestFirst(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, nil)
	subID, _ := subscribe(t, c, rc.URL, nil)
	for i := 0; i < 5; i++ {
		publish(t, s.Broker, event(t, "acme", events.TypeFormSubmitted, "form_1"))
	}
	testwait.Eventually(t, 20*time.Second, "five deliveries", func() bool { return rc.count() == 5 })
	var seen []string
	path := "/v0/webhook_subscriptions/" + subID + "/deliveries?limit=2"
	for {
		page := apitest.Decode[apitypes.WebhookDeliveryPage](t, c.Do("GET", path, nil), 200, "a deliveries page")
		if page.TotalCount != 5 {
			t.Fatalf("totalCount %v", page.TotalCount)
		}
		for _, it := range page.Items {
			seen = append(seen, it.EventId)
		}
		if page.NextCursor == nil {
			break
		}
		path = "/v0/webhook_subscriptions/" + subID + "/deliveries?limit=2&cursor=" + *page.NextCursor
	}
	got := rc.eventIDs()
	for i := range got {
		if seen[i] != got[len(got)-1-i] {
			t.Fatalf("list %v is not newest first (arrivals %v)", seen, got)
		}
	}
	// A cursor of one subscription's list is refused by another's.
	other, _ := subscribe(t, c, rc.URL, nil)
	cur := mustStatus(t, c.Do("GET", "/v0/webhook_subscriptions/"+subID+"/deliveries?limit=1", nil), 200)["nextCursor"].(string)
	if r := c.Do("GET", "/v0/webhook_subscriptions/"+other+"/deliveries?cursor="+cur, nil); r.Status != 400 {
		t.Fatalf("foreign cursor: %s", r)
	}
	if r := c.Do("GET", "/v0/webhook_subscriptions/"+subID+"/deliveries?status=failed&cursor="+cur, nil); r.Status != 400 {
		t.Fatalf("cursor of another filter: %s", r)
	}
}

// Lanes full of deliveries waiting for slow receivers do not use up a replica's room:
// with 4 workers and 3 slow subscriptions, each with a backlog, a fast subscription's
// event still goes out at once on the free worker.
func TestSlowSubscriptionsDoNotExhaustTheReplica(t *testing.T) {
	s := start(t, map[string]string{"WEBHOOK_SUBSCRIPTION_CONCURRENCY": "1", "WEBHOOK_WORKERS": "4",
		"WEBHOOK_TIMEOUT": "5s"}, application.Options{})
	c := client(t, s, "acme")
	var slowHits atomic.Int32
	slow := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int {
		slowHits.Add(1)
		time.Sleep(2 * time.Second) // the slow receivers under test
		return 200
	})
	for i := 0; i < 3; i++ {
		subscribe(t, c, fmt.Sprintf("%s/slow%d", slow.URL, i), []string{"form.submitted"})
	}
	fast := newReceiver(t, nil)
	subscribe(t, c, fast.URL, []string{"form.enriched"})
	var evts []events.Envelope
	for i := 0; i < 10; i++ {
		evts = append(evts, event(t, "acme", events.TypeFormSubmitted, fmt.Sprintf("form_%d", i)))
	}
	publish(t, s.Broker, evts...)
	testwait.Eventually(t, 20*time.Second, "the three slow receivers to be busy", func() bool { return slowHits.Load() >= 3 })
	sent := time.Now()
	publish(t, s.Broker, event(t, "acme", events.TypeFormEnriched, "form_x"))
	testwait.Eventually(t, 20*time.Second, "the fast receiver", func() bool { return fast.count() == 1 })
	if d := fast.all()[0].at.Sub(sent); d > 1500*time.Millisecond {
		t.Fatalf("the fast receiver waited %s behind the slow ones", d)
	}
}
