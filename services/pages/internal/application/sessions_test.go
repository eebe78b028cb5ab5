package application_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/domain/session"
)

func TestSessionRecordWithFormSubmission(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID, audiences := seedPage(t, s.Runtime.Pool, "acme", 1)
	start := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	body := map[string]any{
		"analyticsSessionId": "ga-123", "audienceId": audiences[0], "pageTitle": "Welcome", "pageUrl": "https://acme.example/p",
		"sessionStartedAt": timestamp.Format(start), "sessionEndedAt": timestamp.Format(start.Add(95500 * time.Millisecond)),
		"maxScrollDepthPercentage": 62.5, "questionsAskedCount": 2, "totalClicksCount": 3,
		"utmSource": "newsletter", "utmMedium": "email",
		"formSubmission": map[string]any{"email": "Ann@Example.com", "phone": "+1 (555) 010-9999", "name": "Ann",
			"fields": map[string]any{"company": "Acme"}},
	}
	created := mustStatus(t, c.Do("POST", "/v0/pages/"+pageID+"/audience_sessions", body), 201)
	id := created["audienceSessionId"].(string)
	if !strings.HasPrefix(id, "session_") || created["hasFormSubmit"] != true || created["formSubmissionEmail"] != "Ann@Example.com" ||
		created["formSubmissionIdentifier"] != "ann@example.com" || created["formSubmissionIdentifierType"] != "email" ||
		created["formSubmissionPhone"] != "+1 (555) 010-9999" || !strings.HasPrefix(created["formSubmissionId"].(string), "formsub_") ||
		created["pageId"] != pageID || created["audienceId"] != audiences[0] || created["utmSource"] != "newsletter" ||
		created["utmTerm"] != nil || created["sessionStartedAt"] != "2026-11-20T10:00:00.000Z" ||
		created["hasConversion"] != true || created["computationStatus"] != "pending" && created["computationStatus"] != "completed" {
		t.Fatalf("created = %v", created)
	}

	// The worker completes the derived metrics.
	var got map[string]any
	testwait.Eventually(t, 10*time.Second, "computation", func() bool {
		got = mustStatus(t, c.Do("GET", "/v0/pages/"+pageID+"/audience_sessions/"+id, nil), 200)
		return got["computationStatus"] == "completed"
	})
	if got["timeSpentSeconds"] != 95.5 || got["isBounce"] != false || got["hasConversion"] != true {
		t.Fatalf("computed = %v", got)
	}

	// A replay of the same body returns the same session (200); another body is a conflict.
	again := mustStatus(t, c.Do("POST", "/v0/pages/"+pageID+"/audience_sessions", body), 200)
	if again["audienceSessionId"] != id || again["formSubmissionId"] != created["formSubmissionId"] {
		t.Fatalf("replay = %v", again)
	}
	body["totalClicksCount"] = 4
	mustStatus(t, c.Do("POST", "/v0/pages/"+pageID+"/audience_sessions", body), 409)

	// Exactly one form.submitted, keyed by the audience, shaped as the contract says.
	evts := readPagesEvents(t, s.Broker.Config().Brokers, audiences[0], 1)
	e := evts[0]
	if e.Type != events.TypeFormSubmitted || e.TenantID != "acme" {
		t.Fatalf("event = %+v", e)
	}
	checkEventPayload(t, e.Type, e.Payload)
	dec := json.NewDecoder(strings.NewReader(string(e.Payload)))
	dec.DisallowUnknownFields()
	var p apitypes.FormSubmittedEventPayload
	if err := dec.Decode(&p); err != nil || p.Type != "form.submitted" || p.AudienceSessionId != id ||
		created["formSubmissionId"] != p.FormSubmissionId || p.Identifier != "ann@example.com" || p.IdentifierType != "email" ||
		p.PageId != pageID || p.Fields == nil || (*p.Fields)["company"] != "Acme" || p.LinkedinProfileUrl != nil {
		t.Fatalf("payload = %s (%v)", e.Payload, err)
	}
	if !strings.HasPrefix(string(e.Payload), `{"type":"form.submitted"`) {
		t.Fatalf("payload must start with type: %s", e.Payload)
	}
}

func TestSessionIdentifierChoice(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID, _ := seedPage(t, s.Runtime.Pool, "acme", 0)
	for i, tc := range []struct {
		form      map[string]any
		ident, ty string
	}{
		{map[string]any{"phone": "+44 20 7946 0958", "linkedinProfileUrl": "https://linkedin.com/in/Ann-Lee/"},
			"https://www.linkedin.com/in/ann-lee", "linkedin"},
		{map[string]any{"phone": "+44 20 7946 0958"}, "+442079460958", "tel"},
		{map[string]any{"email": "x@y.io", "phone": "5550109999"}, "x@y.io", "email"},
	} {
		m := mustStatus(t, c.Do("POST", "/v0/pages/"+pageID+"/audience_sessions", map[string]any{
			"analyticsSessionId": fmt.Sprint("a", i), "sessionStartedAt": "2026-11-20T10:00:00Z", "formSubmission": tc.form}), 201)
		if m["formSubmissionIdentifier"] != tc.ident || m["formSubmissionIdentifierType"] != tc.ty || m["audienceId"] != nil {
			t.Errorf("%v: %v", tc.form, m)
		}
	}
	// Without a form submission there is no event and no form fields.
	m := mustStatus(t, c.Do("POST", "/v0/pages/"+pageID+"/audience_sessions", map[string]any{
		"analyticsSessionId": "plain", "sessionStartedAt": "2026-11-20T10:00:00Z"}), 201)
	if m["hasFormSubmit"] != false || m["formSubmissionId"] != nil || m["formSubmissionIdentifierType"] != nil {
		t.Fatalf("plain = %v", m)
	}
	// Sessions without an audience are keyed by the page: three form.submitted events.
	if got := readPagesEvents(t, s.Broker.Config().Brokers, pageID, 3); got[2].Type != events.TypeFormSubmitted {
		t.Fatalf("events = %v", got)
	}
}

func TestSessionComputationOutcomes(t *testing.T) {
	s := start(t, servicetest.Options{Env: map[string]string{"SESSION_MAX_DURATION": "1h", "SESSION_BOUNCE_THRESHOLD": "10s"}})
	c := client(t, s, "acme")
	pageID, _ := seedPage(t, s.Runtime.Pool, "acme", 0)
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		body       map[string]any
		status     string
		bounce     bool
		timeSpent  any
		conversion bool
	}{
		"quick exit":        {map[string]any{"sessionEndedAt": timestamp.Format(at.Add(3 * time.Second))}, "completed", true, 3.0, false},
		"no end reported":   {map[string]any{}, "completed", true, nil, false},
		"long but idle":     {map[string]any{"sessionEndedAt": timestamp.Format(at.Add(time.Minute))}, "completed", false, 60.0, false},
		"quick click":       {map[string]any{"sessionEndedAt": timestamp.Format(at.Add(2 * time.Second)), "totalClicksCount": 1}, "completed", false, 2.0, false},
		"client conversion": {map[string]any{"hasConversion": true}, "completed", false, nil, true},
		"implausibly long":  {map[string]any{"sessionEndedAt": timestamp.Format(at.Add(2 * time.Hour))}, "failed", false, nil, false},
	}
	ids := map[string]string{}
	for name, tc := range cases {
		tc.body["analyticsSessionId"] = name
		tc.body["sessionStartedAt"] = timestamp.Format(at)
		ids[name] = mustStatus(t, c.Do("POST", "/v0/pages/"+pageID+"/audience_sessions", tc.body), 201)["audienceSessionId"].(string)
	}
	for name, tc := range cases {
		var got map[string]any
		testwait.Eventually(t, 10*time.Second, name, func() bool {
			got = mustStatus(t, c.Do("GET", "/v0/pages/"+pageID+"/audience_sessions/"+ids[name], nil), 200)
			return got["computationStatus"] != "pending"
		})
		if got["computationStatus"] != tc.status || got["isBounce"] != tc.bounce || got["timeSpentSeconds"] != tc.timeSpent ||
			got["hasConversion"] != tc.conversion {
			t.Errorf("%s: %v", name, got)
		}
	}
}

func TestSessionListFiltersAndPagination(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID, audiences := seedPage(t, s.Runtime.Pool, "acme", 2)
	otherPage, _ := seedPage(t, s.Runtime.Pool, "acme", 0)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var all []string // newest first
	for i := 0; i < 7; i++ {
		m := mustStatus(t, c.Do("POST", "/v0/pages/"+pageID+"/audience_sessions", map[string]any{
			"analyticsSessionId": fmt.Sprint("s", i), "audienceId": audiences[i%2],
			// Two sessions share each start time: the ID breaks the tie.
			"sessionStartedAt": timestamp.Format(base.Add(time.Duration(i/2) * 24 * time.Hour))}), 201)
		all = append([]string{m["audienceSessionId"].(string)}, all...)
	}
	mustStatus(t, c.Do("POST", "/v0/pages/"+otherPage+"/audience_sessions", map[string]any{
		"analyticsSessionId": "elsewhere", "sessionStartedAt": timestamp.Format(base)}), 201)

	walk := func(query string) ([]string, int) {
		var seen []string
		path := "/v0/pages/" + pageID + "/audience_sessions?limit=2" + query
		for {
			page := apitest.Decode[apitypes.SessionPage](t, c.Do("GET", path, nil), 200, "a walk's page answers")
			for _, it := range page.Items {
				seen = append(seen, it.AudienceSessionId)
			}
			if page.NextCursor == nil {
				return seen, page.TotalCount
			}
			path = "/v0/pages/" + pageID + "/audience_sessions?limit=2" + query + "&cursor=" + url.QueryEscape(*page.NextCursor)
		}
	}
	// Newest start first; ties on sessionStartedAt: the later ID first (IDs are creation-ordered).
	want := all
	if seen, total := walk(""); fmt.Sprint(seen) != fmt.Sprint(want) || total != 7 {
		t.Fatalf("walk = %v (%v), want %v", seen, total, want)
	}
	// Days 1..2 inclusive: sessions 2..5 (an offset is converted to UTC).
	q := "&startDate=" + url.QueryEscape("2026-11-02T01:00:00+01:00") + "&endDate=" + url.QueryEscape("2026-11-03T00:00:00.000Z")
	if seen, total := walk(q); len(seen) != 4 || total != 4 || seen[0] != all[1] || seen[3] != all[4] {
		t.Fatalf("date range = %v (%v)", seen, total)
	}
	if seen, total := walk("&audienceId=" + audiences[1]); len(seen) != 3 || total != 3 {
		t.Fatalf("audience filter = %v (%v)", seen, total)
	}
	if seen, _ := walk("&audienceId=" + audiences[1] + "&startDate=" + url.QueryEscape("2026-11-03T00:00:00Z")); len(seen) != 1 {
		t.Fatalf("audience and date = %v", seen)
	}
	if seen, total := walk("&audienceId=audience_unknown"); len(seen) != 0 || total != 0 {
		t.Fatalf("unknown audience = %v", seen)
	}

	// A cursor works only for its own filter set and tenant.
	cur := mustStatus(t, c.Do("GET", "/v0/pages/"+pageID+"/audience_sessions?limit=1", nil), 200)["nextCursor"].(string)
	for name, path := range map[string]string{
		"other filter": "/v0/pages/" + pageID + "/audience_sessions?audienceId=" + audiences[0] + "&cursor=" + url.QueryEscape(cur),
		"other page":   "/v0/pages/" + otherPage + "/audience_sessions?cursor=" + url.QueryEscape(cur),
	} {
		if r := c.Do("GET", path, nil); r.Status != 400 {
			t.Errorf("%s: %s", name, r)
		}
	}
	if r := client(t, s, "globex").Do("GET", "/v0/pages/"+pageID+"/audience_sessions", nil); r.Status != 404 {
		t.Fatalf("other tenant: %s", r)
	}
}

func TestSessionNotFound(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID, audiences := seedPage(t, s.Runtime.Pool, "acme", 1)
	otherPage, otherAudiences := seedPage(t, s.Runtime.Pool, "acme", 1)
	id := mustStatus(t, c.Do("POST", "/v0/pages/"+pageID+"/audience_sessions", map[string]any{
		"analyticsSessionId": "x", "sessionStartedAt": "2026-11-20T10:00:00Z"}), 201)["audienceSessionId"].(string)
	valid := map[string]any{"analyticsSessionId": "y", "sessionStartedAt": "2026-11-20T10:00:00Z"}
	for name, tc := range map[string]struct {
		c            *apitest.Client
		method, path string
		body         any
	}{
		"unknown page":             {c, "GET", "/v0/pages/page_nope/audience_sessions", nil},
		"record on unknown page":   {c, "POST", "/v0/pages/page_nope/audience_sessions", valid},
		"session under other page": {c, "GET", "/v0/pages/" + otherPage + "/audience_sessions/" + id, nil},
		"unknown session":          {c, "GET", "/v0/pages/" + pageID + "/audience_sessions/session_nope", nil},
		"other tenant":             {client(t, s, "globex"), "GET", "/v0/pages/" + pageID + "/audience_sessions/" + id, nil},
		"audience of another page": {c, "POST", "/v0/pages/" + pageID + "/audience_sessions", map[string]any{
			"analyticsSessionId": "z", "sessionStartedAt": "2026-11-20T10:00:00Z", "audienceId": otherAudiences[0]}},
	} {
		if r := tc.c.Do(tc.method, tc.path, tc.body); r.Status != 404 || r.Map()["code"] != "NOT_FOUND" {
			t.Errorf("%s: %s", name, r)
		}
	}
	_ = audiences
	// NUL in a path parameter is simply not found (never a 500).
	for _, path := range []string{"/v0/pages/%00/audience_sessions", "/v0/pages/" + pageID + "/audience_sessions/%00"} {
		if r := c.Do("GET", path, nil); r.Status != 404 {
			t.Errorf("%s: %s", path, r)
		}
	}
	deletePage(t, s.Runtime.Pool, "acme", pageID)
	for _, path := range []string{"/v0/pages/" + pageID + "/audience_sessions", "/v0/pages/" + pageID + "/audience_sessions/" + id} {
		if r := c.Do("GET", path, nil); r.Status != 404 {
			t.Errorf("deleted page %s: %s", path, r)
		}
	}
}

func TestSessionBadInput(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID, _ := seedPage(t, s.Runtime.Pool, "acme", 0)
	ok := func(extra map[string]any) map[string]any {
		b := map[string]any{"analyticsSessionId": "a", "sessionStartedAt": "2026-11-20T10:00:00Z"}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	sessions := "/v0/pages/" + pageID + "/audience_sessions"
	form := func(f map[string]any) map[string]any { return ok(map[string]any{"formSubmission": f}) }
	// Each case names the issues it must get, as field:code:path.
	for name, tc := range map[string]struct {
		method, path string
		body         any
		want         string
	}{
		"malformed JSON":         {"POST", sessions, apitest.Raw(`{"analyticsSessionId":`), "body:invalid_json:[]"},
		"not an object":          {"POST", sessions, apitest.Raw(`[1]`), "body:invalid_type:[]"},
		"empty body":             {"POST", sessions, nil, "body:invalid_type:[]"},
		"only white space":       {"POST", sessions, apitest.Raw(" \n"), "body:invalid_json:[]"},
		"missing start":          {"POST", sessions, map[string]any{"analyticsSessionId": "a"}, "body:invalid_type:[sessionStartedAt]"},
		"missing analytics ID":   {"POST", sessions, map[string]any{"sessionStartedAt": "2026-11-20T10:00:00Z"}, "body:invalid_type:[analyticsSessionId]"},
		"empty analytics ID":     {"POST", sessions, ok(map[string]any{"analyticsSessionId": ""}), "body:too_small:[analyticsSessionId]"},
		"long analytics ID":      {"POST", sessions, ok(map[string]any{"analyticsSessionId": strings.Repeat("a", 256)}), "body:too_big:[analyticsSessionId]"},
		"unknown field":          {"POST", sessions, ok(map[string]any{"isBounce": true}), "body:unrecognized_keys:[isBounce]"},
		"start not a date":       {"POST", sessions, ok(map[string]any{"sessionStartedAt": "yesterday"}), "body:invalid_string:[sessionStartedAt]"},
		"start a bare date":      {"POST", sessions, ok(map[string]any{"sessionStartedAt": "2026-11-20"}), "body:invalid_string:[sessionStartedAt]"},
		"start a number":         {"POST", sessions, ok(map[string]any{"sessionStartedAt": 1700000000}), "body:invalid_type:[sessionStartedAt]"},
		"end before start":       {"POST", sessions, ok(map[string]any{"sessionEndedAt": "2026-11-20T09:00:00Z"}), "body:custom:[sessionEndedAt]"},
		"negative clicks":        {"POST", sessions, ok(map[string]any{"totalClicksCount": -1}), "body:too_small:[totalClicksCount]"},
		"fractional questions":   {"POST", sessions, ok(map[string]any{"questionsAskedCount": 1.5}), "body:invalid_type:[questionsAskedCount]"},
		"huge clicks":            {"POST", sessions, ok(map[string]any{"totalClicksCount": 1e300}), "body:too_big:[totalClicksCount]"},
		"scroll over 100":        {"POST", sessions, ok(map[string]any{"maxScrollDepthPercentage": 101}), "body:too_big:[maxScrollDepthPercentage]"},
		"scroll a string":        {"POST", sessions, ok(map[string]any{"maxScrollDepthPercentage": "50"}), "body:invalid_type:[maxScrollDepthPercentage]"},
		"conversion a string":    {"POST", sessions, ok(map[string]any{"hasConversion": "yes"}), "body:invalid_type:[hasConversion]"},
		"page URL not http":      {"POST", sessions, ok(map[string]any{"pageUrl": "ftp://x/y"}), "body:invalid_string:[pageUrl]"},
		"page URL without host":  {"POST", sessions, ok(map[string]any{"pageUrl": "https:///path"}), "body:invalid_string:[pageUrl]"},
		"page URL spaced host":   {"POST", sessions, ok(map[string]any{"pageUrl": "https://x .example/a"}), "body:invalid_string:[pageUrl]"},
		"page URL control char":  {"POST", sessions, ok(map[string]any{"pageUrl": "https://x.example/a\x01"}), "body:invalid_string:[pageUrl]"},
		"empty audience":         {"POST", sessions, ok(map[string]any{"audienceId": ""}), "body:too_small:[audienceId]"},
		"long utm":               {"POST", sessions, ok(map[string]any{"utmSource": strings.Repeat("u", 501)}), "body:too_big:[utmSource]"},
		"form without identity":  {"POST", sessions, form(map[string]any{"name": "Ann"}), "body:custom:[formSubmission]"},
		"form empty":             {"POST", sessions, form(map[string]any{}), "body:custom:[formSubmission]"},
		"form null identifiers":  {"POST", sessions, form(map[string]any{"email": nil, "phone": nil}), "body:custom:[formSubmission]"},
		"form null":              {"POST", sessions, ok(map[string]any{"formSubmission": nil}), "body:invalid_type:[formSubmission]"},
		"form bad email":         {"POST", sessions, form(map[string]any{"email": "not-an-email"}), "body:invalid_string:[formSubmission email]"},
		"form email one label":   {"POST", sessions, form(map[string]any{"email": "ann@localhost"}), "body:invalid_string:[formSubmission email]"},
		"form bad phone":         {"POST", sessions, form(map[string]any{"phone": "call me"}), "body:invalid_string:[formSubmission phone]"},
		"form short phone":       {"POST", sessions, form(map[string]any{"phone": "123"}), "body:invalid_string:[formSubmission phone]"},
		"form long phone":        {"POST", sessions, form(map[string]any{"phone": "1234567890123456"}), "body:invalid_string:[formSubmission phone]"},
		"form inner plus":        {"POST", sessions, form(map[string]any{"phone": "+1+2345678"}), "body:invalid_string:[formSubmission phone]"},
		"form bad LinkedIn":      {"POST", sessions, form(map[string]any{"linkedinProfileUrl": "https://example.com/in/x"}), "body:invalid_string:[formSubmission linkedinProfileUrl]"},
		"form unknown key":       {"POST", sessions, form(map[string]any{"email": "a@b.co", "age": 3}), "body:unrecognized_keys:[formSubmission age]"},
		"form fields not object": {"POST", sessions, form(map[string]any{"email": "a@b.co", "fields": []int{1}}), "body:invalid_type:[formSubmission fields]"},
		"limit zero":             {"GET", sessions + "?limit=0", nil, "query:too_small:[limit]"},
		"limit 101":              {"GET", sessions + "?limit=101", nil, "query:too_big:[limit]"},
		"limit abc":              {"GET", sessions + "?limit=abc", nil, "query:invalid_type:[limit]"},
		"garbage cursor":         {"GET", sessions + "?cursor=abc", nil, "query:invalid_cursor:[cursor]"},
		"startDate not a date":   {"GET", sessions + "?startDate=monday", nil, "query:invalid_string:[startDate]"},
		"startDate a bare date":  {"GET", sessions + "?startDate=2026-11-20", nil, "query:invalid_string:[startDate]"},
		"endDate not a date":     {"GET", sessions + "?endDate=2026-13-45T00:00:00Z", nil, "query:invalid_string:[endDate]"},
		"end before start date": {"GET", sessions + "?startDate=" + url.QueryEscape("2026-11-20T00:00:00Z") + "&endDate=" +
			url.QueryEscape("2026-11-01T00:00:00Z"), nil, "query:custom:[endDate]"},
		"long audienceId":      {"GET", sessions + "?audienceId=" + strings.Repeat("a", 256), nil, "query:too_big:[audienceId]"},
		"repeated audienceId":  {"GET", sessions + "?audienceId=a&audienceId=b", nil, "query:invalid_type:[audienceId]"},
		"NUL in a body string": {"POST", sessions, ok(map[string]any{"analyticsSessionId": "a\x00b"}), "body:invalid_string:[analyticsSessionId]"},
		"NUL in form fields": {"POST", sessions, form(map[string]any{"email": "a@b.co", "fields": map[string]any{"k": "\x00"}}),
			"body:invalid_string:[formSubmission fields k]"},
		"NUL in audienceId":   {"GET", sessions + "?audienceId=%00", nil, "query:invalid_string:[audienceId]"},
		"start before 1970":   {"POST", sessions, ok(map[string]any{"sessionStartedAt": "0000-01-01T00:00:00Z"}), "body:invalid_date:[sessionStartedAt]"},
		"start in year 10000": {"POST", sessions, ok(map[string]any{"sessionStartedAt": "9999-12-31T23:59:59-23:59"}), "body:invalid_date:[sessionStartedAt]"},
		"end in year 10000": {"POST", sessions, ok(map[string]any{"sessionEndedAt": "9999-12-31T23:00:00-02:00"}),
			"body:invalid_date:[sessionEndedAt]"},
		"form fields too deep": {"POST", sessions, form(map[string]any{"email": "a@b.co", "fields": nested(session.MaxFieldsDepth + 1)}),
			"body:too_big:[formSubmission fields]"},
		"form fields too large": {"POST", sessions, form(map[string]any{"email": "a@b.co", "fields": fieldsOfSize(session.MaxFieldsBytes + 1)}),
			"body:too_big:[formSubmission fields]"},
		"form fields too many keys": {"POST", sessions, form(map[string]any{"email": "a@b.co", "fields": manyKeys(101)}),
			"body:too_big:[formSubmission fields]"},
	} {
		r := c.Do(tc.method, tc.path, tc.body)
		if r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" || fmt.Sprint(apitest.IssueCodes(r)) != "["+tc.want+"]" {
			t.Errorf("%s: %v, want [%s]: %s", name, apitest.IssueCodes(r), tc.want, r)
		}
	}
	// A URL with a host is a page URL, whatever its path holds (as before the document
	// stated the rule); user info may hold an @.
	for i, u := range []string{"HTTPS://go.example/a b?q=1 2#f", "http://user@name@go.example:8080/x", "https://[::1]"} {
		mustStatus(t, c.Do("POST", sessions, ok(map[string]any{"analyticsSessionId": fmt.Sprint("url-", i), "pageUrl": u})), 201)
	}
	// Phone numbers of 7 to 15 digits with the allowed punctuation are recorded.
	for i, phone := range []string{"+1 (555) 010-9999", "5550109", "020.7946.0958", "+123456789012345"} {
		mustStatus(t, c.Do("POST", sessions, ok(map[string]any{"analyticsSessionId": fmt.Sprint("phone-", i),
			"formSubmission": map[string]any{"phone": phone}})), 201)
	}
	// The edges of the accepted ranges are recorded.
	mustStatus(t, c.Do("POST", sessions, ok(map[string]any{"analyticsSessionId": "edge-late",
		"sessionStartedAt": "9999-12-31T23:59:59Z", "sessionEndedAt": "9999-12-31T23:59:59Z"})), 201)
	mustStatus(t, c.Do("POST", sessions, ok(map[string]any{"analyticsSessionId": "edge-early", "sessionStartedAt": "1970-01-01T00:00:00Z",
		"formSubmission": map[string]any{"email": "a@b.co", "fields": nested(session.MaxFieldsDepth)}})), 201)
	mustStatus(t, c.Do("POST", sessions, ok(map[string]any{"analyticsSessionId": "edge-large",
		"formSubmission": map[string]any{"email": "a@b.co", "fields": fieldsOfSize(session.MaxFieldsBytes)}})), 201)
}

// fieldsOfSize returns form fields whose compact JSON is n bytes (n ≥ 8).
func fieldsOfSize(n int) map[string]any {
	return map[string]any{"k": strings.Repeat("a", n-len(`{"k":""}`))}
}

// manyKeys returns form fields with n keys.
func manyKeys(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprint("k", i)] = i
	}
	return m
}

// nested returns a JSON object nested n levels deep (arrays and objects alternating).
func nested(n int) any {
	var v any = "leaf"
	for i := 1; i < n; i++ {
		if i%2 == 1 {
			v = []any{v}
		} else {
			v = map[string]any{"k": v}
		}
	}
	return map[string]any{"k": v}
}

// readPagesEvents collects pages.events of one subject until n arrived.
func readPagesEvents(t *testing.T, brokers []string, subject string, n int) []events.Envelope {
	return kafkatest.ReadEvents(t, brokers, events.TopicPages, n, kafkatest.OfSubject(subject))
}

// Concurrent identical recordings (a client retrying while its first request is still
// running) store one session and emit one form.submitted; the others are replays.
func TestSessionConcurrentReplays(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID, audiences := seedPage(t, s.Runtime.Pool, "acme", 1)
	body := map[string]any{"analyticsSessionId": "retried", "audienceId": audiences[0], "sessionStartedAt": "2026-11-20T10:00:00Z",
		"formSubmission": map[string]any{"email": "r@example.com"}}
	var wg sync.WaitGroup
	got := make([]*apitest.Response, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = c.Do("POST", "/v0/pages/"+pageID+"/audience_sessions", body)
		}()
	}
	wg.Wait()
	created, ids := 0, map[any]bool{}
	for _, r := range got {
		switch r.Status {
		case 201:
			created++
		case 200:
		default:
			t.Fatalf("status %s", r)
		}
		ids[r.Map()["audienceSessionId"]] = true
	}
	if created != 1 || len(ids) != 1 {
		t.Fatalf("%d created, %d distinct sessions", created, len(ids))
	}
	if n := countPagesEvents(t, s.Broker.Config().Brokers, audiences[0], 2*time.Second); n != 1 {
		t.Fatalf("%d form.submitted events, want 1", n)
	}
}

// countPagesEvents counts the pages.events of a subject: it waits up to 30 s for the
// first, then counts what else arrives within linger.
func countPagesEvents(t *testing.T, brokers []string, subject string, linger time.Duration) int {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: fmt.Sprint("test-", time.Now().UnixNano()),
		Topic: events.TopicPages, StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	deadline := time.Now().Add(30 * time.Second)
	n := 0
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		m, err := r.ReadMessage(ctx)
		cancel()
		if err != nil {
			return n
		}
		if e, err := events.Decode(m); err == nil && e.Subject == subject {
			if n == 0 {
				deadline = time.Now().Add(linger)
			}
			n++
		}
	}
}
