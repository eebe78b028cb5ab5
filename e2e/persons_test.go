package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/libs/timestamp"
)

// personsTenant issues a key for a fresh tenant and returns the tenant and a client.
func personsTenant(t *testing.T) (string, *apitest.Client) {
	tenant := fmt.Sprintf("pe%d", time.Now().UnixNano())
	return tenant, api(t, newKey(t, map[string]any{"tenantIds": []string{tenant}}))
}

// Accounts link the persons of their domain whichever was created first.
func TestPersonsAccountLinkingBothWays(t *testing.T) {
	_, c := personsTenant(t)
	early := must(t, c.Do("POST", "/v0/persons", map[string]any{"name": "Early Person", "email": "early@linked.example"}), 201)
	acc := decode[apitypes.Account](t, c.Do("POST", "/v0/accounts", map[string]any{"domain": "https://www.Linked.example/", "name": "Linked"}), 201)
	if acc.Domain != "linked.example" || len(acc.LinkedPersons) != 1 {
		t.Fatalf("account = %+v", acc)
	}
	accID := acc.AccountId
	late := must(t, c.Do("POST", "/v0/persons", map[string]any{"name": "Late Person", "email": "late@LINKED.example"}), 201)
	got := decode[apitypes.Account](t, c.Do("GET", "/v0/accounts/"+accID, nil), 200)
	var linked []any
	for _, p := range got.LinkedPersons {
		linked = append(linked, p.PersonId)
	}
	if fmt.Sprint(linked) != fmt.Sprint([]any{early["personId"], late["personId"]}) {
		t.Fatalf("linked = %v", linked)
	}
	if r := c.Do("POST", "/v0/accounts", map[string]any{"domain": "LINKED.example"}); r.Status != 409 {
		t.Fatalf("duplicate domain: %s", r)
	}
	must(t, c.Do("POST", "/v0/accounts", map[string]any{"domain": "lonely.example"}), 201)
	list := decode[apitypes.AccountPage](t, c.Do("GET", "/v0/accounts", nil), 200)
	if list.TotalCount != 2 || len(list.Items) == 0 || list.Items[0].LinkedPersonsCount != 2 {
		t.Fatalf("accounts = %+v", list)
	}
	empty := decode[apitypes.AccountPage](t, c.Do("GET", "/v0/accounts?includeEmptyOnly=true", nil), 200)
	if empty.TotalCount != 1 || len(empty.Items) == 0 || empty.Items[0].Domain != "lonely.example" {
		t.Fatalf("empty accounts = %+v", empty)
	}
	if r := c.Do("GET", "/v0/accounts/not-an-account", nil); r.Status != 400 {
		t.Fatalf("malformed account ID: %s", r)
	}
}

// Log ingestion is idempotent, also under concurrent identical requests.
func TestPersonsLogsWithIdempotency(t *testing.T) {
	_, c := personsTenant(t)
	pid := must(t, c.Do("POST", "/v0/persons", map[string]any{"name": "Logged Person"}), 201)["personId"].(string)
	aid := must(t, c.Do("POST", "/v0/accounts", map[string]any{"domain": "logs.example"}), 201)["accountId"].(string)
	for _, tc := range []struct{ base, idKey string }{
		{"/v0/persons/" + pid + "/logs", "personLogId"},
		{"/v0/accounts/" + aid + "/logs", "accountLogId"},
	} {
		body := map[string]any{"source": "e2e", "type": "visit", "payload": map[string]any{"page": "/pricing"}, "idempotencyKey": "once"}
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[string]bool{}
		created := 0
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := c.Do("POST", tc.base, body)
				mu.Lock()
				defer mu.Unlock()
				switch r.Status {
				case 201:
					created++
				case 200:
				default:
					t.Errorf("concurrent log: %s", r)
					return
				}
				seen[r.Map()[tc.idKey].(string)] = true
			}()
		}
		wg.Wait()
		if len(seen) != 1 || created != 1 {
			t.Fatalf("%s: %d entries, %d creates", tc.base, len(seen), created)
		}
		body["payload"] = map[string]any{"page": "/other"}
		if r := c.Do("POST", tc.base, body); r.Status != 409 {
			t.Fatalf("key reuse: %s", r)
		}
		var id string
		for k := range seen {
			id = k
		}
		must(t, c.Do("DELETE", tc.base+"/"+id, nil), 204)
		if got := must(t, c.Do("GET", tc.base+"/"+id, nil), 200); got["deletedAt"] == nil {
			t.Fatalf("deleted entry = %v", got)
		}
		if n := must(t, c.Do("GET", tc.base, nil), 200)["totalCount"]; n != 0.0 {
			t.Fatalf("list without deleted: %v", n)
		}
		if n := must(t, c.Do("GET", tc.base+"?includeDeleted=true", nil), 200)["totalCount"]; n != 1.0 {
			t.Fatalf("list with deleted: %v", n)
		}
	}
}

func TestPersonsSearchAndLifecycle(t *testing.T) {
	_, c := personsTenant(t)
	var ids []string
	for i := 0; i < 5; i++ {
		p := must(t, c.Do("POST", "/v0/persons", map[string]any{"name": fmt.Sprintf("Searchable %d", i),
			"email": fmt.Sprintf("s%d@find-me.example", i)}), 201)
		ids = append(ids, p["personId"].(string))
	}
	must(t, c.Do("POST", "/v0/persons", map[string]any{"name": "Someone Else"}), 201)
	var walked []string
	path := "/v0/persons/search?query=FIND-ME&limit=2"
	for {
		page := decode[apitypes.PersonSearchPage](t, c.Do("GET", path, nil), 200)
		if page.TotalCount == nil || *page.TotalCount != 5 {
			t.Fatalf("totalCount = %v", page.TotalCount)
		}
		for _, it := range page.Items {
			walked = append(walked, it.PersonId)
		}
		if page.NextCursor == nil {
			break
		}
		path = "/v0/persons/search?query=FIND-ME&limit=2&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	if fmt.Sprint(walked) != fmt.Sprint(ids) {
		t.Fatalf("walk = %v, want %v", walked, ids)
	}
	if n := must(t, c.Do("GET", "/v0/persons/search", nil), 200)["totalCount"]; n != 6.0 {
		t.Fatalf("all = %v", n)
	}
	up := must(t, c.Do("PATCH", "/v0/persons/"+ids[0], map[string]any{"name": "Renamed"}), 200)
	if up["slug"] != "searchable-0" {
		t.Fatalf("slug changed: %v", up)
	}
	must(t, c.Do("DELETE", "/v0/persons/"+ids[0], nil), 204)
	must(t, c.Do("GET", "/v0/persons/"+ids[0], nil), 404)
	_, other := personsTenant(t)
	must(t, other.Do("GET", "/v0/persons/"+ids[1], nil), 404)
	// Case folding is Unicode's, and queries of 1 or 2 characters find matches anywhere.
	zola := must(t, c.Do("POST", "/v0/persons", map[string]any{"name": "Émile Zöla"}), 201)["personId"]
	for _, q := range []string{"ÉMILE", "émile", "ZÖ", "ö", "é"} {
		page := decode[apitypes.PersonSearchPage](t, c.Do("GET", apitest.Query("/v0/persons/search", "query", q), nil), 200)
		if page.TotalCount == nil || *page.TotalCount != 1 || len(page.Items) != 1 || page.Items[0].PersonId != zola {
			t.Errorf("query %q: %+v", q, page)
		}
	}
	for name, r := range map[string]*apitest.Response{
		"empty name":  c.Do("POST", "/v0/persons", map[string]any{"name": ""}),
		"bad email":   c.Do("POST", "/v0/persons", map[string]any{"name": "x", "email": "nope"}),
		"bad limit":   c.Do("GET", "/v0/persons/search?limit=0", nil),
		"bad log":     c.Do("POST", "/v0/persons/"+ids[1]+"/logs", map[string]any{"source": "Bad Source", "type": "t", "payload": map[string]any{}}),
		"bad account": c.Do("POST", "/v0/accounts", map[string]any{"domain": ""}),
	} {
		if r.Status != 400 {
			t.Errorf("%s: %s", name, r)
		}
	}
}

// A form.submitted event on the broker (written here directly, as the pages relay
// would, so the test does not depend on the pages service) ends in an enriched person
// linked to the account of its domain.
func TestPersonsFormSubmissionIsEnriched(t *testing.T) {
	brokers := local(t).Brokers()
	tenant, c := personsTenant(t)
	acc := must(t, c.Do("POST", "/v0/accounts", map[string]any{"domain": "enriched.example"}), 201)
	email := fmt.Sprintf("visitor%d@enriched.example", time.Now().UnixNano())
	submission := fmt.Sprintf("form_%d", time.Now().UnixNano())
	payload := map[string]any{"type": events.TypeFormSubmitted, "pageId": "page_e2e", "audienceId": "audience_e2e",
		"audienceSessionId": "session_e2e", "formSubmissionId": submission, "identifier": email, "identifierType": "email",
		"email": email, "phone": nil, "linkedinProfileUrl": nil, "name": "E2E Visitor", "fields": nil,
		"submittedAt": timestamp.Format(time.Now())}
	evt, err := events.New(tenant, events.TypeFormSubmitted, "audience_e2e", payload)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := json.Marshal(evt)
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, AllowAutoTopicCreation: true}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg := kafka.Message{Topic: events.TopicPages, Key: []byte(evt.Subject), Value: v}
	duplicates := func() float64 {
		return metricValue(t, local(t).MetricsURL("persons"), `consumer_events_total{consumer="persons-enrichment",outcome="duplicate"}`)
	}
	duplicatesBefore := duplicates()
	// The same event twice: the second delivery is a no-op.
	if err := w.WriteMessages(ctx, msg, msg); err != nil {
		t.Fatal(err)
	}
	var person *apitypes.Person
	testwait.For(t, 60*time.Second, "the submission to be enriched", func() (bool, string) {
		page := decode[apitypes.PersonSearchPage](t, c.Do("GET", apitest.Query("/v0/persons/search", "query", email), nil), 200)
		if len(page.Items) > 0 {
			person = &page.Items[0]
		}
		return person != nil, fmt.Sprintf("%d persons found", len(page.Items))
	})
	if person.Name != "E2E Visitor" || person.Domain == nil || *person.Domain != "enriched.example" {
		t.Fatalf("person = %+v", person)
	}
	got := decode[apitypes.Account](t, c.Do("GET", "/v0/accounts/"+acc["accountId"].(string), nil), 200)
	if l := got.LinkedPersons; len(l) != 1 || l[0].PersonId != person.PersonId {
		t.Fatalf("account = %+v", got)
	}
	// The consumer has seen the redelivery (as a duplicate) once its counter moves.
	testwait.For(t, 30*time.Second, "the persons consumer to count the redelivered event as a duplicate", func() (bool, string) {
		n := duplicates() - duplicatesBefore
		return n >= 1, fmt.Sprintf("%v duplicates since the event was written", n)
	})
	if n := must(t, c.Do("GET", "/v0/persons/search", nil), 200)["totalCount"]; n != 1.0 {
		t.Fatalf("%v persons after a redelivered event", n)
	}
}

// The whole flow when the pages service runs: a session recorded with a form submission
// ends in an enriched person linked to the account of the submitted email's domain.
func TestPersonsEnrichPagesFormSubmissions(t *testing.T) {
	_, c := personsTenant(t)
	if r := c.Do("GET", "/v0/pages", nil); r.Status == 503 {
		t.Skipf("the pages service is not running: %s", r.Body)
	}
	acc := must(t, c.Do("POST", "/v0/accounts", map[string]any{"domain": "flow.example"}), 201)
	page := must(t, c.Do("POST", "/v0/pages", map[string]any{"name": "Persons e2e", "title": "Persons",
		"pageContext": "A page with a form", "brandId": "brand_e2e", "pageType": "inbound"}), 201)
	email := fmt.Sprintf("Flow%d@Flow.example", time.Now().UnixNano())
	must(t, c.Do("POST", "/v0/pages/"+page["pageId"].(string)+"/audience_sessions", map[string]any{
		"analyticsSessionId": fmt.Sprintf("as_%d", time.Now().UnixNano()), "sessionStartedAt": timestamp.Format(time.Now()),
		"formSubmission": map[string]any{"email": email, "name": "Flow Visitor"}}), 201)
	var linked []apitypes.Person
	testwait.For(t, 60*time.Second, "the form submission to be enriched and linked to the account", func() (bool, string) {
		linked = decode[apitypes.Account](t, c.Do("GET", "/v0/accounts/"+acc["accountId"].(string), nil), 200).LinkedPersons
		return len(linked) == 1, fmt.Sprintf("%d linked persons", len(linked))
	})
	if p := linked[0]; p.Name != "Flow Visitor" || p.Email == nil || *p.Email != email {
		t.Fatalf("person = %+v", p)
	}
}

// metricValue reads a process's /metrics at base and returns the value of the series with
// exactly the given name and labels, 0 when absent.
func metricValue(t *testing.T, base, series string) float64 {
	t.Helper()
	status, body := direct(t, "GET", base+"/metrics", nil)
	if status != 200 {
		t.Fatalf("%s/metrics: %d", base, status)
	}
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s/metrics: %q: %v", base, line, err)
			}
			return f
		}
	}
	return 0
}
