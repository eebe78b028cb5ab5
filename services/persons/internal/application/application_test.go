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

	p := createPerson(t, c, personCreate{Name: "Ada Lovelace", Email: "Ada@Analytical.example.COM"})
	id := p.PersonID
	if !strings.HasPrefix(id, "person_") {
		t.Errorf("a person ID must be a TypeID with prefix person_; got %q", id)
	}
	if !is(p.Domain, "analytical.example.com") {
		t.Errorf("a person created without domain must get its email's domain in lower case (analytical.example.com); got %s", str(p.Domain))
	}
	if p.Slug != "ada-lovelace" {
		t.Errorf("a person's slug must be made from its name (ada-lovelace); got %q", p.Slug)
	}
	if p.PhoneNumber != nil || p.LinkedinProfileURL != nil {
		t.Errorf("a person created without phoneNumber and linkedinProfileUrl must read back with both null; got %s and %s",
			str(p.PhoneNumber), str(p.LinkedinProfileURL))
	}
	if p.CreatedAt != p.UpdatedAt {
		t.Errorf("a new person's updatedAt must equal its createdAt; got createdAt %s, updatedAt %s", p.CreatedAt, p.UpdatedAt)
	}
	// The same name gets another slug; a given domain wins over the email's.
	twin := createPerson(t, c, personCreate{Name: "Ada  Lovelace!", Email: "ada@other.example", Domain: "https://WWW.Given.example/about"})
	if twin.Slug == "ada-lovelace" || !strings.HasPrefix(twin.Slug, "ada-lovelace-") {
		t.Errorf("a second person of the same name must get another slug, ada-lovelace-…; got %q", twin.Slug)
	}
	if !is(twin.Domain, "given.example") {
		t.Errorf("a given domain must win over the email's, normalised (given.example); got %s", str(twin.Domain))
	}
	if got := getPerson(t, c, id); got.Name != "Ada Lovelace" {
		t.Fatalf("a person must read back with the name it was created with (Ada Lovelace); got %q", got.Name)
	}

	waitForClockPast(t, p.UpdatedAt)
	// A new email moves a derived domain along; the slug stays.
	up := patchPerson(t, c, id, personUpdate{Name: "Ada King", Email: "ada@babbage.example",
		PhoneNumber: "+44 20 7946 0000", LinkedinProfileURL: "https://www.linkedin.com/in/ada"})
	if !is(up.Domain, "babbage.example") {
		t.Errorf("a domain derived from the email must follow a new email (babbage.example); got %s", str(up.Domain))
	}
	if up.Slug != "ada-lovelace" {
		t.Errorf("a slug must never change, not even with the name; want ada-lovelace, got %q", up.Slug)
	}
	if up.Name != "Ada King" || !is(up.PhoneNumber, "+44 20 7946 0000") {
		t.Errorf("a patch must set the fields it names; want name Ada King and phoneNumber +44 20 7946 0000, got %q and %s",
			up.Name, str(up.PhoneNumber))
	}
	if up.UpdatedAt == up.CreatedAt {
		t.Errorf("a patch that changes a person must move updatedAt past createdAt; both are %s", up.UpdatedAt)
	}
	// An explicit domain is kept when the email changes later.
	patchPerson(t, c, id, personUpdate{Domain: "Kept.example"})
	up = patchPerson(t, c, id, personUpdate{Email: "ada@elsewhere.example"})
	if !is(up.Domain, "kept.example") {
		t.Fatalf("a domain that was given explicitly must stay when the email changes (kept.example); got %s", str(up.Domain))
	}
	if same := patchPerson(t, c, id, personUpdate{}); same.UpdatedAt != up.UpdatedAt {
		t.Errorf("an empty patch changes nothing, so it must not move updatedAt; was %s, now %s", up.UpdatedAt, same.UpdatedAt)
	}
	// Explicit nulls clear fields, which only a map can send.
	cleared := patchPerson(t, c, id, map[string]any{"email": nil, "domain": nil, "phoneNumber": nil})
	if cleared.Email != nil || cleared.Domain != nil || cleared.PhoneNumber != nil {
		t.Fatalf("a patch with null email, domain and phoneNumber must clear them; got %s, %s, %s",
			str(cleared.Email), str(cleared.Domain), str(cleared.PhoneNumber))
	}

	apitest.ExpectStatus(t, c.Do("DELETE", "/v0/persons/"+id, nil), 204, "deleting an existing person must answer 204")
	apitest.ExpectNotFound(t, c.Do("GET", "/v0/persons/"+id, nil), "a deleted person must no longer be found")
	apitest.ExpectNotFound(t, c.Do("DELETE", "/v0/persons/"+id, nil), "deleting a deleted person again must be a 404")
	apitest.ExpectNotFound(t, c.Do("PATCH", "/v0/persons/"+id, personUpdate{Name: "x"}), "patching a deleted person must be a 404")
	// A deleted person's slug is free again.
	again := createPerson(t, c, personCreate{Name: "Ada Lovelace"})
	if again.Slug != "ada-lovelace" {
		t.Errorf("a deleted person's slug must be free again (ada-lovelace); got %q", again.Slug)
	}
	if again.Domain != nil {
		t.Errorf("a person created with neither email nor domain must have domain null; got %s", str(again.Domain))
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
			r := c.Do("POST", "/v0/persons", personCreate{Name: "Grace Hopper"})
			if r.Status != 201 {
				t.Errorf("creating persons of the same name concurrently must succeed (201); got %s", r)
				return
			}
			p, err := apitest.DecodeBody[Person](r)
			if err != nil {
				t.Errorf("a created person must decode as a Person: %v\n%s", err, r.Body)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if slugs[p.Slug] {
				t.Errorf("slugs are unique per tenant, even under concurrent creates; %s was given twice", p.Slug)
			}
			slugs[p.Slug] = true
		}()
	}
	wg.Wait()
	if !slugs["grace-hopper"] {
		t.Fatalf("one of the persons created concurrently must get the plain slug grace-hopper; slugs given: %v", slugs)
	}
}

func TestSearch(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	other := client(t, s, "globex")
	var all []string
	for _, p := range []personCreate{
		{Name: "Marie Curie", Email: "marie@radium.example"},
		{Name: "Pierre Curie", Email: "pierre@sorbonne.example"},
		{Name: "Lise Meitner", Domain: "fission.example"},
		{Name: "Percent 100% Sure", Email: "under_score@x.example"},
		{Name: "Rosalind Franklin"},
	} {
		all = append(all, createPerson(t, c, p).PersonID)
	}
	createPerson(t, other, personCreate{Name: "Marie Other Tenant"})
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
		page := searchFor(t, c, q)
		if fmt.Sprint(page.ids()) != fmt.Sprint(want) || page.total() != len(want) {
			t.Errorf("a search for %q must find, case-insensitively in name, email and domain and with %% and _ taken literally,"+
				" exactly %v of the tenant's persons; got %v (totalCount %d)", q, want, page.ids(), page.total())
		}
	}
	// An empty query lists everyone of the tenant; walking pages yields each once.
	var walked []string
	query := "?limit=2"
	for {
		page := searchPersons(t, c, query)
		if page.total() != 5 {
			t.Fatalf("a search with no query must count every person of the tenant (5); got totalCount %d", page.total())
		}
		walked = append(walked, page.ids()...)
		if page.NextCursor == nil {
			break
		}
		query = "?limit=2&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	if fmt.Sprint(walked) != fmt.Sprint(all) {
		t.Fatalf("walking an empty query's pages must yield every person of the tenant once, by creation; got %v, want %v", walked, all)
	}
	// A cursor belongs to its query.
	first := searchPersons(t, c, "?query=curie&limit=1")
	cur := nextCursor(t, first.HasMore, first.NextCursor, "a search for curie of limit 1 over 2 matches")
	apitest.ExpectError(t, c.Do("GET", "/v0/persons/search?query=marie&cursor="+url.QueryEscape(cur), nil), 400, "VALIDATION_ERROR",
		"a search cursor belongs to its query, so one used with another query must be refused")
	next := searchPersons(t, c, "?query=curie&limit=1&cursor="+url.QueryEscape(cur))
	if fmt.Sprint(next.ids()) != fmt.Sprint([]string{all[1]}) || next.HasMore {
		t.Fatalf("the second page of a search for curie of limit 1 must hold %s alone and be the last (hasMore false); got %v, hasMore %v",
			all[1], next.ids(), next.HasMore)
	}
}

func TestAccountsLinkPersonsBothWays(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	before := createPerson(t, c, personCreate{Name: "Early Bird", Email: "early@acme.example"})

	acc := createAccount(t, c, accountCreate{Domain: "https://www.ACME.example/", Name: "Acme"})
	accID := acc.AccountID
	if acc.Domain != "acme.example" {
		t.Errorf("an account's domain must be normalised (no scheme, www. or path; lower case): want acme.example, got %q", acc.Domain)
	}
	if !is(acc.Name, "Acme") {
		t.Errorf("an account must read back with the name it was created with (Acme); got %s", str(acc.Name))
	}
	if len(acc.LinkedPersons) != 1 || acc.LinkedPersons[0].PersonID != before.PersonID {
		t.Fatalf("a new account must link the persons of its domain that exist already (%s); got %v", before.PersonID, personIDs(acc.LinkedPersons))
	}
	if !is(acc.LatestActivityAt, before.UpdatedAt) {
		t.Fatalf("an account's latestActivityAt must be the last change of its linked person (%s); got %s", before.UpdatedAt, str(acc.LatestActivityAt))
	}
	apitest.ExpectError(t, c.Do("POST", "/v0/accounts", accountCreate{Domain: "acme.example."}), 409, "CONFLICT",
		"a second account of the same normalised domain must be refused")

	after := createPerson(t, c, personCreate{Name: "Late Comer", Email: "late@other.example", Domain: "acme.example"})
	got := getAccount(t, c, accID)
	if len(got.LinkedPersons) != 2 || got.LinkedPersons[1].PersonID != after.PersonID {
		t.Fatalf("a person created later with the account's domain must be linked to it, after the earlier one; want [%s %s], got %v",
			before.PersonID, after.PersonID, personIDs(got.LinkedPersons))
	}
	if !is(got.LatestActivityAt, after.UpdatedAt) {
		t.Fatalf("an account's latestActivityAt must follow its newest linked person (%s); got %s", after.UpdatedAt, str(got.LatestActivityAt))
	}
	// Moving a person to another domain unlinks it.
	patchPerson(t, c, before.PersonID, personUpdate{Domain: "elsewhere.example"})

	empty := createAccount(t, c, accountCreate{Domain: "empty.example"})
	if empty.Name != nil || empty.LatestActivityAt != nil || empty.LinkedPersons == nil || len(empty.LinkedPersons) != 0 {
		t.Fatalf("an account without name and persons must have name null, latestActivityAt null and linkedPersons []; got %s, %s, %v",
			str(empty.Name), str(empty.LatestActivityAt), empty.LinkedPersons)
	}
	list := listAccounts(t, c, "")
	if list.TotalCount != 2 || len(list.Items) != 2 {
		t.Fatalf("the account list must hold and count both accounts; got totalCount %d and %d items", list.TotalCount, len(list.Items))
	}
	its := list.Items
	if its[0].AccountID != accID || its[0].LinkedPersonsCount != 1 || its[1].LinkedPersonsCount != 0 {
		t.Fatalf("the account list must be by creation with each account's count of linked persons (the moved person unlinked);"+
			" want %s with 1 then %s with 0, got %s with %d then %s with %d",
			accID, empty.AccountID, its[0].AccountID, its[0].LinkedPersonsCount, its[1].AccountID, its[1].LinkedPersonsCount)
	}
	if len(its[0].LinkedPersons) != 0 {
		t.Fatalf("account list items carry linkedPersonsCount, not linkedPersons; got linkedPersons %s", its[0].LinkedPersons)
	}
	emptyOnly := listAccounts(t, c, "?includeEmptyOnly=true")
	if emptyOnly.TotalCount != 1 || len(emptyOnly.Items) == 0 || emptyOnly.Items[0].AccountID != empty.AccountID {
		t.Fatalf("includeEmptyOnly=true must list only the accounts without linked persons (%s); got totalCount %d, items %v",
			empty.AccountID, emptyOnly.TotalCount, accountIDs(emptyOnly.Items))
	}
	// Account logs move latestActivityAt.
	waitForClockPast(t, empty.UpdatedAt)
	l := writeLog(t, c, "/v0/accounts/"+empty.AccountID+"/logs", logCreate{Source: "crm", Type: "note", Payload: map[string]any{"text": "hi"}})
	if got := getAccount(t, c, empty.AccountID); !is(got.LatestActivityAt, l.CreatedAt) {
		t.Fatalf("an account log entry must move the account's latestActivityAt to its createdAt (%s); got %s", l.CreatedAt, str(got.LatestActivityAt))
	}
	// Person logs of a linked person move it too.
	waitForClockPast(t, l.CreatedAt)
	pl := writeLog(t, c, "/v0/persons/"+after.PersonID+"/logs", logCreate{Source: "web", Type: "page-view", Payload: map[string]any{}})
	if got := getAccount(t, c, accID); !is(got.LatestActivityAt, pl.CreatedAt) {
		t.Fatalf("a log entry of a linked person must move the account's latestActivityAt to its createdAt (%s); got %s",
			pl.CreatedAt, str(got.LatestActivityAt))
	}

	// Pagination over accounts, and their 404s.
	first := listAccounts(t, c, "?limit=1")
	cur := nextCursor(t, first.HasMore, first.NextCursor, "an account list of limit 1 over 2 accounts")
	page2 := listAccounts(t, c, "?limit=1&cursor="+url.QueryEscape(cur))
	if len(page2.Items) == 0 || page2.Items[0].AccountID != empty.AccountID || page2.HasMore {
		t.Fatalf("the second page of limit 1 must hold the second account (%s) and be the last; got %v, hasMore %v",
			empty.AccountID, accountIDs(page2.Items), page2.HasMore)
	}
	apitest.ExpectError(t, c.Do("GET", "/v0/accounts?includeEmptyOnly=true&cursor="+url.QueryEscape(cur), nil), 400, "VALIDATION_ERROR",
		"a cursor belongs to its filter, so one used with another includeEmptyOnly must be refused")
	apitest.ExpectNotFound(t, c.Do("GET", "/v0/accounts/account_00000000000000000000000000", nil), "a missing account must be a 404")
	apitest.ExpectNotFound(t, client(t, s, "globex").Do("GET", "/v0/accounts/"+accID, nil), "another tenant's account must not be found")
}

func personIDs(ps []Person) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.PersonID)
	}
	return out
}

func accountIDs(as []AccountListItem) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.AccountID)
	}
	return out
}

func TestLogs(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	pid := createPerson(t, c, personCreate{Name: "Logged"}).PersonID
	aid := createAccount(t, c, accountCreate{Domain: "logged.example"}).AccountID
	for _, tc := range []struct {
		base, owner string
		idOf        func(Log) string // the entry's ID: personLogId or accountLogId
		ownerOf     func(Log) string // its owner: personId or accountId
	}{
		{"/v0/persons/" + pid + "/logs", pid, func(l Log) string { return l.PersonLogID }, func(l Log) string { return l.PersonID }},
		{"/v0/accounts/" + aid + "/logs", aid, func(l Log) string { return l.AccountLogID }, func(l Log) string { return l.AccountID }},
	} {
		body := logCreate{Source: "crm-sync", Type: "deal-won", IdempotencyKey: "k-1",
			Payload: map[string]any{"amount": 9007199254740991, "nested": map[string]any{"a": []any{1, "x"}}}}
		first := writeLog(t, c, tc.base, body)
		id := tc.idOf(first)
		if tc.ownerOf(first) != tc.owner {
			t.Fatalf("a log entry must name its owner (%s); got %q", tc.owner, tc.ownerOf(first))
		}
		if first.UpdatedAt != nil || first.DeletedAt != nil {
			t.Fatalf("a new log entry must have updatedAt and deletedAt null; got %s and %s", str(first.UpdatedAt), str(first.DeletedAt))
		}
		if !is(first.IdempotencyKey, "k-1") {
			t.Fatalf("a log entry must keep the idempotencyKey it was written with (k-1); got %s", str(first.IdempotencyKey))
		}
		replay := apitest.Decode[Log](t, c.Do("POST", tc.base, body), 200, "replaying a write with the same idempotencyKey and body must answer 200")
		if tc.idOf(replay) != id {
			t.Fatalf("a replay must answer the entry first written (%s); got %s", id, tc.idOf(replay))
		}
		if r := c.Do("GET", tc.base+"/"+id, nil); !strings.Contains(string(r.Body), "9007199254740991") {
			t.Fatalf("a log payload must keep its numbers exactly, 9007199254740991 included; got %s", r)
		}
		body.Payload = map[string]any{"amount": 2}
		apitest.ExpectError(t, c.Do("POST", tc.base, body), 409, "CONFLICT", "reusing an idempotencyKey with another body must be refused")

		// Concurrent identical requests make one entry.
		same := logCreate{Source: "web", Type: "signup", Payload: map[string]any{"n": 1}, IdempotencyKey: "race"}
		var wg sync.WaitGroup
		var mu sync.Mutex
		got := map[string]int{}
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := c.Do("POST", tc.base, same)
				if r.Status != 201 && r.Status != 200 {
					t.Errorf("concurrent writes with one idempotencyKey must each create (201) or replay (200); got %s", r)
					return
				}
				l, err := apitest.DecodeBody[Log](r)
				if err != nil {
					t.Errorf("a written log entry must decode as a log: %v\n%s", err, r.Body)
					return
				}
				mu.Lock()
				got[tc.idOf(l)]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(got) != 1 {
			t.Fatalf("concurrent identical requests with one idempotencyKey must make one entry; they made %d: %v", len(got), got)
		}
		// Without a key, each request is an entry.
		plain := writeLog(t, c, tc.base, logCreate{Source: "web", Type: "signup", Payload: map[string]any{}})
		// An explicit null key is the same as none (a map sends the null).
		writeLog(t, c, tc.base, map[string]any{"source": "web", "type": "signup", "payload": map[string]any{}, "idempotencyKey": nil})

		if list := listLogs(t, c, tc.base, ""); list.TotalCount != 4 || len(list.Items) == 0 || tc.idOf(list.Items[0]) == id {
			t.Fatalf("the log must hold 4 entries (k-1, race and two without key), newest first, so not %s first; got totalCount %d, first %v",
				id, list.TotalCount, logIDs(list.Items, tc.idOf))
		}
		plainID := tc.idOf(plain)
		apitest.ExpectStatus(t, c.Do("DELETE", tc.base+"/"+plainID, nil), 204, "deleting a log entry must answer 204")
		apitest.ExpectStatus(t, c.Do("DELETE", tc.base+"/"+plainID, nil), 204, "deleting a deleted log entry again must answer 204 too")
		del := apitest.Decode[Log](t, c.Do("GET", tc.base+"/"+plainID, nil), 200, "a deleted log entry must still be readable by its ID")
		if del.DeletedAt == nil || !is(del.UpdatedAt, *del.DeletedAt) {
			t.Fatalf("a deleted log entry must have deletedAt set and updatedAt equal to it; got deletedAt %s, updatedAt %s",
				str(del.DeletedAt), str(del.UpdatedAt))
		}
		if n := listLogs(t, c, tc.base, "").TotalCount; n != 3 {
			t.Fatalf("a log list must leave deleted entries out (3 of 4 remain); got totalCount %d", n)
		}
		if n := listLogs(t, c, tc.base, "?includeDeleted=true").TotalCount; n != 4 {
			t.Fatalf("a log list with includeDeleted=true must count deleted entries too (4); got totalCount %d", n)
		}
		// Walk two at a time.
		var walked []string
		query := "?limit=2&includeDeleted=1"
		for {
			page := listLogs(t, c, tc.base, query)
			walked = append(walked, logIDs(page.Items, tc.idOf)...)
			if page.NextCursor == nil {
				break
			}
			query = "?limit=2&includeDeleted=1&cursor=" + url.QueryEscape(*page.NextCursor)
		}
		if len(walked) != 4 || walked[3] != id {
			t.Fatalf("walking the log two at a time must yield all 4 entries, newest first, so the first written (%s) last; got %v", id, walked)
		}
		apitest.ExpectNotFound(t, c.Do("GET", tc.base+"/nope", nil), "a missing log entry must be a 404")
		apitest.ExpectNotFound(t, c.Do("DELETE", tc.base+"/nope", nil), "deleting a missing log entry must be a 404")
	}
	// Entries are not found under another owner, or for a missing owner.
	other := createPerson(t, c, personCreate{Name: "Other"}).PersonID
	anyLog := logCreate{Source: "a", Type: "b", Payload: map[string]any{}}
	id := writeLog(t, c, "/v0/persons/"+pid+"/logs", anyLog).PersonLogID
	apitest.ExpectNotFound(t, c.Do("GET", "/v0/persons/"+other+"/logs/"+id, nil), "a person's log entry must not be found under another person")
	apitest.ExpectNotFound(t, c.Do("GET", "/v0/persons/person_missing/logs", nil), "the log of a missing person must be a 404")
	apitest.ExpectNotFound(t, c.Do("POST", "/v0/persons/person_missing/logs", anyLog), "writing to the log of a missing person must be a 404")
	apitest.ExpectNotFound(t, c.Do("GET", "/v0/accounts/account_00000000000000000000000000/logs", nil), "the log of a missing account must be a 404")
	// Deleting a person deletes its logs.
	apitest.ExpectStatus(t, c.Do("DELETE", "/v0/persons/"+pid, nil), 204, "deleting an existing person must answer 204")
	apitest.ExpectNotFound(t, c.Do("GET", "/v0/persons/"+pid+"/logs/"+id, nil), "deleting a person must delete its log entries")
}

func logIDs(ls []Log, idOf func(Log) string) []string {
	var out []string
	for _, l := range ls {
		out = append(out, idOf(l))
	}
	return out
}

func TestBadInputIs400(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	pid := createPerson(t, c, personCreate{Name: "Valid"}).PersonID
	aid := createAccount(t, c, accountCreate{Domain: "valid.example"}).AccountID
	plog, alog := "/v0/persons/"+pid+"/logs", "/v0/accounts/"+aid+"/logs"
	// The bodies are wrong on purpose, so they are maps.
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
			mustCursor(t, c, "?limit=1")), nil, "query:invalid_cursor:[cursor]"},
	} {
		apitest.CheckIssues(t, c.Do(tc.method, tc.path, tc.body), tc.want, tc.method+" with "+name+" must be refused")
	}
	if r := c.Do("POST", "/v0/persons", apitest.Raw(`{"name":"`+long(1<<20)+`"}`)); r.Status != 400 {
		t.Errorf("a body over the size limit must be refused with 400; got %d", r.Status)
	}
	if r := c.With("Content-Type", "text/plain").Do("POST", "/v0/accounts", apitest.Raw(`{"domain":"t.example"}`)); r.Status != 400 {
		t.Errorf("a body that is not sent as application/json must be refused with 400; got %d", r.Status)
	}
}

// mustCursor adds an account and returns the nextCursor of the account list with the
// given query, which must have a next page.
func mustCursor(t *testing.T, c *apitest.Client, query string) string {
	t.Helper()
	createAccount(t, c, accountCreate{Domain: fmt.Sprintf("cursor%d.example", time.Now().UnixNano())})
	page := listAccounts(t, c, query)
	return nextCursor(t, page.HasMore, page.NextCursor, "the account list "+query+" over 2 accounts")
}

func TestTenantIsolation(t *testing.T) {
	s := start(t)
	a, b := client(t, s, "acme"), client(t, s, "globex")
	pid := createPerson(t, a, personCreate{Name: "Secret", Email: "s@shared.example"}).PersonID
	lid := writeLog(t, a, "/v0/persons/"+pid+"/logs", logCreate{Source: "a", Type: "b", Payload: map[string]any{}}).PersonLogID
	apitest.ExpectNotFound(t, b.Do("GET", "/v0/persons/"+pid, nil), "another tenant's person must not be found")
	apitest.ExpectNotFound(t, b.Do("PATCH", "/v0/persons/"+pid, personUpdate{Name: "mine"}), "another tenant's person must not be patchable")
	apitest.ExpectNotFound(t, b.Do("DELETE", "/v0/persons/"+pid, nil), "another tenant's person must not be deletable")
	apitest.ExpectNotFound(t, b.Do("GET", "/v0/persons/"+pid+"/logs/"+lid, nil), "another tenant's person log entry must not be found")
	apitest.ExpectNotFound(t, b.Do("GET", "/v0/persons/"+pid+"/logs", nil), "another tenant's person log must not be listed")
	// Another tenant's account of the same domain links none of acme's persons.
	if acc := createAccount(t, b, accountCreate{Domain: "shared.example"}); len(acc.LinkedPersons) != 0 {
		t.Fatalf("an account must link only its own tenant's persons; globex's shared.example links %v", personIDs(acc.LinkedPersons))
	}
	createAccount(t, a, accountCreate{Domain: "shared.example"})
	if n := searchPersons(t, b, "?query=secret").total(); n != 0 {
		t.Fatalf("a search must find only its own tenant's persons; globex finds %d for secret", n)
	}
	anon := &apitest.Client{T: t, Base: s.URL, Contract: contract}
	apitest.ExpectError(t, anon.Do("GET", "/v0/persons/search", nil), 401, "UNAUTHORIZED", "a request without the gateway's tenant header must be refused")
}
