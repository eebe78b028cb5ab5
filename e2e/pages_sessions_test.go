package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/testwait"
)

// newPageWithAudience creates a page and a draft audience through the gateway.
func newPageWithAudience(t *testing.T, c *apitest.Client) (pageID, audienceID string) {
	t.Helper()
	pageID = must(t, c.Do("POST", "/v0/pages", map[string]any{"name": "Spring", "title": "Spring offer", "pageType": "inbound"}), 201)["pageId"].(string)
	audienceID = must(t, c.Do("POST", "/v0/pages/"+pageID+"/audiences", map[string]any{
		"customName": "Returning buyers", "publishBehavior": "draft"}), 201)["audienceId"].(string)
	return pageID, audienceID
}

// A visit with a form submission is recorded, its metrics computed, it is listed under
// its audience, and form.submitted reaches Kafka keyed by the audience.
func TestPageSessionWithFormSubmission(t *testing.T) {
	c := api(t, newKey(t, nil))
	pageID, audienceID := newPageWithAudience(t, c)
	sessions := "/v0/pages/" + pageID + "/audience_sessions"
	started := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	body := map[string]any{
		"analyticsSessionId": "e2e-visit-1", "audienceId": audienceID, "pageUrl": "https://acme.example/spring",
		"sessionStartedAt": started.Format(time.RFC3339Nano), "sessionEndedAt": started.Add(42 * time.Second).Format(time.RFC3339Nano),
		"totalClicksCount": 2, "utmSource": "e2e",
		"formSubmission": map[string]any{"email": "Visitor@Example.com", "name": "Vi Sitor", "fields": map[string]any{"plan": "pro"}},
	}
	created := must(t, c.Do("POST", sessions, body), 201)
	id := created["audienceSessionId"].(string)
	if created["hasFormSubmit"] != true || created["formSubmissionIdentifier"] != "visitor@example.com" ||
		created["formSubmissionIdentifierType"] != "email" {
		t.Fatalf("created = %v", created)
	}
	// A retry of the same request is answered with the same session.
	if again := must(t, c.Do("POST", sessions, body), 200); again["audienceSessionId"] != id {
		t.Fatalf("replay = %v", again)
	}

	var got map[string]any
	testwait.For(t, 20*time.Second, "the session's computation to complete", func() (bool, string) {
		got = must(t, c.Do("GET", sessions+"/"+id, nil), 200)
		return got["computationStatus"] == "completed", fmt.Sprintf("computationStatus %v", got["computationStatus"])
	})
	if got["timeSpentSeconds"] != 42.0 || got["isBounce"] != false || got["hasConversion"] != true {
		t.Fatalf("computed = %v", got)
	}

	q := "?audienceId=" + audienceID + "&startDate=" + url.QueryEscape(started.Add(-time.Second).Format(time.RFC3339)) +
		"&endDate=" + url.QueryEscape(started.Format(time.RFC3339Nano))
	list := decode[apitypes.SessionPage](t, c.Do("GET", sessions+q, nil), 200)
	if list.TotalCount != 1 || len(list.Items) != 1 || list.Items[0].AudienceSessionId != id {
		t.Fatalf("list = %+v", list)
	}
	if empty := must(t, c.Do("GET", sessions+"?startDate="+url.QueryEscape(started.Add(time.Second).Format(time.RFC3339)), nil), 200); empty["totalCount"] != 0.0 {
		t.Fatalf("after the start = %v", empty)
	}
	// Another tenant sees nothing of it.
	must(t, api(t, newKey(t, nil)).Do("GET", sessions+"/"+id, nil), 404)

	if sys.stack == nil {
		return // the broker is only reachable on the local stack
	}
	e := readPagesEvent(t, sys.stack.Brokers(), audienceID, events.TypeFormSubmitted)
	var p map[string]any
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p["audienceSessionId"] != id || p["identifier"] != "visitor@example.com" || p["identifierType"] != "email" ||
		p["formSubmissionId"] != created["formSubmissionId"] || p["pageId"] != pageID {
		t.Fatalf("form.submitted = %s", e.Payload)
	}
}

// A page link is created, found by search (by path and by target), unique per domain,
// and gone from search once deleted.
func TestPageLinkFoundBySearch(t *testing.T) {
	c := api(t, newKey(t, nil))
	pageID, audienceID := newPageWithAudience(t, c)
	link := must(t, c.Do("POST", "/v0/page_links", map[string]any{"path": "/Spring/Returning",
		"target": map[string]any{"targetType": "audience", "audienceId": audienceID}}), 201)
	id := link["pageLinkId"].(string)
	home := must(t, c.Do("POST", "/v0/page_links", map[string]any{"path": "/",
		"target": map[string]any{"targetType": "page", "pageId": pageID}}), 201)["pageLinkId"].(string)
	must(t, c.Do("POST", "/v0/page_links", map[string]any{"path": "/spring/returning/",
		"target": map[string]any{"targetType": "page", "pageId": pageID}}), 409)

	ids := func(path string) []string {
		var out []string
		for _, it := range decode[apitypes.PageLinkPage](t, c.Do("GET", path, nil), 200).Items {
			out = append(out, it.PageLinkId)
		}
		return out
	}
	for q, want := range map[string][]string{
		"?query=returning":                 {id},
		"?query=" + audienceID:             {id},
		"?pageId=" + pageID:                {home, id},
		"?targetType=page":                 {home},
		"?query=returning&targetType=page": nil,
		"?tenantDomainId=custom":           nil,
	} {
		if got := ids("/v0/page_links/search" + q); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("search %s = %v, want %v", q, got, want)
		}
	}
	if got := must(t, c.Do("GET", "/v0/page_links/"+id, nil), 200); got["path"] != "/Spring/Returning" {
		t.Fatalf("get = %v", got)
	}
	must(t, c.Do("DELETE", "/v0/page_links/"+id, nil), 204)
	if got := ids("/v0/page_links/search?query=returning"); len(got) != 0 {
		t.Fatalf("deleted link found: %v", got)
	}
	if got := must(t, c.Do("GET", "/v0/page_links/"+id, nil), 200); got["deletedAt"] == nil {
		t.Fatalf("deleted = %v", got)
	}
}

func TestPageSessionsAndLinksValidation(t *testing.T) {
	c := api(t, newKey(t, nil))
	pageID, _ := newPageWithAudience(t, c)
	for name, tc := range map[string]struct {
		method, path string
		body         any
	}{
		"session malformed":     {"POST", "/v0/pages/" + pageID + "/audience_sessions", rawBody(`{"analyticsSessionId":`)},
		"session missing start": {"POST", "/v0/pages/" + pageID + "/audience_sessions", map[string]any{"analyticsSessionId": "a"}},
		"session bad form": {"POST", "/v0/pages/" + pageID + "/audience_sessions", map[string]any{"analyticsSessionId": "a",
			"sessionStartedAt": "2026-11-20T10:00:00Z", "formSubmission": map[string]any{"name": "no identifier"}}},
		"sessions bad date": {"GET", "/v0/pages/" + pageID + "/audience_sessions?startDate=soon", nil},
		"sessions limit":    {"GET", "/v0/pages/" + pageID + "/audience_sessions?limit=0", nil},
		"link bad path":     {"POST", "/v0/page_links", map[string]any{"path": "no-slash", "target": map[string]any{"targetType": "page", "pageId": pageID}}},
		"link bad target":   {"POST", "/v0/page_links", map[string]any{"path": "/a", "target": map[string]any{"targetType": "site"}}},
		"search bad type":   {"GET", "/v0/page_links/search?targetType=site", nil},
		"search bad cursor": {"GET", "/v0/page_links/search?cursor=forged", nil},
	} {
		r := c.Do(tc.method, tc.path, tc.body)
		if r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" {
			t.Errorf("%s: %s", name, r)
		}
	}
}

// readPagesEvent returns the first pages.events event of a subject and type.
func readPagesEvent(t *testing.T, brokers []string, subject, typ string) events.Envelope {
	return kafkatest.ReadEvents(t, brokers, events.TopicPages, 1, func(e events.Envelope) bool {
		return e.Subject == subject && e.Type == typ
	})[0]
}
