package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/testwait"
)

// The events API against the whole system: events of a tenant that has no subscription
// at all are kept and listed newest first, filtered by type and subject, paged with a
// cursor, readable one by one with the body a delivery sends, and invisible to another
// tenant; the event types list gives each type's payload schema.
func TestEventsAPI(t *testing.T) {
	tenant, c := whTenant(t)
	_, other := whTenant(t)
	var evts []events.Envelope
	for i := range 3 {
		evts = append(evts, whEvent(t, tenant, events.TypeFormEnrichmentFailed, fmt.Sprintf("formsub_%d", i),
			`"formSubmissionId":"formsub_1","audienceSessionId":"s_1","pageId":"page_1","reason":"no_identifier","detail":"none"`))
	}
	whPublish(t, evts...)
	var page struct {
		Items []struct {
			EventID, Type, Subject string
			Body                   struct{ EventID string }
		}
		HasMore    bool
		NextCursor *string
	}
	testwait.Eventually(t, 30*time.Second, "the three events listed", func() bool {
		return must2(t, c.Do("GET", "/v0/events", nil), 200).JSON(&page) == nil && len(page.Items) == 3
	})
	if page.Items[0].EventID != evts[2].ID || page.Items[2].EventID != evts[0].ID || page.Items[0].Body.EventID != evts[2].ID {
		t.Fatalf("newest first, each with its delivery body: %+v", page.Items)
	}
	if err := must2(t, c.Do("GET", "/v0/events?limit=2", nil), 200).JSON(&page); err != nil || len(page.Items) != 2 || !page.HasMore {
		t.Fatalf("a first page of two: %+v %v", page, err)
	}
	if err := must2(t, c.Do("GET", "/v0/events?limit=2&cursor="+*page.NextCursor, nil), 200).JSON(&page); err != nil ||
		len(page.Items) != 1 || page.Items[0].EventID != evts[0].ID {
		t.Fatalf("the second page: %+v %v", page, err)
	}
	if err := must2(t, c.Do("GET", "/v0/events?subject=formsub_1&type="+events.TypeFormEnrichmentFailed, nil), 200).JSON(&page); err != nil ||
		len(page.Items) != 1 || page.Items[0].EventID != evts[1].ID {
		t.Fatalf("by subject and type: %+v %v", page, err)
	}
	if err := must2(t, c.Do("GET", "/v0/events?type=form.submitted", nil), 200).JSON(&page); err != nil || len(page.Items) != 0 {
		t.Fatalf("another type: %+v %v", page, err)
	}
	if got := must2(t, c.Do("GET", "/v0/events/"+evts[1].ID, nil), 200).Map()["subject"]; got != "formsub_1" {
		t.Fatalf("one event: subject %v", got)
	}
	if r := other.Do("GET", "/v0/events/"+evts[1].ID, nil); r.Status != 404 {
		t.Fatalf("another tenant's event: want 404, got %s", r)
	}
	types := decode[apitypes.EventTypeList](t, c.Do("GET", "/v0/event_types", nil), 200).Items
	if len(types) != len(events.PublicTypes) {
		t.Fatalf("event types: %d, want %d", len(types), len(events.PublicTypes))
	}
	for _, it := range types {
		if it.PayloadSchema["type"] != "object" || it.SchemaName == "" {
			t.Errorf("event type %v has no payload schema: %+v", it.Type, it)
		}
	}
}

// A receiver that got none of a tenant's events (its subscription listed other types
// while they happened) catches up with a replay: every event, each exactly once by
// eventId, the original IDs; a second replay at once is a 429.
func TestReplayCatchesUp(t *testing.T) {
	tenant, c := whTenant(t)
	rc := newWhReceiver(t, func(int) int { return 200 })
	subID, _ := whSubscribe(t, c, map[string]any{"url": rc.URL, "events": []string{events.TypeFormEnriched}})
	start := time.Now().Add(-time.Second)
	var evts []events.Envelope
	want := map[string]bool{}
	for i := range 5 {
		e := whEvent(t, tenant, events.TypeFormEnrichmentFailed, fmt.Sprintf("formsub_%d", i),
			`"formSubmissionId":"formsub_1","audienceSessionId":"s_1","pageId":"page_1","reason":"no_identifier","detail":"none"`)
		evts, want[e.ID] = append(evts, e), true
	}
	whPublish(t, evts...)
	testwait.Eventually(t, 30*time.Second, "the five events kept", func() bool {
		var page struct{ Items []any }
		return must2(t, c.Do("GET", "/v0/events", nil), 200).JSON(&page) == nil && len(page.Items) == 5
	})
	if n := len(rc.all()); n != 0 {
		t.Fatalf("the subscription listed other types, yet got %d deliveries", n)
	}
	must2(t, c.Do("PATCH", "/v0/webhook_subscriptions/"+subID, map[string]any{"events": nil}), 200)
	r := c.Do("POST", "/v0/webhook_subscriptions/"+subID+"/replay", map[string]any{
		"since": start.UTC().Format("2006-01-02T15:04:05.000Z"), "until": time.Now().Add(time.Minute).UTC().Format("2006-01-02T15:04:05.000Z")})
	if m := r.Map(); r.Status != 202 || m["queued"] != 5.0 || m["alreadyPending"] != 0.0 || m["hasMore"] != false {
		t.Fatalf("replay: want 202 with 5 queued, got %s", r)
	}
	testwait.Eventually(t, 30*time.Second, "the five events delivered", func() bool { return len(rc.all()) >= 5 })
	time.Sleep(time.Second) // nothing more may come
	got := map[string]int{}
	for _, d := range rc.all() {
		got[d.parsed.EventID]++
	}
	for id := range want {
		if got[id] != 1 {
			t.Errorf("event %s delivered %d times by the replay, want once", id, got[id])
		}
	}
	if len(got) != len(want) {
		t.Errorf("the replay delivered %v, want exactly %v", got, want)
	}
	if r := c.Do("POST", "/v0/webhook_subscriptions/"+subID+"/replay", map[string]any{
		"since": start.UTC().Format("2006-01-02T15:04:05.000Z"), "until": time.Now().UTC().Format("2006-01-02T15:04:05.000Z")}); r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("a second replay at once: want 429 with Retry-After, got %s", r)
	}
}
