package application_test

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/services/topics/internal/application"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var contract = apitest.MustLoad()

func start(t *testing.T, opts servicetest.Options) *servicetest.Service {
	return servicetest.Start(t, application.Name, application.Migrations, application.Setup, opts)
}

func client(t *testing.T, s *servicetest.Service, tenantID string) *apitest.Client {
	return (&apitest.Client{T: t, Base: s.URL, Contract: contract, Prepare: s.Sign}).With(tenant.Header, tenantID)
}

// mustStatus checks a response's status and returns its JSON object.
var mustStatus = apitest.MustStatus

// issueCodes lists an error envelope's issues as "field:code:path".
var issueCodes = apitest.IssueCodes

func createTopic(t *testing.T, c *apitest.Client, body map[string]any) map[string]any {
	t.Helper()
	return mustStatus(t, c.Do("POST", "/v0/topics", body), 201)
}

func TestTopicLifecycle(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")

	created := createTopic(t, c, map[string]any{"title": "Pricing"})
	id := created["topicId"].(string)
	if !strings.HasPrefix(id, "topic_") || created["sortOrder"] != 0.0 || created["purpose"] != nil ||
		created["isDefault"] != false || len(created["entries"].([]any)) != 0 || created["createdAt"] != created["updatedAt"] {
		t.Fatalf("created = %v", created)
	}
	got := mustStatus(t, c.Do("GET", "/v0/topics/"+id, nil), 200)
	if got["title"] != "Pricing" {
		t.Fatalf("got = %v", got)
	}

	time.Sleep(5 * time.Millisecond)
	patched := mustStatus(t, c.Do("PATCH", "/v0/topics/"+id, map[string]any{"purpose": "why we price", "sortOrder": 7}), 200)
	if patched["purpose"] != "why we price" || patched["sortOrder"] != 7.0 || patched["title"] != "Pricing" || patched["updatedAt"] == patched["createdAt"] {
		t.Fatalf("patched = %v", patched)
	}
	cleared := mustStatus(t, c.Do("PATCH", "/v0/topics/"+id, map[string]any{"purpose": nil}), 200)
	if cleared["purpose"] != nil || cleared["sortOrder"] != 7.0 {
		t.Fatalf("cleared = %v", cleared)
	}
	same := mustStatus(t, c.Do("PATCH", "/v0/topics/"+id, map[string]any{}), 200)
	if same["updatedAt"] != cleared["updatedAt"] {
		t.Fatal("an empty patch changed updatedAt")
	}

	mustStatus(t, c.Do("DELETE", "/v0/topics/"+id, nil), 204)
	mustStatus(t, c.Do("GET", "/v0/topics/"+id, nil), 404)
	mustStatus(t, c.Do("DELETE", "/v0/topics/"+id, nil), 404)
	mustStatus(t, c.Do("PATCH", "/v0/topics/"+id, map[string]any{"title": "x"}), 404)
}

func TestOneDefaultTopic(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	a := createTopic(t, c, map[string]any{"title": "A", "isDefault": true})["topicId"].(string)
	b := createTopic(t, c, map[string]any{"title": "B", "isDefault": true})["topicId"].(string)
	if mustStatus(t, c.Do("GET", "/v0/topics/"+a, nil), 200)["isDefault"] != false {
		t.Fatal("A is still default after B became default")
	}
	mustStatus(t, c.Do("PATCH", "/v0/topics/"+a, map[string]any{"isDefault": true}), 200)
	if mustStatus(t, c.Do("GET", "/v0/topics/"+b, nil), 200)["isDefault"] != false {
		t.Fatal("B is still default after A became default again")
	}
	// Concurrent switches end with exactly one default.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		id := a
		if i%2 == 1 {
			id = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := c.Do("PATCH", "/v0/topics/"+id, map[string]any{"isDefault": true})
			if r.Status != 200 && r.Status != 409 {
				t.Errorf("concurrent default: %s", r)
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, it := range mustStatus(t, c.Do("GET", "/v0/topics", nil), 200)["items"].([]any) {
		if it.(map[string]any)["isDefault"] == true {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d default topics", n)
	}
}

func TestListOrderAndPagination(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	var want []string
	// sortOrder 2 then 1 then 0, three topics each: order is by sortOrder, then creation.
	byOrder := map[int][]string{}
	for i := 0; i < 9; i++ {
		order := 2 - i%3
		id := createTopic(t, c, map[string]any{"title": fmt.Sprint("t", i), "sortOrder": order})["topicId"].(string)
		byOrder[order] = append(byOrder[order], id)
	}
	for o := 0; o <= 2; o++ {
		want = append(want, byOrder[o]...)
	}
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		path := "/v0/topics?limit=2"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		body := mustStatus(t, c.Do("GET", path, nil), 200)
		if body["totalCount"].(float64) < 9 {
			t.Fatalf("totalCount = %v", body["totalCount"])
		}
		for _, it := range body["items"].([]any) {
			seen = append(seen, it.(map[string]any)["topicId"].(string))
		}
		if page == 1 {
			// Items written mid-walk never make the walk repeat or skip an old item.
			createTopic(t, c, map[string]any{"title": "late-low", "sortOrder": 0})
			createTopic(t, c, map[string]any{"title": "late-high", "sortOrder": 5})
		}
		if body["hasMore"] == false {
			if body["nextCursor"] != nil {
				t.Fatal("nextCursor set on the last page")
			}
			break
		}
		cursor = body["nextCursor"].(string)
	}
	var old []string
	for _, id := range seen {
		for _, w := range want {
			if id == w {
				old = append(old, id)
			}
		}
	}
	if fmt.Sprint(old) != fmt.Sprint(want) {
		t.Fatalf("walk saw\n%v\nwant\n%v", old, want)
	}
	dup := map[string]bool{}
	for _, id := range seen {
		if dup[id] {
			t.Fatalf("%s seen twice", id)
		}
		dup[id] = true
	}
}

func TestCursorAndLimitRules(t *testing.T) {
	s := start(t, servicetest.Options{})
	a := client(t, s, "acme")
	b := client(t, s, "globex")
	id := ""
	for i := 0; i < 3; i++ {
		id = createTopic(t, a, map[string]any{"title": "x"})["topicId"].(string)
		mustStatus(t, a.Do("POST", "/v0/topics/"+id+"/entries", map[string]any{"content": map[string]any{"type": "text", "content": "c"}}), 201)
		mustStatus(t, a.Do("POST", "/v0/topics/"+id+"/entries", map[string]any{"content": map[string]any{"type": "text", "content": "d"}}), 201)
	}
	cur := mustStatus(t, a.Do("GET", "/v0/topics?limit=1", nil), 200)["nextCursor"].(string)
	entryCur := mustStatus(t, a.Do("GET", "/v0/topics/"+id+"/entries?limit=1", nil), 200)["nextCursor"].(string)
	for name, tc := range map[string]struct {
		c    *apitest.Client
		path string
		code string
	}{
		"limit 0":             {a, "/v0/topics?limit=0", "query:too_small:[limit]"},
		"limit 101":           {a, "/v0/topics?limit=101", "query:too_big:[limit]"},
		"limit abc":           {a, "/v0/topics?limit=abc", "query:invalid_type:[limit]"},
		"tampered cursor":     {a, "/v0/topics?cursor=" + url.QueryEscape(cur[:len(cur)-2]+"xx"), "query:invalid_cursor:[cursor]"},
		"other tenant cursor": {b, "/v0/topics?cursor=" + url.QueryEscape(cur), "query:invalid_cursor:[cursor]"},
		"other list cursor":   {a, "/v0/topics?cursor=" + url.QueryEscape(entryCur), "query:invalid_cursor:[cursor]"},
		"entries limit":       {a, "/v0/topics/" + id + "/entries?limit=1000", "query:too_big:[limit]"},
	} {
		r := tc.c.Do("GET", tc.path, nil)
		if r.Status != 400 || fmt.Sprint(issueCodes(r)) != "["+tc.code+"]" {
			t.Errorf("%s: %d %v", name, r.Status, issueCodes(r))
		}
	}
	if r := a.Do("GET", "/v0/topics?limit=100", nil); r.Status != 200 {
		t.Fatalf("limit=100: %s", r)
	}
}

func TestEntries(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	id := createTopic(t, c, map[string]any{"title": "FAQ"})["topicId"].(string)
	e1 := mustStatus(t, c.Do("POST", "/v0/topics/"+id+"/entries", map[string]any{
		"content": map[string]any{"type": "markdown", "content": "# one"}, "sortOrder": 2}), 201)
	e2 := mustStatus(t, c.Do("POST", "/v0/topics/"+id+"/entries", map[string]any{
		"content": map[string]any{"type": "text", "content": "two"}}), 201)
	if e1["topicId"] != id || !strings.HasPrefix(e1["topicEntryId"].(string), "topicentry_") {
		t.Fatalf("entry = %v", e1)
	}
	e1ID, e2ID := e1["topicEntryId"].(string), e2["topicEntryId"].(string)
	topic := mustStatus(t, c.Do("GET", "/v0/topics/"+id, nil), 200)
	entries := topic["entries"].([]any)
	if len(entries) != 2 || entries[0].(map[string]any)["topicEntryId"] != e2ID {
		t.Fatalf("entries not in sortOrder: %v", entries)
	}
	list := mustStatus(t, c.Do("GET", "/v0/topics/"+id+"/entries", nil), 200)
	if list["totalCount"] != 2.0 || len(list["items"].([]any)) != 2 {
		t.Fatalf("list = %v", list)
	}
	mustStatus(t, c.Do("GET", "/v0/topics/"+id+"/entries/"+e1ID, nil), 200)
	up := mustStatus(t, c.Do("PATCH", "/v0/topics/"+id+"/entries/"+e1ID, map[string]any{
		"content": map[string]any{"type": "url", "content": "https://example.com"}}), 200)
	if up["content"].(map[string]any)["type"] != "url" || up["sortOrder"] != 2.0 {
		t.Fatalf("updated = %v", up)
	}
	mustStatus(t, c.Do("DELETE", "/v0/topics/"+id+"/entries/"+e1ID, nil), 204)
	mustStatus(t, c.Do("GET", "/v0/topics/"+id+"/entries/"+e1ID, nil), 404)

	// An entry is not found under another topic.
	other := createTopic(t, c, map[string]any{"title": "other"})["topicId"].(string)
	mustStatus(t, c.Do("GET", "/v0/topics/"+other+"/entries/"+e2ID, nil), 404)
	mustStatus(t, c.Do("PATCH", "/v0/topics/"+other+"/entries/"+e2ID, map[string]any{"sortOrder": 1}), 404)
	mustStatus(t, c.Do("DELETE", "/v0/topics/"+other+"/entries/"+e2ID, nil), 404)
	mustStatus(t, c.Do("GET", "/v0/topics/topic_missing/entries", nil), 404)
	mustStatus(t, c.Do("POST", "/v0/topics/topic_missing/entries", map[string]any{"content": map[string]any{"type": "text", "content": "x"}}), 404)

	// Deleting the topic deletes its entries.
	mustStatus(t, c.Do("DELETE", "/v0/topics/"+id, nil), 204)
	mustStatus(t, c.Do("GET", "/v0/topics/"+id+"/entries/"+e2ID, nil), 404)
}

func TestEntryLimit(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	id := createTopic(t, c, map[string]any{"title": "big"})["topicId"].(string)
	for i := 0; i < 100; i++ {
		mustStatus(t, c.Do("POST", "/v0/topics/"+id+"/entries", map[string]any{"content": map[string]any{"type": "text", "content": "x"}}), 201)
	}
	r := c.Do("POST", "/v0/topics/"+id+"/entries", map[string]any{"content": map[string]any{"type": "text", "content": "x"}})
	if r.Status != 409 || r.Map()["code"] != "CONFLICT" {
		t.Fatalf("101st entry: %s", r)
	}
}

func TestTenantIsolation(t *testing.T) {
	s := start(t, servicetest.Options{})
	a, b := client(t, s, "acme"), client(t, s, "globex")
	id := createTopic(t, a, map[string]any{"title": "secret"})["topicId"].(string)
	e := mustStatus(t, a.Do("POST", "/v0/topics/"+id+"/entries", map[string]any{"content": map[string]any{"type": "text", "content": "x"}}), 201)
	mustStatus(t, b.Do("GET", "/v0/topics/"+id, nil), 404)
	mustStatus(t, b.Do("PATCH", "/v0/topics/"+id, map[string]any{"title": "mine"}), 404)
	mustStatus(t, b.Do("DELETE", "/v0/topics/"+id, nil), 404)
	mustStatus(t, b.Do("GET", "/v0/topics/"+id+"/entries", nil), 404)
	mustStatus(t, b.Do("GET", "/v0/topics/"+id+"/entries/"+e["topicEntryId"].(string), nil), 404)
	if n := mustStatus(t, b.Do("GET", "/v0/topics", nil), 200)["totalCount"]; n != 0.0 {
		t.Fatalf("globex sees %v topics", n)
	}
	// Without the gateway's tenant header a service refuses the request.
	anon := &apitest.Client{T: t, Base: s.URL, Contract: contract}
	mustStatus(t, anon.Do("GET", "/v0/topics", nil), 401)
}

func TestBadInputIs400(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	id := createTopic(t, c, map[string]any{"title": "t"})["topicId"].(string)
	eid := mustStatus(t, c.Do("POST", "/v0/topics/"+id+"/entries", map[string]any{"content": map[string]any{"type": "text", "content": "x"}}), 201)["topicEntryId"].(string)
	long := strings.Repeat("a", 201)
	for name, tc := range map[string]struct {
		method, path string
		body         any
		want         string
	}{
		"create: malformed":          {"POST", "/v0/topics", apitest.Raw(`{"title":`), "body:invalid_json:[]"},
		"create: missing title":      {"POST", "/v0/topics", map[string]any{}, "body:invalid_type:[title]"},
		"create: empty title":        {"POST", "/v0/topics", map[string]any{"title": ""}, "body:too_small:[title]"},
		"create: long title":         {"POST", "/v0/topics", map[string]any{"title": long}, "body:too_big:[title]"},
		"create: title type":         {"POST", "/v0/topics", map[string]any{"title": 5}, "body:invalid_type:[title]"},
		"create: negative order":     {"POST", "/v0/topics", map[string]any{"title": "t", "sortOrder": -1}, "body:too_small:[sortOrder]"},
		"create: fractional order":   {"POST", "/v0/topics", map[string]any{"title": "t", "sortOrder": 1.5}, "body:invalid_type:[sortOrder]"},
		"create: huge order":         {"POST", "/v0/topics", map[string]any{"title": "t", "sortOrder": 9007199254740992}, "body:too_big:[sortOrder]"},
		"create: unknown field":      {"POST", "/v0/topics", map[string]any{"title": "t", "color": "red"}, "body:unrecognized_keys:[color]"},
		"create: array body":         {"POST", "/v0/topics", apitest.Raw(`[]`), "body:invalid_type:[]"},
		"create: null title":         {"POST", "/v0/topics", map[string]any{"title": nil}, "body:invalid_type:[title]"},
		"update: empty title":        {"PATCH", "/v0/topics/" + id, map[string]any{"title": ""}, "body:too_small:[title]"},
		"update: null title":         {"PATCH", "/v0/topics/" + id, map[string]any{"title": nil}, "body:invalid_type:[title]"},
		"update: default type":       {"PATCH", "/v0/topics/" + id, map[string]any{"isDefault": "yes"}, "body:invalid_type:[isDefault]"},
		"update: unknown field":      {"PATCH", "/v0/topics/" + id, map[string]any{"topicId": "x"}, "body:unrecognized_keys:[topicId]"},
		"entry: missing content":     {"POST", "/v0/topics/" + id + "/entries", map[string]any{}, "body:invalid_type:[content]"},
		"entry: bad type":            {"POST", "/v0/topics/" + id + "/entries", map[string]any{"content": map[string]any{"type": "pdf", "content": "x"}}, "body:invalid_enum_value:[content type]"},
		"entry: empty content":       {"POST", "/v0/topics/" + id + "/entries", map[string]any{"content": map[string]any{"type": "text", "content": ""}}, "body:too_small:[content content]"},
		"entry: long content":        {"POST", "/v0/topics/" + id + "/entries", map[string]any{"content": map[string]any{"type": "text", "content": strings.Repeat("x", 20001)}}, "body:too_big:[content content]"},
		"entry: nested unknown":      {"POST", "/v0/topics/" + id + "/entries", map[string]any{"content": map[string]any{"type": "text", "content": "x", "lang": "en"}}, "body:unrecognized_keys:[content lang]"},
		"entry update: bad content":  {"PATCH", "/v0/topics/" + id + "/entries/" + eid, map[string]any{"content": map[string]any{"type": "text"}}, "body:invalid_type:[content content]"},
		"entry update: malformed":    {"PATCH", "/v0/topics/" + id + "/entries/" + eid, apitest.Raw(`{`), "body:invalid_json:[]"},
		"entry update: no body":      {"PATCH", "/v0/topics/" + id + "/entries/" + eid, nil, "body:invalid_type:[]"},
		"entry update: white space":  {"PATCH", "/v0/topics/" + id + "/entries/" + eid, apitest.Raw(" \n"), "body:invalid_json:[]"},
		"entry update: null content": {"PATCH", "/v0/topics/" + id + "/entries/" + eid, map[string]any{"content": nil}, "body:invalid_type:[content]"},
		"entry: no body":             {"POST", "/v0/topics/" + id + "/entries", nil, "body:invalid_type:[]"},
		"entry: content type":        {"POST", "/v0/topics/" + id + "/entries", map[string]any{"content": "text"}, "body:invalid_type:[content]"},
		"update: no body":            {"PATCH", "/v0/topics/" + id, nil, "body:invalid_type:[]"},
		"update: white space":        {"PATCH", "/v0/topics/" + id, apitest.Raw("\t"), "body:invalid_json:[]"},
		"update: long purpose":       {"PATCH", "/v0/topics/" + id, map[string]any{"purpose": strings.Repeat("p", 2001)}, "body:too_big:[purpose]"},
		"update: negative order":     {"PATCH", "/v0/topics/" + id, map[string]any{"sortOrder": -1}, "body:too_small:[sortOrder]"},
		"create: no body":            {"POST", "/v0/topics", nil, "body:invalid_type:[]"},
		"create: white space":        {"POST", "/v0/topics", apitest.Raw("  "), "body:invalid_json:[]"},
		"create: empty purpose":      {"POST", "/v0/topics", map[string]any{"title": "t", "purpose": ""}, "body:too_small:[purpose]"},
	} {
		r := c.Do(tc.method, tc.path, tc.body)
		if r.Status != 400 || fmt.Sprint(issueCodes(r)) != "["+tc.want+"]" {
			t.Errorf("%s: %d %v", name, r.Status, issueCodes(r))
		}
	}
	oversized := apitest.Raw(`{"title":"` + strings.Repeat("a", 1<<20) + `"}`)
	if r := c.Do("POST", "/v0/topics", oversized); r.Status != 400 {
		t.Errorf("oversized body: %d", r.Status)
	}
	if r := c.With("Content-Type", "text/plain").Do("POST", "/v0/topics", apitest.Raw(`{"title":"t"}`)); r.Status != 400 {
		t.Errorf("text/plain body: %d", r.Status)
	}
	if r := c.Do("PUT", "/v0/topics/"+id, map[string]any{"title": "t"}); r.Status != 405 {
		t.Errorf("PUT: %d", r.Status)
	}
	// The bounds themselves are accepted.
	mustStatus(t, c.Do("POST", "/v0/topics", map[string]any{"title": strings.Repeat("a", 200),
		"purpose": strings.Repeat("p", 2000), "sortOrder": 9007199254740991}), 201)
	mustStatus(t, c.Do("POST", "/v0/topics/"+id+"/entries", map[string]any{
		"content": map[string]any{"type": "html", "content": strings.Repeat("x", 20000)}}), 201)
}

// readEvents reads the topics.events topic from the start until n events are seen.
func readEvents(t *testing.T, b *kafkatest.Broker, n int) []events.Envelope {
	return kafkatest.ReadEvents(t, []string{b.Addr}, events.TopicTopics, n, nil)
}

func TestEventsThroughTheOutbox(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	id := createTopic(t, c, map[string]any{"title": "evented"})["topicId"].(string)
	mustStatus(t, c.Do("POST", "/v0/topics/"+id+"/entries", map[string]any{"content": map[string]any{"type": "text", "content": "x"}}), 201)
	mustStatus(t, c.Do("PATCH", "/v0/topics/"+id, map[string]any{"title": "renamed"}), 200)
	mustStatus(t, c.Do("DELETE", "/v0/topics/"+id, nil), 204)
	got := readEvents(t, s.Broker, 4)
	var types []string
	for _, e := range got {
		if e.Subject != id || e.TenantID != "acme" {
			t.Fatalf("event %+v", e)
		}
		types = append(types, e.Type)
	}
	if fmt.Sprint(types) != "[topic.created topic.entry.created topic.updated topic.deleted]" {
		t.Fatalf("types = %v", types)
	}
}

// With the broker stopped, topic writes still succeed; their events arrive once the
// broker is back.
func TestWritesSucceedWhileTheBrokerIsDown(t *testing.T) {
	dir := t.TempDir()
	broker, err := kafkatest.StartOn(0, kfake.DataDir(dir), kfake.SyncWrites(), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	port := broker.Port()
	s := start(t, servicetest.Options{Broker: broker})
	c := client(t, s, "acme")
	createTopic(t, c, map[string]any{"title": "before"})
	readEvents(t, broker, 1)

	broker.Stop()
	id := createTopic(t, c, map[string]any{"title": "during outage"})["topicId"].(string)
	mustStatus(t, c.Do("GET", "/v0/topics/"+id, nil), 200)
	// Readiness stays 200: the broker check is optional, so an outage does not take the
	// service out of rotation.
	if r := (&apitest.Client{T: t, Base: s.URL}).Do("GET", "/readyz", nil); r.Status != 200 || !strings.Contains(string(r.Body), "degraded") {
		t.Fatalf("readyz during the outage: %s", r)
	}

	back, err := kafkatest.StartOn(port, kfake.DataDir(dir), kfake.SyncWrites(), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer back.Stop()
	got := readEvents(t, back, 2)
	if got[1].Subject != id || got[1].Type != "topic.created" {
		t.Fatalf("event after outage = %+v", got[1])
	}
}
