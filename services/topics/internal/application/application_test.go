package application_test

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/service/servicetest"
)

func TestTopicLifecycle(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")

	created := createTopic(t, c, topicCreate{Title: "Pricing"})
	id := created.TopicId
	if !strings.HasPrefix(id, "topic_") {
		t.Errorf("a topic ID must be a TypeID with prefix topic_; got %q", id)
	}
	if created.SortOrder != 0 {
		t.Errorf("a topic created without sortOrder must have sortOrder 0; got %d", created.SortOrder)
	}
	if created.Purpose != nil {
		t.Errorf("a topic created without purpose must read back with purpose null; got %q", *created.Purpose)
	}
	if created.IsDefault {
		t.Error("a topic created without isDefault must not be the default topic")
	}
	if created.Entries == nil || len(created.Entries) != 0 {
		t.Errorf("a new topic must have entries [] (an empty array, not null); got %v", created.Entries)
	}
	if created.CreatedAt != created.UpdatedAt {
		t.Errorf("a new topic's updatedAt must equal its createdAt; got createdAt %s, updatedAt %s", created.CreatedAt, created.UpdatedAt)
	}
	if got := getTopic(t, c, id); got.Title != "Pricing" {
		t.Fatalf("a topic must read back with the title it was created with (Pricing); got %q", got.Title)
	}

	waitForClockPast(t, created.UpdatedAt)
	patched := patchTopic(t, c, id, topicUpdate{Purpose: new("why we price"), SortOrder: new(7)})
	if patched.Purpose == nil || *patched.Purpose != "why we price" || patched.SortOrder != 7 {
		t.Errorf("a patch must set the fields it names; want purpose %q and sortOrder 7, got purpose %v and sortOrder %d",
			"why we price", patched.Purpose, patched.SortOrder)
	}
	if patched.Title != "Pricing" {
		t.Errorf("a patch must leave the fields it does not name; want title Pricing, got %q", patched.Title)
	}
	if patched.UpdatedAt == patched.CreatedAt {
		t.Errorf("a patch that changes a topic must move updatedAt past createdAt; both are %s", patched.UpdatedAt)
	}
	// An explicit null clears a field, which only a map can send.
	cleared := patchTopic(t, c, id, map[string]any{"purpose": nil})
	if cleared.Purpose != nil {
		t.Errorf("a patch with purpose null must clear the purpose; got %q", *cleared.Purpose)
	}
	if cleared.SortOrder != 7 {
		t.Errorf("a patch that clears purpose must leave sortOrder (7); got %d", cleared.SortOrder)
	}
	if same := patchTopic(t, c, id, topicUpdate{}); same.UpdatedAt != cleared.UpdatedAt {
		t.Errorf("an empty patch changes nothing, so it must not move updatedAt; was %s, now %s", cleared.UpdatedAt, same.UpdatedAt)
	}

	apitest.ExpectStatus(t, c.Do("DELETE", "/v0/topics/"+id, nil), 204, "deleting an existing topic must answer 204")
	apitest.ExpectNotFound(t, c.Do("GET", "/v0/topics/"+id, nil), "a deleted topic must no longer be found")
	apitest.ExpectNotFound(t, c.Do("DELETE", "/v0/topics/"+id, nil), "deleting a deleted topic again must be a 404")
	apitest.ExpectNotFound(t, c.Do("PATCH", "/v0/topics/"+id, topicUpdate{Title: "x"}), "patching a deleted topic must be a 404")
}

func TestOneDefaultTopic(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	a := createTopic(t, c, topicCreate{Title: "A", IsDefault: true}).TopicId
	b := createTopic(t, c, topicCreate{Title: "B", IsDefault: true}).TopicId
	if getTopic(t, c, a).IsDefault {
		t.Fatal("creating topic B as the default must make the previous default A an ordinary topic; A is still default")
	}
	patchTopic(t, c, a, topicUpdate{IsDefault: new(true)})
	if getTopic(t, c, b).IsDefault {
		t.Fatal("patching A to be the default must make B an ordinary topic; B is still default")
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
			r := c.Do("PATCH", "/v0/topics/"+id, topicUpdate{IsDefault: new(true)})
			if r.Status != 200 && r.Status != 409 {
				t.Errorf("a concurrent switch of the default topic must succeed (200) or conflict (409); got %s", r)
			}
		}()
	}
	wg.Wait()
	var defaults []string
	for _, it := range listTopics(t, c, "").Items {
		if it.IsDefault {
			defaults = append(defaults, it.TopicId)
		}
	}
	if len(defaults) != 1 {
		t.Fatalf("after concurrent switches a tenant must have exactly one default topic; got %d: %v", len(defaults), defaults)
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
		id := createTopic(t, c, topicCreate{Title: fmt.Sprint("t", i), SortOrder: new(order)}).TopicId
		byOrder[order] = append(byOrder[order], id)
	}
	for o := 0; o <= 2; o++ {
		want = append(want, byOrder[o]...)
	}
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		query := "?limit=2"
		if cursor != "" {
			query += "&cursor=" + url.QueryEscape(cursor)
		}
		body := listTopics(t, c, query)
		if body.TotalCount < 9 {
			t.Fatalf("totalCount must count every topic of the tenant (at least the 9 created before the walk); page %d says %d",
				page, body.TotalCount)
		}
		for _, it := range body.Items {
			seen = append(seen, it.TopicId)
		}
		if page == 1 {
			// Items written mid-walk never make the walk repeat or skip an old item.
			createTopic(t, c, topicCreate{Title: "late-low", SortOrder: new(0)})
			createTopic(t, c, topicCreate{Title: "late-high", SortOrder: new(5)})
		}
		if !body.HasMore {
			if body.NextCursor != nil {
				t.Fatalf("the last page (hasMore false) must have nextCursor null; got %q", *body.NextCursor)
			}
			break
		}
		cursor = nextCursor(t, body, fmt.Sprintf("page %d of the topics", page))
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
		t.Fatalf("a walk must list the topics created before it by sortOrder, then creation, each once, whatever is written meanwhile;"+
			" walk saw\n%v\nwant\n%v", old, want)
	}
	dup := map[string]bool{}
	for _, id := range seen {
		if dup[id] {
			t.Fatalf("a walk over the pages must never list a topic twice; %s was listed twice in %v", id, seen)
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
		id = createTopic(t, a, topicCreate{Title: "x"}).TopicId
		addEntry(t, a, id, textEntry("c"))
		addEntry(t, a, id, textEntry("d"))
	}
	cur := nextCursor(t, listTopics(t, a, "?limit=1"), "a topic list of limit 1 over 3 topics")
	entryCur := nextCursor(t, listEntries(t, a, id, "?limit=1"), "an entry list of limit 1 over 2 entries")
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
		apitest.CheckIssues(t, tc.c.Do("GET", tc.path, nil), tc.code, "GET "+tc.path+" ("+name+") must be refused")
	}
	listTopics(t, a, "?limit=100") // the largest limit is accepted
}

func TestEntries(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	id := createTopic(t, c, topicCreate{Title: "FAQ"}).TopicId
	e1 := addEntry(t, c, id, entryCreate{Content: EntryContent{Type: "markdown", Content: "# one"}, SortOrder: new(2)})
	e2 := addEntry(t, c, id, textEntry("two"))
	if e1.TopicId != id {
		t.Errorf("an entry must name the topic it was added to (%s); got %q", id, e1.TopicId)
	}
	if !strings.HasPrefix(e1.TopicEntryId, "topicentry_") {
		t.Errorf("an entry ID must be a TypeID with prefix topicentry_; got %q", e1.TopicEntryId)
	}
	e1ID, e2ID := e1.TopicEntryId, e2.TopicEntryId
	entries := getTopic(t, c, id).Entries
	if len(entries) != 2 || entries[0].TopicEntryId != e2ID {
		var got []string
		for _, e := range entries {
			got = append(got, fmt.Sprintf("%s(sortOrder %d)", e.TopicEntryId, e.SortOrder))
		}
		t.Fatalf("a topic must carry its entries by sortOrder, so %s (0) before %s (2); got %v", e2ID, e1ID, got)
	}
	if list := listEntries(t, c, id, ""); list.TotalCount != 2 || len(list.Items) != 2 {
		t.Fatalf("the entry list must hold and count both entries; got totalCount %d and %d items", list.TotalCount, len(list.Items))
	}
	apitest.Decode[TopicEntry](t, c.Do("GET", "/v0/topics/"+id+"/entries/"+e1ID, nil), 200, "an existing entry must be readable by its ID")
	up := apitest.Decode[TopicEntry](t, c.Do("PATCH", "/v0/topics/"+id+"/entries/"+e1ID,
		entryUpdate{Content: &EntryContent{Type: "url", Content: "https://example.com"}}), 200, "a valid patch of an entry must answer 200")
	if up.Content.Type != "url" {
		t.Errorf("a patch of an entry's content must replace it; want type url, got %q", up.Content.Type)
	}
	if up.SortOrder != 2 {
		t.Errorf("a patch of an entry's content must leave its sortOrder (2); got %d", up.SortOrder)
	}
	apitest.ExpectStatus(t, c.Do("DELETE", "/v0/topics/"+id+"/entries/"+e1ID, nil), 204, "deleting an existing entry must answer 204")
	apitest.ExpectNotFound(t, c.Do("GET", "/v0/topics/"+id+"/entries/"+e1ID, nil), "a deleted entry must no longer be found")

	// An entry is not found under another topic.
	other := createTopic(t, c, topicCreate{Title: "other"}).TopicId
	apitest.ExpectNotFound(t, c.Do("GET", "/v0/topics/"+other+"/entries/"+e2ID, nil), "an entry must not be found under another topic")
	apitest.ExpectNotFound(t, c.Do("PATCH", "/v0/topics/"+other+"/entries/"+e2ID, entryUpdate{SortOrder: new(1)}),
		"an entry must not be patchable under another topic")
	apitest.ExpectNotFound(t, c.Do("DELETE", "/v0/topics/"+other+"/entries/"+e2ID, nil), "an entry must not be deletable under another topic")
	apitest.ExpectNotFound(t, c.Do("GET", "/v0/topics/topic_missing/entries", nil), "the entries of a missing topic must be a 404")
	apitest.ExpectNotFound(t, c.Do("POST", "/v0/topics/topic_missing/entries", textEntry("x")), "adding an entry to a missing topic must be a 404")

	// Deleting the topic deletes its entries.
	apitest.ExpectStatus(t, c.Do("DELETE", "/v0/topics/"+id, nil), 204, "deleting an existing topic must answer 204")
	apitest.ExpectNotFound(t, c.Do("GET", "/v0/topics/"+id+"/entries/"+e2ID, nil), "deleting a topic must delete its entries")
}

func TestEntryLimit(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	id := createTopic(t, c, topicCreate{Title: "big"}).TopicId
	for i := 0; i < 100; i++ {
		addEntry(t, c, id, textEntry("x"))
	}
	apitest.ExpectError(t, c.Do("POST", "/v0/topics/"+id+"/entries", textEntry("x")), 409, "CONFLICT",
		"a topic holds at most 100 entries, so the 101st must be refused")
}

func TestTenantIsolation(t *testing.T) {
	s := start(t, servicetest.Options{})
	a, b := client(t, s, "acme"), client(t, s, "globex")
	id := createTopic(t, a, topicCreate{Title: "secret"}).TopicId
	e := addEntry(t, a, id, textEntry("x"))
	apitest.ExpectNotFound(t, b.Do("GET", "/v0/topics/"+id, nil), "another tenant's topic must not be found")
	apitest.ExpectNotFound(t, b.Do("PATCH", "/v0/topics/"+id, topicUpdate{Title: "mine"}), "another tenant's topic must not be patchable")
	apitest.ExpectNotFound(t, b.Do("DELETE", "/v0/topics/"+id, nil), "another tenant's topic must not be deletable")
	apitest.ExpectNotFound(t, b.Do("GET", "/v0/topics/"+id+"/entries", nil), "another tenant's topic's entries must not be listed")
	apitest.ExpectNotFound(t, b.Do("GET", "/v0/topics/"+id+"/entries/"+e.TopicEntryId, nil), "another tenant's entry must not be found")
	if n := listTopics(t, b, "").TotalCount; n != 0 {
		t.Fatalf("a tenant must not list another tenant's topics; globex sees %d", n)
	}
	// Without the gateway's tenant header a service refuses the request.
	anon := &apitest.Client{T: t, Base: s.URL, Contract: contract}
	apitest.ExpectError(t, anon.Do("GET", "/v0/topics", nil), 401, "UNAUTHORIZED", "a request without the gateway's tenant header must be refused")
}

func TestBadInputIs400(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	id := createTopic(t, c, topicCreate{Title: "t"}).TopicId
	eid := addEntry(t, c, id, textEntry("x")).TopicEntryId
	long := strings.Repeat("a", 201)
	// The bodies are wrong on purpose, so they are maps.
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
		apitest.CheckIssues(t, c.Do(tc.method, tc.path, tc.body), tc.want, tc.method+" with "+name+" must be refused")
	}
	oversized := apitest.Raw(`{"title":"` + strings.Repeat("a", 1<<20) + `"}`)
	if r := c.Do("POST", "/v0/topics", oversized); r.Status != 400 {
		t.Errorf("a body over the size limit must be refused with 400; got %d", r.Status)
	}
	if r := c.With("Content-Type", "text/plain").Do("POST", "/v0/topics", apitest.Raw(`{"title":"t"}`)); r.Status != 400 {
		t.Errorf("a body that is not sent as application/json must be refused with 400; got %d", r.Status)
	}
	if r := c.Do("PUT", "/v0/topics/"+id, topicCreate{Title: "t"}); r.Status != 405 {
		t.Errorf("PUT is not an operation on a topic, so it must be a 405; got %d", r.Status)
	}
	// The bounds themselves are accepted.
	createTopic(t, c, topicCreate{Title: strings.Repeat("a", 200), Purpose: strings.Repeat("p", 2000), SortOrder: new(9007199254740991)})
	addEntry(t, c, id, entryCreate{Content: EntryContent{Type: "html", Content: strings.Repeat("x", 20000)}})
}

func TestEventsThroughTheOutbox(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	id := createTopic(t, c, topicCreate{Title: "evented"}).TopicId
	addEntry(t, c, id, textEntry("x"))
	patchTopic(t, c, id, topicUpdate{Title: "renamed"})
	apitest.ExpectStatus(t, c.Do("DELETE", "/v0/topics/"+id, nil), 204, "deleting an existing topic must answer 204")
	got := readEvents(t, s.Broker, 4)
	var types []string
	for _, e := range got {
		if e.Subject != id || e.TenantID != "acme" {
			t.Fatalf("every event of a topic's changes must have the topic as subject (%s) and its tenant (acme); got %s of %q for %q",
				id, e.Type, e.Subject, e.TenantID)
		}
		types = append(types, e.Type)
	}
	if want := []string{"topic.created", "topic.entry.created", "topic.updated", "topic.deleted"}; fmt.Sprint(types) != fmt.Sprint(want) {
		t.Fatalf("each change must emit its event, in the order of the changes; want %v, got %v", want, types)
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
	createTopic(t, c, topicCreate{Title: "before"})
	readEvents(t, broker, 1)

	broker.Stop()
	id := createTopic(t, c, topicCreate{Title: "during outage"}).TopicId
	getTopic(t, c, id)
	// Readiness stays 200: the broker check is optional, so an outage does not take the
	// service out of rotation.
	if r := (&apitest.Client{T: t, Base: s.URL}).Do("GET", "/readyz", nil); r.Status != 200 || !strings.Contains(string(r.Body), "degraded") {
		t.Fatalf("during a broker outage /readyz must stay 200 and report degraded (the broker check is optional); got %s", r)
	}

	back, err := kafkatest.StartOn(port, kfake.DataDir(dir), kfake.SyncWrites(), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer back.Stop()
	got := readEvents(t, back, 2)
	if got[1].Subject != id || got[1].Type != "topic.created" {
		t.Fatalf("a topic created during the outage must have its topic.created event (subject %s) published once the broker is back;"+
			" second event is %s of %q", id, got[1].Type, got[1].Subject)
	}
}
