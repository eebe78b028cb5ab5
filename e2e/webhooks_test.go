package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/e2e/faultload"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/libs/timestamp"
)

// whReceiver is a webhook endpoint on 127.0.0.1, or on $E2E_RECEIVER_HOST when the system
// runs elsewhere (make run and values-dev.yaml allow private targets), that records every
// delivery and answers as respond says (200 when nil).
type whReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	got     []whDelivery
	respond func(n int) int
}

type whDelivery struct {
	header http.Header
	body   []byte
	at     time.Time
	parsed struct {
		Timestamp string         `json:"timestamp"`
		EventID   string         `json:"eventId"`
		Payload   map[string]any `json:"payload"`
	}
}

func newWhReceiver(t *testing.T, respond func(n int) int) *whReceiver {
	rc := &whReceiver{respond: respond}
	rc.Server = faultload.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := whDelivery{header: r.Header.Clone(), at: time.Now()}
		d.body, _ = io.ReadAll(r.Body)
		_ = json.Unmarshal(d.body, &d.parsed)
		rc.mu.Lock()
		rc.got = append(rc.got, d)
		n := len(rc.got)
		rc.mu.Unlock()
		status := 200
		if rc.respond != nil {
			status = rc.respond(n)
		}
		w.WriteHeader(status)
	}))
	return rc
}

// deliveries returns every delivery so far as package faultload reads them.
func (rc *whReceiver) deliveries() []faultload.Delivery {
	all := rc.all()
	out := make([]faultload.Delivery, len(all))
	for i, d := range all {
		out[i] = faultload.Delivery{EventID: d.parsed.EventID, Payload: d.parsed.Payload}
	}
	return out
}

func (rc *whReceiver) all() []whDelivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]whDelivery(nil), rc.got...)
}

// matching returns the deliveries whose payload satisfies keep, in arrival order.
func (rc *whReceiver) matching(keep func(p map[string]any) bool) []whDelivery {
	var out []whDelivery
	for _, d := range rc.all() {
		if keep(d.parsed.Payload) {
			out = append(out, d)
		}
	}
	return out
}

// whSubscribe creates a subscription through the gateway; it returns its ID and secret.
func whSubscribe(t *testing.T, c *apitest.Client, body map[string]any) (string, string) {
	t.Helper()
	m := must(t, c.Do("POST", "/v0/webhook_subscriptions", body), 201)
	return m["subscriptionId"].(string), m["signingSecret"].(string)
}

// whVerify checks a delivery as a receiver does: X-Webhook-Signature-256 over the raw
// body keyed with the secret string, X-Webhook-Timestamp in Unix milliseconds, and the
// Standard Webhooks signature keyed with the secret's decoded bytes.
func whVerify(t *testing.T, secret string, d whDelivery) {
	t.Helper()
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(d.body)
	if got := d.header.Get("X-Webhook-Signature-256"); !hmac.Equal([]byte(got), []byte("sha256="+hex.EncodeToString(m.Sum(nil)))) {
		t.Fatalf("X-Webhook-Signature-256 %q does not verify", got)
	}
	ts := d.header.Get("X-Webhook-Timestamp")
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(ts) != 13 {
		t.Fatalf("X-Webhook-Timestamp %q is not Unix milliseconds", ts)
	}
	if skew := d.at.Sub(time.UnixMilli(ms)); skew < -time.Second || skew > 10*time.Second {
		t.Fatalf("X-Webhook-Timestamp is %s away from the arrival", skew)
	}
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	m = hmac.New(sha256.New, key)
	m.Write([]byte(d.header.Get("webhook-id") + "." + d.header.Get("webhook-timestamp") + "." + string(d.body)))
	if want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)); !strings.Contains(" "+d.header.Get("webhook-signature")+" ", " "+want+" ") {
		t.Fatalf("webhook-signature %q does not verify", d.header.Get("webhook-signature"))
	}
	if d.header.Get("webhook-id") != d.parsed.EventID || d.parsed.EventID == "" || d.parsed.Payload["type"] == nil {
		t.Fatalf("delivery body %s, webhook-id %q", d.body, d.header.Get("webhook-id"))
	}
	if _, err := timestamp.Parse(d.parsed.Timestamp); err != nil || !strings.HasSuffix(d.parsed.Timestamp, "Z") {
		t.Fatalf("timestamp %q", d.parsed.Timestamp)
	}
}

// whReal fails the test unless d is marked as a real delivery: no X-Webhook-Test header
// and no "test" field in the body (test events carry both).
func whReal(t *testing.T, d whDelivery) {
	t.Helper()
	var body map[string]any
	_ = json.Unmarshal(d.body, &body)
	if _, marked := body["test"]; marked || len(d.header.Values("X-Webhook-Test")) != 0 {
		t.Fatalf("a real delivery is marked as a test: X-Webhook-Test %v, body %s", d.header.Values("X-Webhook-Test"), d.body)
	}
}

// whTenant issues a key for a fresh tenant and returns the tenant and a client.
func whTenant(t *testing.T) (string, *apitest.Client) {
	tenant := fmt.Sprintf("wh%d", time.Now().UnixNano())
	return tenant, api(t, newKey(t, map[string]any{"tenantIds": []string{tenant}}))
}

// whPublish writes public events straight to the broker, as the pages and persons relays
// would; it needs the local stack.
func whPublish(t *testing.T, evts ...events.Envelope) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(local(t).Brokers()...), Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, AllowAutoTopicCreation: true}
	defer w.Close()
	var msgs []kafka.Message
	for _, e := range evts {
		v, _ := json.Marshal(e)
		topic := events.TopicPages
		if strings.HasPrefix(e.Type, "form.enrich") {
			topic = events.TopicPersons
		}
		msgs = append(msgs, kafka.Message{Topic: topic, Key: []byte(e.Subject), Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

func whEvent(t *testing.T, tenant, typ, subject string, payload string) events.Envelope {
	t.Helper()
	e, err := events.New(tenant, typ, subject, json.RawMessage(`{"type":"`+typ+`",`+payload+`}`))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestWebhookSubscriptionsThroughTheGateway(t *testing.T) {
	_, c := whTenant(t)
	_, other := whTenant(t)
	created := must(t, c.Do("POST", "/v0/webhook_subscriptions", map[string]any{
		"url": "https://hooks.example.com/in", "events": []string{"page.version.created"}}), 201)
	id := created["subscriptionId"].(string)
	if !strings.HasPrefix(created["signingSecret"].(string), "whsec_") || created["active"] != true {
		t.Fatalf("created = %v", created)
	}
	got := must(t, c.Do("GET", "/v0/webhook_subscriptions/"+id, nil), 200)
	if _, shown := got["signingSecret"]; shown {
		t.Fatal("the secret is shown after creation")
	}
	must(t, c.Do("PATCH", "/v0/webhook_subscriptions/"+id, map[string]any{"events": nil, "active": false}), 200)
	rotated := must(t, c.Do("POST", "/v0/webhook_subscriptions/"+id+"/rotate_secret", nil), 200)
	if rotated["signingSecret"] == created["signingSecret"] {
		t.Fatal("rotation kept the secret")
	}
	if list := must(t, c.Do("GET", "/v0/webhook_subscriptions?limit=10", nil), 200); list["totalCount"] != 1.0 {
		t.Fatalf("list = %v", list)
	}
	must(t, c.Do("GET", "/v0/webhook_subscriptions/"+id+"/deliveries", nil), 200)
	for _, r := range []*apitest.Response{
		other.Do("GET", "/v0/webhook_subscriptions/"+id, nil),
		other.Do("PATCH", "/v0/webhook_subscriptions/"+id, map[string]any{"active": true}),
		other.Do("GET", "/v0/webhook_subscriptions/"+id+"/deliveries", nil),
		other.Do("DELETE", "/v0/webhook_subscriptions/"+id, nil),
	} {
		if r.Status != 404 {
			t.Fatalf("another tenant: %s", r)
		}
	}
	for name, body := range map[string]any{
		"malformed":     rawBody(`{"url":`),
		"missing url":   map[string]any{"events": nil},
		"ftp url":       map[string]any{"url": "ftp://x.example.com", "events": nil},
		"unknown event": map[string]any{"url": "https://x.example.com", "events": []string{"page.deleted"}},
		"unknown field": map[string]any{"url": "https://x.example.com", "events": nil, "secret": "x"},
	} {
		if r := c.Do("POST", "/v0/webhook_subscriptions", body); r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" {
			t.Errorf("%s: %s", name, r)
		}
	}
	must(t, c.Do("DELETE", "/v0/webhook_subscriptions/"+id, nil), 204)
	must(t, c.Do("GET", "/v0/webhook_subscriptions/"+id, nil), 404)
}

// Public events on the broker reach the active subscriptions of their tenant that list
// their type, signed; inactive subscriptions, unlisted types and other tenants get nothing.
func TestWebhookDeliveryOfPublicEvents(t *testing.T) {
	local(t)
	tenant, c := whTenant(t)
	otherTenant, other := whTenant(t)
	versions, everything, inactive, formsOnly, foreign := newWhReceiver(t, nil), newWhReceiver(t, nil),
		newWhReceiver(t, nil), newWhReceiver(t, nil), newWhReceiver(t, nil)
	_, versionSecret := whSubscribe(t, c, map[string]any{"url": versions.URL,
		"events": []string{"page.version.created", "page.version.processed", "page.version.published"}})
	everythingID, _ := whSubscribe(t, c, map[string]any{"url": everything.URL, "events": nil})
	inactiveID, _ := whSubscribe(t, c, map[string]any{"url": inactive.URL, "events": nil, "active": false})
	formsOnlyID, _ := whSubscribe(t, c, map[string]any{"url": formsOnly.URL, "events": []string{"form.enriched"}})
	whSubscribe(t, other, map[string]any{"url": foreign.URL, "events": nil})

	now := timestamp.Format(time.Now())
	audience := fmt.Sprintf("audience_%d", time.Now().UnixNano())
	pv := `"pageId":"page_1","audienceId":"` + audience + `","versionId":"version_1","versionNumber":1`
	evts := []events.Envelope{
		whEvent(t, tenant, events.TypePageVersionCreated, audience, `"pageId":"page_1","versionId":"version_1","createdAt":"`+now+`"`),
		whEvent(t, tenant, events.TypePageVersionProcessed, audience, pv+`,"status":"processing","processedAt":"`+now+`"`),
		whEvent(t, tenant, events.TypePageVersionPublished, audience, pv+`,"status":"published","publishedAt":"`+now+`"`),
		whEvent(t, otherTenant, events.TypePageVersionCreated, "audience_x", `"pageId":"page_x","versionId":"version_x","createdAt":"`+now+`"`),
	}
	whPublish(t, evts...)
	testwait.Eventually(t, 30*time.Second, "three version events", func() bool { return len(versions.all()) == 3 })
	var types []string
	for i, d := range versions.all() {
		whVerify(t, versionSecret, d)
		whReal(t, d)
		if d.parsed.EventID != evts[i].ID {
			t.Fatalf("delivery %d is %s, want %s (in order)", i, d.parsed.EventID, evts[i].ID)
		}
		types = append(types, d.parsed.Payload["type"].(string))
	}
	if fmt.Sprint(types) != "[page.version.created page.version.processed page.version.published]" {
		t.Fatalf("types %v", types)
	}
	testwait.Eventually(t, 30*time.Second, "the catch-all subscription", func() bool { return len(everything.all()) == 3 })
	testwait.Eventually(t, 30*time.Second, "the other tenant's event", func() bool { return len(foreign.all()) == 1 })
	// An event's deliveries are all recorded in the one transaction that consumes it: every
	// event has been delivered somewhere, so every delivery there will ever be is recorded.
	recorded := func(id string) int {
		return len(decode[apitypes.WebhookDeliveryPage](t, c.Do("GET", "/v0/webhook_subscriptions/"+id+"/deliveries", nil), 200).Items)
	}
	if n, m, k := recorded(inactiveID), recorded(formsOnlyID), recorded(everythingID); n != 0 || m != 0 || k != 3 {
		t.Fatalf("deliveries recorded: inactive %d, unlisted type %d, catch-all %d", n, m, k)
	}
	if len(inactive.all()) != 0 || len(formsOnly.all()) != 0 || len(everything.all()) != 3 {
		t.Fatalf("inactive %d, unlisted type %d, catch-all %d", len(inactive.all()), len(formsOnly.all()), len(everything.all()))
	}
	if f := foreign.all()[0]; f.parsed.EventID != evts[3].ID {
		t.Fatalf("the other tenant got %s", f.parsed.EventID)
	}
}

// A test event sent through the gateway reaches the receiver marked as a test, on every
// attempt: the header X-Webhook-Test: true and, signed with the body, "test": true; its
// payload's IDs are fake (prefix and 26 zeros) and name nothing of the tenant's.
func TestWebhookTestEventIsMarkedAsATest(t *testing.T) {
	_, c := whTenant(t)
	rc := newWhReceiver(t, func(n int) int {
		if n == 1 {
			return 503 // the retry must be marked too
		}
		return 204
	})
	id, secret := whSubscribe(t, c, map[string]any{"url": rc.URL, "events": []string{"form.enriched"}})
	sent := must(t, c.Do("POST", "/v0/webhook_subscriptions/"+id+"/test", map[string]any{"eventType": "form.submitted"}), 202)
	testwait.Eventually(t, 60*time.Second, "the test event and its retry", func() bool { return len(rc.all()) >= 2 })
	for i, d := range rc.all()[:2] {
		whVerify(t, secret, d)
		var body struct {
			Test any `json:"test"`
		}
		_ = json.Unmarshal(d.body, &body)
		if d.parsed.EventID != sent["eventId"] || d.header.Get("X-Webhook-Test") != "true" || body.Test != true {
			t.Fatalf("attempt %d of the test event: X-Webhook-Test %q, body %s; want the header true and \"test\":true",
				i+1, d.header.Get("X-Webhook-Test"), d.body)
		}
		for _, field := range []string{"pageId", "audienceId", "audienceSessionId", "formSubmissionId"} {
			if v, _ := d.parsed.Payload[field].(string); !strings.HasSuffix(v, "_00000000000000000000000000") {
				t.Fatalf("attempt %d: %s = %q; want a fake ID (prefix and 26 zeros)", i+1, field, v)
			}
		}
	}
	if page := c.Do("GET", "/v0/pages/"+rc.all()[0].parsed.Payload["pageId"].(string), nil); page.Status != 404 && page.Status != 503 {
		t.Fatalf("the test event's pageId names something: %s", page)
	}
}

// A receiver that answers 500 twice still gets the event, with the same eventId and
// body; a receiver that answers 410 disables its subscription, which the tenant's
// subscription to webhook_subscription.disabled is told of (signed, as every delivery),
// and the events API keeps.
func TestWebhookRetriesAndGone(t *testing.T) {
	local(t)
	tenant, c := whTenant(t)
	flaky := newWhReceiver(t, func(n int) int {
		if n <= 2 {
			return 500
		}
		return 200
	})
	gone := newWhReceiver(t, func(int) int { return 410 })
	flakyID, secret := whSubscribe(t, c, map[string]any{"url": flaky.URL, "events": []string{"form.submitted"}})
	goneID, _ := whSubscribe(t, c, map[string]any{"url": gone.URL, "events": []string{"form.submitted"}})
	ops := newWhReceiver(t, nil)
	_, opsSecret := whSubscribe(t, c, map[string]any{"url": ops.URL, "events": []string{events.TypeWebhookSubscriptionDisabled}})
	e := whEvent(t, tenant, events.TypeFormSubmitted, "form_1", `"pageId":"page_1","audienceId":null,"audienceSessionId":"s_1",`+
		`"formSubmissionId":"form_1","identifier":"a@example.com","identifierType":"email","email":"a@example.com",`+
		`"phone":null,"linkedinProfileUrl":null,"name":null,"fields":null,"submittedAt":"`+timestamp.Format(time.Now())+`"`)
	whPublish(t, e)
	testwait.Eventually(t, 60*time.Second, "the third attempt", func() bool { return len(flaky.all()) == 3 })
	got := flaky.all()
	for _, d := range got {
		whVerify(t, secret, d)
		if d.parsed.EventID != e.ID || string(d.body) != string(got[0].body) {
			t.Fatalf("a retry changed the event: %s vs %s", d.body, got[0].body)
		}
	}
	testwait.Eventually(t, 30*time.Second, "the delivery to read as succeeded", func() bool {
		items := decode[apitypes.WebhookDeliveryPage](t, c.Do("GET", "/v0/webhook_subscriptions/"+flakyID+"/deliveries", nil), 200).Items
		return len(items) == 1 && items[0].Status == "succeeded" && len(items[0].Attempts) == 3
	})
	testwait.Eventually(t, 30*time.Second, "the 410 subscription to be disabled", func() bool {
		return must(t, c.Do("GET", "/v0/webhook_subscriptions/"+goneID, nil), 200)["active"] == false
	})
	if len(gone.all()) != 1 {
		t.Fatalf("the 410 receiver got %d requests", len(gone.all()))
	}
	testwait.Eventually(t, 30*time.Second, "the operational event on the other subscription", func() bool { return len(ops.all()) > 0 })
	d := ops.all()[0]
	whVerify(t, opsSecret, d)
	if p := d.parsed.Payload; len(ops.all()) != 1 || p["type"] != events.TypeWebhookSubscriptionDisabled ||
		p["subscriptionId"] != goneID || p["url"] != gone.URL || p["reason"] != "the receiver answered 410 Gone" {
		t.Fatalf("the operational receiver got %d deliveries, the first %s; want one webhook_subscription.disabled of %s",
			len(ops.all()), d.body, goneID)
	}
	listed := decode[apitypes.EventPage](t, c.Do("GET", "/v0/events?type="+events.TypeWebhookSubscriptionDisabled+"&subject="+goneID, nil), 200).Items
	if len(listed) != 1 || listed[0].EventId != d.parsed.EventID {
		t.Fatalf("the events API lists %v, want the announcement %s", listed, d.parsed.EventID)
	}
}

// A graceful restart of the webhooks service in the middle of a backlog loses nothing.
func TestWebhookRestartLosesNothing(t *testing.T) {
	s := local(t)
	tenant, c := whTenant(t)
	rc := newWhReceiver(t, func(int) int {
		time.Sleep(30 * time.Millisecond) // a slow receiver, so that the restart finds a backlog
		return 200
	})
	whSubscribe(t, c, map[string]any{"url": rc.URL, "events": nil})
	var evts []events.Envelope
	for i := 0; i < 400; i++ {
		evts = append(evts, whEvent(t, tenant, events.TypeFormEnrichmentFailed, fmt.Sprintf("form_%d", i),
			`"formSubmissionId":"form_1","audienceSessionId":"s_1","pageId":"page_1","reason":"no_identifier","detail":"none"`))
	}
	whPublish(t, evts...)
	testwait.Eventually(t, 30*time.Second, "part of the backlog", func() bool { return len(rc.all()) >= 10 })
	s.Terminate("webhooks")
	if n := len(rc.all()); n >= len(evts) {
		t.Fatalf("the backlog was delivered before the stop (%d)", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Restart(ctx, "webhooks"); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 60*time.Second, "every event after the restart", func() bool {
		seen := map[string]bool{}
		for _, d := range rc.all() {
			seen[d.parsed.EventID] = true
		}
		return len(seen) == len(evts)
	})
}

// whNeed skips a test whose producing service is not part of this system (E2E_SERVICES).
func whNeed(t *testing.T, c *apitest.Client, path, service string) {
	t.Helper()
	if r := c.Do("GET", path, nil); r.Status == 503 {
		t.Skipf("the %s service is not running: %s", service, r.Body)
	}
}

// The scenario: a subscription for the page.version.* events receives all three
// for a newly created audience, signed with the secret from the create response.
func TestWebhookVersionEventsOfANewAudience(t *testing.T) {
	_, c := whTenant(t)
	whNeed(t, c, "/v0/pages", "pages")
	rc := newWhReceiver(t, nil)
	unlisted := newWhReceiver(t, nil)
	_, secret := whSubscribe(t, c, map[string]any{"url": rc.URL,
		"events": []string{"page.version.created", "page.version.processed", "page.version.published"}})
	whSubscribe(t, c, map[string]any{"url": unlisted.URL, "events": []string{"form.submitted"}})
	page := must(t, c.Do("POST", "/v0/pages", map[string]any{"name": "Webhooks e2e", "title": "Webhooks",
		"pageContext": "A page whose audience versions send webhooks", "brandId": "brand_e2e", "pageType": "inbound"}), 201)
	pageID := page["pageId"].(string)
	aud := must(t, c.Do("POST", "/v0/pages/"+pageID+"/audiences", map[string]any{"publishBehavior": "publish"}), 201)
	audienceID := aud["audienceId"].(string)
	ofPage := func(p map[string]any) bool { return p["pageId"] == pageID }
	testwait.Eventually(t, 60*time.Second, "created, processed and published", func() bool { return len(rc.matching(ofPage)) >= 3 })
	got := rc.matching(ofPage)
	var types []string
	for _, d := range got {
		whVerify(t, secret, d)
		whReal(t, d)
		types = append(types, d.parsed.Payload["type"].(string))
		if d.parsed.Payload["type"] != "page.version.created" && d.parsed.Payload["audienceId"] != audienceID {
			t.Fatalf("payload %v is not about audience %s", d.parsed.Payload, audienceID)
		}
	}
	if fmt.Sprint(types[:3]) != "[page.version.created page.version.processed page.version.published]" {
		t.Fatalf("types %v", types)
	}
	if len(unlisted.all()) != 0 {
		t.Fatalf("a form.submitted subscription got %d version events", len(unlisted.all()))
	}
}

// The scenario: a form submission reaches a form.* subscription as
// form.submitted, then form.enriched.
func TestWebhookFormEventsOfASubmission(t *testing.T) {
	_, c := whTenant(t)
	whNeed(t, c, "/v0/pages", "pages")
	whNeed(t, c, "/v0/persons/search", "persons")
	rc := newWhReceiver(t, nil)
	_, secret := whSubscribe(t, c, map[string]any{"url": rc.URL,
		"events": []string{"form.submitted", "form.enriched", "form.enrichment_failed"}})
	page := must(t, c.Do("POST", "/v0/pages", map[string]any{"name": "Forms e2e", "title": "Forms",
		"pageContext": "A page with a form", "brandId": "brand_e2e", "pageType": "inbound"}), 201)
	pageID := page["pageId"].(string)
	aud := must(t, c.Do("POST", "/v0/pages/"+pageID+"/audiences", map[string]any{"publishBehavior": "publish"}), 201)
	email := fmt.Sprintf("visitor%d@example.com", time.Now().UnixNano())
	must(t, c.Do("POST", "/v0/pages/"+pageID+"/audience_sessions", map[string]any{
		"analyticsSessionId": "webhooks-e2e-" + email, "audienceId": aud["audienceId"],
		"sessionStartedAt": timestamp.Format(time.Now()),
		"formSubmission":   map[string]any{"email": email, "name": "A Visitor"}}), 201)
	ofPage := func(p map[string]any) bool { return p["pageId"] == pageID }
	testwait.Eventually(t, 60*time.Second, "form.submitted and form.enriched", func() bool { return len(rc.matching(ofPage)) >= 2 })
	got := rc.matching(ofPage)
	for _, d := range got {
		whVerify(t, secret, d)
	}
	sub, enr := got[0].parsed.Payload, got[1].parsed.Payload
	if sub["type"] != "form.submitted" || enr["type"] != "form.enriched" || sub["email"] != email ||
		sub["formSubmissionId"] == nil || enr["formSubmissionId"] != sub["formSubmissionId"] || enr["personId"] == nil {
		t.Fatalf("form events %v then %v", sub, enr)
	}
}
