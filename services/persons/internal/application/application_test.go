package application_test

import (
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
)

func TestPersonLifecycle(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")

	p := createPerson(t, c, map[string]any{"name": "Ada Lovelace", "email": "Ada@Analytical.example.COM"})
	id := p["personId"].(string)
	if !strings.HasPrefix(id, "person_") || p["domain"] != "analytical.example.com" || p["slug"] != "ada-lovelace" ||
		p["phoneNumber"] != nil || p["linkedinProfileUrl"] != nil || p["createdAt"] != p["updatedAt"] {
		t.Fatalf("created = %v", p)
	}
	// The same name gets another slug; a given domain wins over the email's.
	twin := createPerson(t, c, map[string]any{"name": "Ada  Lovelace!", "email": "ada@other.example", "domain": "https://WWW.Given.example/about"})
	if twin["slug"] == "ada-lovelace" || !strings.HasPrefix(twin["slug"].(string), "ada-lovelace-") || twin["domain"] != "given.example" {
		t.Fatalf("twin = %v", twin)
	}
	if got := mustStatus(t, c.Do("GET", "/v0/persons/"+id, nil), 200); got["name"] != "Ada Lovelace" {
		t.Fatalf("got = %v", got)
	}

	time.Sleep(5 * time.Millisecond)
	// A new email moves a derived domain along; the slug stays.
	up := mustStatus(t, c.Do("PATCH", "/v0/persons/"+id, map[string]any{"name": "Ada King", "email": "ada@babbage.example",
		"phoneNumber": "+44 20 7946 0000", "linkedinProfileUrl": "https://www.linkedin.com/in/ada"}), 200)
	if up["domain"] != "babbage.example" || up["slug"] != "ada-lovelace" || up["name"] != "Ada King" ||
		up["phoneNumber"] != "+44 20 7946 0000" || up["updatedAt"] == up["createdAt"] {
		t.Fatalf("updated = %v", up)
	}
	// An explicit domain is kept when the email changes later.
	mustStatus(t, c.Do("PATCH", "/v0/persons/"+id, map[string]any{"domain": "Kept.example"}), 200)
	up = mustStatus(t, c.Do("PATCH", "/v0/persons/"+id, map[string]any{"email": "ada@elsewhere.example"}), 200)
	if up["domain"] != "kept.example" {
		t.Fatalf("domain after email change = %v", up["domain"])
	}
	same := mustStatus(t, c.Do("PATCH", "/v0/persons/"+id, map[string]any{}), 200)
	if same["updatedAt"] != up["updatedAt"] {
		t.Fatal("an empty patch changed updatedAt")
	}
	cleared := mustStatus(t, c.Do("PATCH", "/v0/persons/"+id, map[string]any{"email": nil, "domain": nil, "phoneNumber": nil}), 200)
	if cleared["email"] != nil || cleared["domain"] != nil || cleared["phoneNumber"] != nil {
		t.Fatalf("cleared = %v", cleared)
	}

	mustStatus(t, c.Do("DELETE", "/v0/persons/"+id, nil), 204)
	mustStatus(t, c.Do("GET", "/v0/persons/"+id, nil), 404)
	mustStatus(t, c.Do("DELETE", "/v0/persons/"+id, nil), 404)
	mustStatus(t, c.Do("PATCH", "/v0/persons/"+id, map[string]any{"name": "x"}), 404)
	// A deleted person's slug is free again.
	if again := createPerson(t, c, map[string]any{"name": "Ada Lovelace"}); again["slug"] != "ada-lovelace" || again["domain"] != nil {
		t.Fatalf("again = %v", again)
	}
}

func TestSlugsStayUniqueUnderConcurrency(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	var mu sync.Mutex
	slugs := map[string]bool{}
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := c.Do("POST", "/v0/persons", map[string]any{"name": "Grace Hopper"})
			if r.Status != 201 {
				t.Errorf("create: %s", r)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			slug := r.Map()["slug"].(string)
			if slugs[slug] {
				t.Errorf("slug %s twice", slug)
			}
			slugs[slug] = true
		}()
	}
	wg.Wait()
	if !slugs["grace-hopper"] {
		t.Fatalf("slugs = %v", slugs)
	}
}

func TestSearch(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	other := client(t, s, "globex")
	var all []string
	for i, p := range []map[string]any{
		{"name": "Marie Curie", "email": "marie@radium.example"},
		{"name": "Pierre Curie", "email": "pierre@sorbonne.example"},
		{"name": "Lise Meitner", "domain": "fission.example"},
		{"name": "Percent 100% Sure", "email": "under_score@x.example"},
		{"name": "Rosalind Franklin"},
	} {
		all = append(all, createPerson(t, c, p)["personId"].(string))
		_ = i
	}
	createPerson(t, other, map[string]any{"name": "Marie Other Tenant"})
	search := func(q string) map[string]any {
		t.Helper()
		return mustStatus(t, c.Do("GET", apitest.Query("/v0/persons/search", "query", q), nil), 200)
	}
	ids := func(page map[string]any) []string {
		var out []string
		for _, it := range items(page) {
			out = append(out, it["personId"].(string))
		}
		return out
	}
	for q, want := range map[string][]string{
		"CURIE":           {all[0], all[1]},
		"marie":           {all[0]},
		"sorbonne":        {all[1]},
		"FISSION.example": {all[2]},
		"100%":            {all[3]},
		"under_score":     {all[3]},
		"_":               {all[3]},
		"%":               {all[3]},
		"nobody":          nil,
	} {
		page := search(q)
		if fmt.Sprint(ids(page)) != fmt.Sprint(want) || page["totalCount"] != float64(len(want)) {
			t.Errorf("query %q: %v (total %v), want %v", q, ids(page), page["totalCount"], want)
		}
	}
	// An empty query lists everyone of the tenant; walking pages yields each once.
	var walked []string
	path := "/v0/persons/search?limit=2"
	for {
		page := mustStatus(t, c.Do("GET", path, nil), 200)
		if page["totalCount"] != 5.0 {
			t.Fatalf("totalCount = %v", page["totalCount"])
		}
		walked = append(walked, ids(page)...)
		if page["nextCursor"] == nil {
			break
		}
		path = "/v0/persons/search?limit=2&cursor=" + url.QueryEscape(page["nextCursor"].(string))
	}
	if fmt.Sprint(walked) != fmt.Sprint(all) {
		t.Fatalf("walk = %v, want %v", walked, all)
	}
	// A cursor belongs to its query.
	cur := mustStatus(t, c.Do("GET", "/v0/persons/search?query=curie&limit=1", nil), 200)["nextCursor"].(string)
	if r := c.Do("GET", "/v0/persons/search?query=marie&cursor="+url.QueryEscape(cur), nil); r.Status != 400 {
		t.Fatalf("cursor of another query: %s", r)
	}
	next := mustStatus(t, c.Do("GET", "/v0/persons/search?query=curie&limit=1&cursor="+url.QueryEscape(cur), nil), 200)
	if fmt.Sprint(ids(next)) != fmt.Sprint([]string{all[1]}) || next["hasMore"] != false {
		t.Fatalf("second page = %v", next)
	}
}

func TestAccountsLinkPersonsBothWays(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	before := createPerson(t, c, map[string]any{"name": "Early Bird", "email": "early@acme.example"})

	acc := createAccount(t, c, map[string]any{"domain": "https://www.ACME.example/", "name": "Acme"})
	accID := acc["accountId"].(string)
	if acc["domain"] != "acme.example" || acc["name"] != "Acme" || len(acc["linkedPersons"].([]any)) != 1 ||
		acc["linkedPersons"].([]any)[0].(map[string]any)["personId"] != before["personId"] {
		t.Fatalf("account = %v", acc)
	}
	if acc["latestActivityAt"] != before["updatedAt"] {
		t.Fatalf("latestActivityAt = %v, want the linked person's %v", acc["latestActivityAt"], before["updatedAt"])
	}
	r := c.Do("POST", "/v0/accounts", map[string]any{"domain": "acme.example."})
	if r.Status != 409 || r.Map()["code"] != "CONFLICT" {
		t.Fatalf("duplicate domain: %s", r)
	}

	after := createPerson(t, c, map[string]any{"name": "Late Comer", "email": "late@other.example", "domain": "acme.example"})
	got := mustStatus(t, c.Do("GET", "/v0/accounts/"+accID, nil), 200)
	linked := got["linkedPersons"].([]any)
	if len(linked) != 2 || linked[1].(map[string]any)["personId"] != after["personId"] {
		t.Fatalf("linked = %v", linked)
	}
	if got["latestActivityAt"] != after["updatedAt"] {
		t.Fatalf("latestActivityAt = %v, want %v", got["latestActivityAt"], after["updatedAt"])
	}
	// Moving a person to another domain unlinks it.
	mustStatus(t, c.Do("PATCH", "/v0/persons/"+before["personId"].(string), map[string]any{"domain": "elsewhere.example"}), 200)

	empty := createAccount(t, c, map[string]any{"domain": "empty.example"})
	if empty["name"] != nil || empty["latestActivityAt"] != nil || len(empty["linkedPersons"].([]any)) != 0 {
		t.Fatalf("empty account = %v", empty)
	}
	list := mustStatus(t, c.Do("GET", "/v0/accounts", nil), 200)
	its := items(list)
	if list["totalCount"] != 2.0 || len(its) != 2 || its[0]["accountId"] != accID || its[0]["linkedPersonsCount"] != 1.0 ||
		its[1]["linkedPersonsCount"] != 0.0 {
		t.Fatalf("list = %v", list)
	}
	if _, ok := its[0]["linkedPersons"]; ok {
		t.Fatal("list items carry linkedPersons")
	}
	emptyOnly := mustStatus(t, c.Do("GET", "/v0/accounts?includeEmptyOnly=true", nil), 200)
	if emptyOnly["totalCount"] != 1.0 || items(emptyOnly)[0]["accountId"] != empty["accountId"] {
		t.Fatalf("empty only = %v", emptyOnly)
	}
	// Account logs move latestActivityAt.
	time.Sleep(5 * time.Millisecond)
	l := mustStatus(t, c.Do("POST", "/v0/accounts/"+empty["accountId"].(string)+"/logs",
		map[string]any{"source": "crm", "type": "note", "payload": map[string]any{"text": "hi"}}), 201)
	if got := mustStatus(t, c.Do("GET", "/v0/accounts/"+empty["accountId"].(string), nil), 200); got["latestActivityAt"] != l["createdAt"] {
		t.Fatalf("latestActivityAt %v, want %v", got["latestActivityAt"], l["createdAt"])
	}
	// Person logs of a linked person move it too.
	time.Sleep(5 * time.Millisecond)
	pl := mustStatus(t, c.Do("POST", "/v0/persons/"+after["personId"].(string)+"/logs",
		map[string]any{"source": "web", "type": "page-view", "payload": map[string]any{}}), 201)
	if got := mustStatus(t, c.Do("GET", "/v0/accounts/"+accID, nil), 200); got["latestActivityAt"] != pl["createdAt"] {
		t.Fatalf("latestActivityAt %v, want %v", got["latestActivityAt"], pl["createdAt"])
	}

	// Pagination over accounts, and their 404s.
	cur := mustStatus(t, c.Do("GET", "/v0/accounts?limit=1", nil), 200)["nextCursor"].(string)
	page2 := mustStatus(t, c.Do("GET", "/v0/accounts?limit=1&cursor="+url.QueryEscape(cur), nil), 200)
	if items(page2)[0]["accountId"] != empty["accountId"] || page2["hasMore"] != false {
		t.Fatalf("page 2 = %v", page2)
	}
	if r := c.Do("GET", "/v0/accounts?includeEmptyOnly=true&cursor="+url.QueryEscape(cur), nil); r.Status != 400 {
		t.Fatalf("cursor of another filter: %s", r)
	}
	mustStatus(t, c.Do("GET", "/v0/accounts/account_00000000000000000000000000", nil), 404)
	mustStatus(t, client(t, s, "globex").Do("GET", "/v0/accounts/"+accID, nil), 404)
}

func TestLogs(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	pid := createPerson(t, c, map[string]any{"name": "Logged"})["personId"].(string)
	aid := createAccount(t, c, map[string]any{"domain": "logged.example"})["accountId"].(string)
	for _, tc := range []struct{ base, idKey, ownerKey, owner string }{
		{"/v0/persons/" + pid + "/logs", "personLogId", "personId", pid},
		{"/v0/accounts/" + aid + "/logs", "accountLogId", "accountId", aid},
	} {
		body := map[string]any{"source": "crm-sync", "type": "deal-won", "payload": map[string]any{"amount": 9007199254740991, "nested": map[string]any{"a": []any{1, "x"}}},
			"idempotencyKey": "k-1"}
		first := mustStatus(t, c.Do("POST", tc.base, body), 201)
		id := first[tc.idKey].(string)
		if first[tc.ownerKey] != tc.owner || first["updatedAt"] != nil || first["deletedAt"] != nil || first["idempotencyKey"] != "k-1" {
			t.Fatalf("first = %v", first)
		}
		if r := c.Do("POST", tc.base, body); r.Status != 200 || r.Map()[tc.idKey] != id {
			t.Fatalf("replay: %s", r)
		}
		if !strings.Contains(string(c.Do("GET", tc.base+"/"+id, nil).Body), "9007199254740991") {
			t.Fatal("the payload's large integer was not kept exactly")
		}
		body["payload"] = map[string]any{"amount": 2}
		if r := c.Do("POST", tc.base, body); r.Status != 409 {
			t.Fatalf("key reuse with another body: %s", r)
		}

		// Concurrent identical requests make one entry.
		same := map[string]any{"source": "web", "type": "signup", "payload": map[string]any{"n": 1}, "idempotencyKey": "race"}
		var wg sync.WaitGroup
		var mu sync.Mutex
		got := map[string]int{}
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := c.Do("POST", tc.base, same)
				if r.Status != 201 && r.Status != 200 {
					t.Errorf("concurrent: %s", r)
					return
				}
				mu.Lock()
				got[r.Map()[tc.idKey].(string)]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(got) != 1 {
			t.Fatalf("concurrent identical requests made %d entries", len(got))
		}
		// Without a key, each request is an entry.
		plain := mustStatus(t, c.Do("POST", tc.base, map[string]any{"source": "web", "type": "signup", "payload": map[string]any{}}), 201)
		mustStatus(t, c.Do("POST", tc.base, map[string]any{"source": "web", "type": "signup", "payload": map[string]any{}, "idempotencyKey": nil}), 201)

		list := mustStatus(t, c.Do("GET", tc.base, nil), 200)
		if list["totalCount"] != 4.0 || items(list)[0][tc.idKey] == id {
			t.Fatalf("list (newest first) = %v", list)
		}
		mustStatus(t, c.Do("DELETE", tc.base+"/"+plain[tc.idKey].(string), nil), 204)
		mustStatus(t, c.Do("DELETE", tc.base+"/"+plain[tc.idKey].(string), nil), 204)
		del := mustStatus(t, c.Do("GET", tc.base+"/"+plain[tc.idKey].(string), nil), 200)
		if del["deletedAt"] == nil || del["updatedAt"] != del["deletedAt"] {
			t.Fatalf("deleted entry = %v", del)
		}
		if n := mustStatus(t, c.Do("GET", tc.base, nil), 200)["totalCount"]; n != 3.0 {
			t.Fatalf("after delete: %v", n)
		}
		if n := mustStatus(t, c.Do("GET", tc.base+"?includeDeleted=true", nil), 200)["totalCount"]; n != 4.0 {
			t.Fatalf("with deleted: %v", n)
		}
		// Walk two at a time.
		var walked []string
		path := tc.base + "?limit=2&includeDeleted=1"
		for {
			page := mustStatus(t, c.Do("GET", path, nil), 200)
			for _, it := range items(page) {
				walked = append(walked, it[tc.idKey].(string))
			}
			if page["nextCursor"] == nil {
				break
			}
			path = tc.base + "?limit=2&includeDeleted=1&cursor=" + url.QueryEscape(page["nextCursor"].(string))
		}
		if len(walked) != 4 || walked[3] != id {
			t.Fatalf("walk = %v", walked)
		}
		mustStatus(t, c.Do("GET", tc.base+"/nope", nil), 404)
		mustStatus(t, c.Do("DELETE", tc.base+"/nope", nil), 404)
	}
	// Entries are not found under another owner, or for a missing owner.
	other := createPerson(t, c, map[string]any{"name": "Other"})["personId"].(string)
	id := mustStatus(t, c.Do("POST", "/v0/persons/"+pid+"/logs", map[string]any{"source": "a", "type": "b", "payload": map[string]any{}}), 201)["personLogId"].(string)
	mustStatus(t, c.Do("GET", "/v0/persons/"+other+"/logs/"+id, nil), 404)
	mustStatus(t, c.Do("GET", "/v0/persons/person_missing/logs", nil), 404)
	mustStatus(t, c.Do("POST", "/v0/persons/person_missing/logs", map[string]any{"source": "a", "type": "b", "payload": map[string]any{}}), 404)
	mustStatus(t, c.Do("GET", "/v0/accounts/account_00000000000000000000000000/logs", nil), 404)
	// Deleting a person deletes its logs.
	mustStatus(t, c.Do("DELETE", "/v0/persons/"+pid, nil), 204)
	mustStatus(t, c.Do("GET", "/v0/persons/"+pid+"/logs/"+id, nil), 404)
}

func TestBadInputIs400(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	pid := createPerson(t, c, map[string]any{"name": "Valid"})["personId"].(string)
	aid := createAccount(t, c, map[string]any{"domain": "valid.example"})["accountId"].(string)
	plog, alog := "/v0/persons/"+pid+"/logs", "/v0/accounts/"+aid+"/logs"
	okLog := func(k string, v any) map[string]any {
		m := map[string]any{"source": "crm", "type": "note", "payload": map[string]any{}}
		m[k] = v
		return m
	}
	long := func(n int) string { return strings.Repeat("a", n) }
	for name, tc := range map[string]struct {
		method, path string
		body         any
		want         string
	}{
		"person: malformed":        {"POST", "/v0/persons", apitest.Raw(`{"name":`), "body:invalid_json:[]"},
		"person: missing name":     {"POST", "/v0/persons", map[string]any{}, "body:invalid_type:[name]"},
		"person: empty name":       {"POST", "/v0/persons", map[string]any{"name": ""}, "body:too_small:[name]"},
		"person: long name":        {"POST", "/v0/persons", map[string]any{"name": long(256)}, "body:too_big:[name]"},
		"person: name type":        {"POST", "/v0/persons", map[string]any{"name": 1}, "body:invalid_type:[name]"},
		"person: bad email":        {"POST", "/v0/persons", map[string]any{"name": "x", "email": "not-an-email"}, "body:invalid_string:[email]"},
		"person: empty domain":     {"POST", "/v0/persons", map[string]any{"name": "x", "domain": ""}, "body:too_small:[domain]"},
		"person: bad domain":       {"POST", "/v0/persons", map[string]any{"name": "x", "domain": "no spaces.com"}, "body:invalid_string:[domain]"},
		"person: one-label domain": {"POST", "/v0/persons", map[string]any{"name": "x", "domain": "localhost"}, "body:invalid_string:[domain]"},
		"person: bad phone":        {"POST", "/v0/persons", map[string]any{"name": "x", "phoneNumber": "call me"}, "body:invalid_string:[phoneNumber]"},
		"person: short phone":      {"POST", "/v0/persons", map[string]any{"name": "x", "phoneNumber": "+1 2"}, "body:invalid_string:[phoneNumber]"},
		"person: late plus":        {"POST", "/v0/persons", map[string]any{"name": "x", "phoneNumber": "12+345"}, "body:invalid_string:[phoneNumber]"},
		"person: email no domain":  {"POST", "/v0/persons", map[string]any{"name": "x", "email": "ada@"}, "body:invalid_string:[email]"},
		"person: no body":          {"POST", "/v0/persons", nil, "body:invalid_type:[]"},
		"person: empty linkedin":   {"POST", "/v0/persons", map[string]any{"name": "x", "linkedinProfileUrl": ""}, "body:too_small:[linkedinProfileUrl] body:invalid_string:[linkedinProfileUrl]"},
		"person: bad linkedin":     {"POST", "/v0/persons", map[string]any{"name": "x", "linkedinProfileUrl": "linkedin.com/in/x"}, "body:invalid_string:[linkedinProfileUrl]"},
		"person: unknown field":    {"POST", "/v0/persons", map[string]any{"name": "x", "slug": "mine"}, "body:unrecognized_keys:[slug]"},
		"person: array body":       {"POST", "/v0/persons", apitest.Raw(`[]`), "body:invalid_type:[]"},
		"patch: null name":         {"PATCH", "/v0/persons/" + pid, map[string]any{"name": nil}, "body:invalid_type:[name]"},
		"patch: empty name":        {"PATCH", "/v0/persons/" + pid, map[string]any{"name": ""}, "body:too_small:[name]"},
		"patch: bad email":         {"PATCH", "/v0/persons/" + pid, map[string]any{"email": "@x"}, "body:invalid_string:[email]"},
		"patch: unknown":           {"PATCH", "/v0/persons/" + pid, map[string]any{"personId": "x"}, "body:unrecognized_keys:[personId]"},
		"patch: bad linkedin":      {"PATCH", "/v0/persons/" + pid, map[string]any{"linkedinProfileUrl": "ftp://x.example/in/a"}, "body:invalid_string:[linkedinProfileUrl]"},
		"patch: bad domain":        {"PATCH", "/v0/persons/" + pid, map[string]any{"domain": "not a host"}, "body:invalid_string:[domain]"},
		"patch: no body":           {"PATCH", "/v0/persons/" + pid, nil, "body:invalid_type:[]"},
		"patch: only white space":  {"PATCH", "/v0/persons/" + pid, apitest.Raw(" \n "), "body:invalid_json:[]"},
		"search: long query":       {"GET", "/v0/persons/search?query=" + long(201), nil, "query:too_big:[query]"},
		"search: limit 0":          {"GET", "/v0/persons/search?limit=0", nil, "query:too_small:[limit]"},
		"search: limit abc":        {"GET", "/v0/persons/search?limit=abc", nil, "query:invalid_type:[limit]"},
		"search: bad cursor":       {"GET", "/v0/persons/search?cursor=abc.def", nil, "query:invalid_cursor:[cursor]"},
		"search: query twice":      {"GET", "/v0/persons/search?query=a&query=b", nil, "query:invalid_type:[query]"},
		"account: missing domain":  {"POST", "/v0/accounts", map[string]any{}, "body:invalid_type:[domain]"},
		"account: empty domain":    {"POST", "/v0/accounts", map[string]any{"domain": ""}, "body:too_small:[domain]"},
		"account: bad domain":      {"POST", "/v0/accounts", map[string]any{"domain": "https://"}, "body:invalid_string:[domain]"},
		"account: empty name":      {"POST", "/v0/accounts", map[string]any{"domain": "a.example", "name": ""}, "body:too_small:[name]"},
		"account: long name":       {"POST", "/v0/accounts", map[string]any{"domain": "a.example", "name": long(256)}, "body:too_big:[name]"},
		"account: null name":       {"POST", "/v0/accounts", map[string]any{"domain": "a.example", "name": nil}, "body:invalid_type:[name]"},
		"account: unknown":         {"POST", "/v0/accounts", map[string]any{"domain": "a.example", "x": 1}, "body:unrecognized_keys:[x]"},
		"accounts: empty flag":     {"GET", "/v0/accounts?includeEmptyOnly=maybe", nil, "query:invalid_enum_value:[includeEmptyOnly]"},
		"accounts: FALSE":          {"GET", "/v0/accounts?includeEmptyOnly=FALSE", nil, "query:invalid_enum_value:[includeEmptyOnly]"},
		"account: no body":         {"POST", "/v0/accounts", nil, "body:invalid_type:[]"},
		"accounts: limit 101":      {"GET", "/v0/accounts?limit=101", nil, "query:too_big:[limit]"},
		"account: malformed id":    {"GET", "/v0/accounts/acct_1", nil, "path:invalid_string:[account_id]"},
		"account logs: bad id":     {"GET", "/v0/accounts/account_UPPER000000000000000000000/logs", nil, "path:invalid_string:[account_id]"},
		"account log: bad id":      {"DELETE", "/v0/accounts/x/logs/y", nil, "path:invalid_string:[account_id]"},
		"log: missing source":      {"POST", plog, map[string]any{"type": "note", "payload": map[string]any{}}, "body:invalid_type:[source]"},
		"log: bad source":          {"POST", plog, okLog("source", "Not Kebab"), "body:invalid_string:[source]"},
		"log: long type":           {"POST", plog, okLog("type", long(101)), "body:too_big:[type]"},
		"log: bad type":            {"POST", alog, okLog("type", "a--b"), "body:invalid_string:[type]"},
		"log: payload array":       {"POST", plog, okLog("payload", []any{1}), "body:invalid_type:[payload]"},
		"log: payload null":        {"POST", alog, okLog("payload", nil), "body:invalid_type:[payload]"},
		"log: missing payload":     {"POST", plog, map[string]any{"source": "a", "type": "b"}, "body:invalid_type:[payload]"},
		"log: big payload":         {"POST", plog, okLog("payload", map[string]any{"x": long(70000)}), "body:too_big:[payload]"},
		"log: empty key":           {"POST", plog, okLog("idempotencyKey", ""), "body:too_small:[idempotencyKey]"},
		"log: long key":            {"POST", alog, okLog("idempotencyKey", long(256)), "body:too_big:[idempotencyKey]"},
		"log: unknown":             {"POST", plog, okLog("createdAt", "2026-01-01T00:00:00Z"), "body:unrecognized_keys:[createdAt]"},
		"logs: deleted flag":       {"GET", plog + "?includeDeleted=yes", nil, "query:invalid_enum_value:[includeDeleted]"},
		"logs: TRUE":               {"GET", alog + "?includeDeleted=TRUE", nil, "query:invalid_enum_value:[includeDeleted]"},
		"logs: limit":              {"GET", alog + "?limit=-1", nil, "query:too_small:[limit]"},
		"logs: foreign cursor": {"GET", plog + "?cursor=" + url.QueryEscape(
			mustCursor(t, c, "/v0/accounts?limit=1")), nil, "query:invalid_cursor:[cursor]"},
	} {
		r := c.Do(tc.method, tc.path, tc.body)
		if r.Status != 400 || fmt.Sprint(issueCodes(r)) != "["+tc.want+"]" {
			t.Errorf("%s: %d %v", name, r.Status, issueCodes(r))
		}
	}
	if r := c.Do("POST", "/v0/persons", apitest.Raw(`{"name":"`+long(1<<20)+`"}`)); r.Status != 400 {
		t.Errorf("oversized body: %d", r.Status)
	}
	if r := c.With("Content-Type", "text/plain").Do("POST", "/v0/accounts", apitest.Raw(`{"domain":"t.example"}`)); r.Status != 400 {
		t.Errorf("text/plain body: %d", r.Status)
	}
}

// mustCursor returns the nextCursor of a list with more than one page.
func mustCursor(t *testing.T, c *apitest.Client, path string) string {
	t.Helper()
	createAccount(t, c, map[string]any{"domain": fmt.Sprintf("cursor%d.example", time.Now().UnixNano())})
	cur, _ := mustStatus(t, c.Do("GET", path, nil), 200)["nextCursor"].(string)
	if cur == "" {
		t.Fatal("no next cursor")
	}
	return cur
}

func TestTenantIsolation(t *testing.T) {
	s := start(t)
	a, b := client(t, s, "acme"), client(t, s, "globex")
	pid := createPerson(t, a, map[string]any{"name": "Secret", "email": "s@shared.example"})["personId"].(string)
	lid := mustStatus(t, a.Do("POST", "/v0/persons/"+pid+"/logs", map[string]any{"source": "a", "type": "b", "payload": map[string]any{}}), 201)["personLogId"].(string)
	mustStatus(t, b.Do("GET", "/v0/persons/"+pid, nil), 404)
	mustStatus(t, b.Do("PATCH", "/v0/persons/"+pid, map[string]any{"name": "mine"}), 404)
	mustStatus(t, b.Do("DELETE", "/v0/persons/"+pid, nil), 404)
	mustStatus(t, b.Do("GET", "/v0/persons/"+pid+"/logs/"+lid, nil), 404)
	mustStatus(t, b.Do("GET", "/v0/persons/"+pid+"/logs", nil), 404)
	// Another tenant's account of the same domain links none of acme's persons.
	acc := createAccount(t, b, map[string]any{"domain": "shared.example"})
	if len(acc["linkedPersons"].([]any)) != 0 {
		t.Fatalf("globex account links %v", acc["linkedPersons"])
	}
	createAccount(t, a, map[string]any{"domain": "shared.example"})
	if n := mustStatus(t, b.Do("GET", "/v0/persons/search?query=secret", nil), 200)["totalCount"]; n != 0.0 {
		t.Fatalf("globex finds %v", n)
	}
	anon := &apitest.Client{T: t, Base: s.URL, Contract: contract}
	mustStatus(t, anon.Do("GET", "/v0/persons/search", nil), 401)
}
