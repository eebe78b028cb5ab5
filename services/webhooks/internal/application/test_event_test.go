package application_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/services/webhooks/internal/application"
)

// docExample returns the example of a schema of the OpenAPI document, as JSON.
func docExample(t *testing.T, schema string) map[string]any {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(doc.Components.Schemas[schema].Value.Example)
	var v map[string]any
	_ = json.Unmarshal(b, &v)
	return v
}

// withFakeIDs returns the example with each of its IDs (fields named …Id holding a
// TypeID) replaced by the fake ID of its kind: the prefix and 26 zeros.
func withFakeIDs(example map[string]any) map[string]any {
	for k, v := range example {
		if s, ok := v.(string); ok && strings.HasSuffix(k, "Id") && strings.Contains(s, "_") {
			example[k] = s[:strings.LastIndexByte(s, '_')] + "_00000000000000000000000000"
		}
	}
	return example
}

// A test event of the chosen type goes through the normal path: a delivery of this
// subscription only, signed with its secret, whose payload is the document's example
// with fake IDs, listed with its attempt.
func TestTestEventIsDeliveredSignedWithTheDocumentsExample(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, nil)
	other := newReceiver(t, nil)
	// The subscription does not list the type: a test may send any of them.
	subID, secret := subscribe(t, c, rc.URL+"/hook", []string{"form.enriched"})
	otherID, _ := subscribe(t, c, other.URL+"/hook", nil)

	d := testEvent(t, c, subID, "page.version.published")
	if d.SubscriptionId != subID || d.EventType != "page.version.published" || d.Status != "pending" {
		t.Fatalf("answer = %s", show(d))
	}
	testwait.Eventually(t, 20*time.Second, "the test delivery", func() bool { return rc.count() == 1 })
	got := rc.all()[0]
	if !verify256(secret, got.body, got.header.Get("X-Webhook-Signature-256")) || !verifyStandard(secret, got.header, got.body) {
		t.Fatalf("the test event's signatures do not verify: %v", got.header)
	}
	var body struct {
		EventID string `json:"eventId"`
		Payload any    `json:"payload"`
	}
	if err := json.Unmarshal(got.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.EventID != d.EventId || got.header.Get("webhook-id") != d.EventId {
		t.Fatalf("eventId %q, webhook-id %q, want %v", body.EventID, got.header.Get("webhook-id"), d.EventId)
	}
	if want := withFakeIDs(docExample(t, "PageVersionPublishedEventPayload")); !reflect.DeepEqual(body.Payload, want) {
		t.Fatalf("payload %v\nwant the document's example with fake IDs %v", body.Payload, want)
	}
	testwait.Eventually(t, 10*time.Second, "the listed test delivery to succeed", func() bool {
		ds := deliveries(t, c, subID)
		return len(ds) == 1 && ds[0].DeliveryId == d.DeliveryId && ds[0].Status == "succeeded" &&
			len(ds[0].Attempts) == 1
	})
	// Only deliveries that are recorded are sent: the other subscription has none.
	if ds := deliveries(t, c, otherID); len(ds) != 0 || other.count() != 0 {
		t.Fatalf("another subscription got test deliveries: %s (received %d)", show(ds), other.count())
	}

	// Each test event is a new event.
	d2 := testEvent(t, c, subID, "form.submitted")
	if d2.EventId == d.EventId || d2.DeliveryId == d.DeliveryId {
		t.Fatalf("a second test event reused IDs: %s %s", show(d), show(d2))
	}
}

// A receiver can tell a test delivery from a real one without guessing: every attempt of
// a test event, a manual retry included, carries the header X-Webhook-Test: true and its
// signed body "test": true; a real event's delivery to the same subscription has neither.
func TestTestDeliveriesAreMarkedAndRealOnesAreNot(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, nil)
	subID, secret := subscribe(t, c, rc.URL+"/hook", nil)
	marker := func(r received) (header []string, field any, signed bool) {
		var body map[string]any
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatal(err)
		}
		field, present := body["test"]
		if !present {
			field = "absent"
		}
		return r.header.Values("X-Webhook-Test"), field, verifyStandard(secret, r.header, r.body)
	}

	d := testEvent(t, c, subID, "form.submitted")
	realEvt := event(t, "acme", events.TypeFormSubmitted, "formsub_1")
	publish(t, s.Broker, realEvt)
	testwait.Eventually(t, 20*time.Second, "the test and the real delivery", func() bool { return rc.count() == 2 })
	byEvent := map[string]received{}
	for _, r := range rc.all() {
		var b struct {
			EventID string `json:"eventId"`
		}
		_ = json.Unmarshal(r.body, &b)
		byEvent[b.EventID] = r
	}
	if h, f, ok := marker(byEvent[d.EventId]); fmt.Sprint(h) != "[true]" || f != true || !ok {
		t.Fatalf("test delivery: X-Webhook-Test %v, body test %v, signed %v; want [true], true, true", h, f, ok)
	}
	if h, f, ok := marker(byEvent[realEvt.ID]); len(h) != 0 || f != "absent" || !ok {
		t.Fatalf("real delivery: X-Webhook-Test %v, body test %v, signed %v; want no header and no field", h, f, ok)
	}

	// The marker is the delivery's, not the first attempt's: a manual retry keeps it.
	testwait.Eventually(t, 10*time.Second, "the test delivery to succeed", func() bool {
		return getDelivery(t, c, subID, d.DeliveryId).Status == "succeeded"
	})
	mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions/"+subID+"/deliveries/"+d.DeliveryId+"/retry", nil), 202)
	testwait.Eventually(t, 20*time.Second, "the retried test delivery", func() bool { return rc.count() == 3 })
	if h, f, _ := marker(rc.all()[2]); fmt.Sprint(h) != "[true]" || f != true {
		t.Fatalf("retried test delivery: X-Webhook-Test %v, body test %v; want [true], true", h, f)
	}
}

func TestTestEventRefusals(t *testing.T) {
	s := start(t, nil, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, nil)
	subID, _ := subscribe(t, c, rc.URL+"/hook", nil)
	path := "/v0/webhook_subscriptions/" + subID + "/test"

	// The document judges the body (WebhookTestEventRequest) before the handler runs.
	for name, tc := range map[string]struct {
		body any
		want string
	}{
		"no body":       {nil, "[body:invalid_type:[]]"},
		"no eventType":  {map[string]any{}, "[body:invalid_type:[eventType]]"},
		"unknown type":  {map[string]any{"eventType": "page.deleted"}, "[body:invalid_enum_value:[eventType]]"},
		"unknown field": {map[string]any{"eventType": "form.submitted", "x": 1}, "[body:unrecognized_keys:[x]]"},
	} {
		r := c.Do("POST", path, tc.body)
		if r.Status != 400 || fmt.Sprint(issueCodes(r)) != tc.want {
			t.Errorf("%s: %d %v, want 400 %s", name, r.Status, issueCodes(r), tc.want)
		}
	}
	mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions/whsub_01kjzd2b7hek8s5fw1x2v3n4pq/test", map[string]any{"eventType": "form.submitted"}), 404)
	// Another tenant's subscription does not exist for this one.
	mustStatus(t, client(t, s, "other").Do("POST", path, map[string]any{"eventType": "form.submitted"}), 404)
	mustStatus(t, c.Do("PATCH", "/v0/webhook_subscriptions/"+subID, map[string]any{"active": false}), 200)
	mustStatus(t, c.Do("POST", path, map[string]any{"eventType": "form.submitted"}), 409)
	// A refused test event records no delivery, and only recorded deliveries are sent.
	if ds := deliveries(t, c, subID); len(ds) != 0 || rc.count() != 0 {
		t.Fatalf("refused test events were recorded: %v (received %d)", ds, rc.count())
	}
}
