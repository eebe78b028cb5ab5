package application_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/tenant"
)

// Odd input never makes a 500: text PostgreSQL cannot store is refused or replaced
// before it reaches the database.
func TestOddInputIsNever500(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	pid := createPerson(t, c, personCreate{Name: "Valid"}).PersonID
	aid := createAccount(t, c, accountCreate{Domain: "valid.example"}).AccountID
	plog, alog := "/v0/persons/"+pid+"/logs", "/v0/accounts/"+aid+"/logs"
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	logBody := func(payload string) apitest.Raw {
		return apitest.Raw(`{"source":"a","type":"b","payload":` + payload + `}`)
	}
	for name, tc := range map[string]struct {
		method, path string
		body         any
		status       int
		want         string // a part of the answer
	}{
		"unpaired surrogate in payload": {"POST", plog, logBody(`{"x":"\ud800"}`), 201, "\"payload\":{\"x\":\"\ufffd\"}"},
		"unpaired surrogate in a key":   {"POST", alog, logBody(`{"\udfff":1}`), 201, "\"payload\":{\"\ufffd\":1}"},
		"invalid UTF-8 in payload":      {"POST", plog, logBody("{\"x\":\"\xff\"}"), 400, `invalid_json`},
		"NUL in payload":                {"POST", plog, logBody(`{"x":"a\u0000"}`), 400, `payload.x`},
		"number beyond float64":         {"POST", plog, logBody(`{"x":1e400}`), 400, `payload`},
		"number beyond numeric":         {"POST", alog, logBody(`{"x":1e-20000}`), 400, `"path":["payload"]`},
		"deep payload":                  {"POST", plog, logBody(`{"x":` + deep + `}`), 400, `more than 64 levels deep`},
		"payload at the depth limit":    {"POST", plog, logBody(`{"x":` + strings.Repeat("[", 62) + strings.Repeat("]", 62) + `}`), 201, `[[[`},
		"exact big integer":             {"POST", plog, logBody(`{"x":123456789012345678901234567890}`), 201, `123456789012345678901234567890`},
		"invalid UTF-8 in name":         {"POST", "/v0/persons", apitest.Raw("{\"name\":\"\xff\"}"), 400, `invalid_json`},
		"unpaired surrogate in name":    {"POST", "/v0/persons", apitest.Raw(`{"name":"\ud800"}`), 201, "\"name\":\"\ufffd\""},
		"non-ASCII email domain":        {"POST", "/v0/persons", personCreate{Name: "x", Email: "ü@bücher.example"}, 201, `"domain":null`},
		"LIKE wildcards and backslash":  {"GET", "/v0/persons/search?query=%25%5C_", nil, 200, `"totalCount":0`},
		"search limit overflow":         {"GET", "/v0/persons/search?limit=99999999999999999999999", nil, 400, `limit`},
		"empty cursor":                  {"GET", "/v0/persons/search?cursor=", nil, 400, `cursor`},
		"limit twice":                   {"GET", "/v0/accounts?limit=1&limit=2", nil, 400, `limit`},
		"escaped NUL in log ID":         {"GET", plog + "/%00", nil, 404, `NOT_FOUND`},
		"long log ID":                   {"GET", alog + "/" + strings.Repeat("y", 3000), nil, 404, `NOT_FOUND`},
		"null body":                     {"POST", "/v0/accounts", apitest.Raw(`null`), 400, `VALIDATION_ERROR`},
		"no patch body":                 {"PATCH", "/v0/persons/" + pid, apitest.Raw(``), 400, `"code":"invalid_type"`},
		"white-space patch body":        {"PATCH", "/v0/persons/" + pid, apitest.Raw("\t\r\n "), 400, `"code":"invalid_json"`},
		"empty patch object":            {"PATCH", "/v0/persons/" + pid, apitest.Raw(`{}`), 200, `"name":"Valid"`},
		"payload string":                {"POST", alog, logBody(`"x"`), 400, `payload`},
	} {
		r := c.Do(tc.method, tc.path, tc.body)
		if r.Status >= 500 || tc.status != 0 && (r.Status != tc.status || !strings.Contains(string(r.Body), tc.want)) {
			t.Errorf("%s %s with %s must never be a 5xx; it must answer %d with %s in the body; got %s",
				tc.method, tc.path, name, tc.status, tc.want, r)
		}
	}
	// Bytes that are not UTF-8 in a path (a client that does not escape them) name nothing.
	for _, p := range []string{"/v0/persons/\xff\xfe", plog + "/\xff", "/v0/persons/\xff/logs", "/v0/accounts/" + aid + "/logs/\xff"} {
		if status := rawGet(t, s, p); status != 404 {
			t.Errorf("a path with bytes that are not UTF-8 names nothing, so GET %q must be a 404; got %d", p, status)
		}
	}
}

// rawGet sends a GET for tenant acme with the path exactly as given (net/http would
// escape it) and returns the status.
func rawGet(t *testing.T, s *servicetest.Service, path string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	signed := &http.Request{Header: http.Header{}}
	signed.Header.Set(tenant.Header, "acme")
	s.Sign(signed)
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: persons\r\nConnection: close\r\n", path)
	_ = signed.Header.Write(conn)
	fmt.Fprint(conn, "\r\n")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// Search ignores case for every letter, not only ASCII ones, and finds 1- and
// 2-character queries anywhere.
func TestSearchFoldsUnicodeCase(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	emile := createPerson(t, c, personCreate{Name: "Émile Zola", Email: "EMILE@Zola.example"}).PersonID
	muller := createPerson(t, c, personCreate{Name: "JÜRGEN MÜLLER"}).PersonID
	createPerson(t, c, personCreate{Name: "Plain Person"})
	for q, want := range map[string][]string{
		"Émile": {emile}, "émile": {emile}, "ÉMILE": {emile}, "emile": {emile}, "müller": {muller}, "Jürgen": {muller},
		"é": {emile}, "ü": {muller}, "Ü": {muller}, "zo": {emile}, "Z": {emile}, "q": nil, "@z": {emile}, "%": nil,
	} {
		page := searchFor(t, c, q)
		if fmt.Sprint(page.ids()) != fmt.Sprint(want) || page.total() != len(want) {
			t.Errorf("a search must fold the case of every letter, not only ASCII, and find 1- and 2-character queries anywhere;"+
				" for %q want %v, got %v (totalCount %d)", q, want, page.ids(), page.total())
		}
	}
	// A rename moves what search finds.
	patchPerson(t, c, muller, personUpdate{Name: "Jürgen Schön"})
	if n := searchFor(t, c, "SCHÖN").total(); n != 1 {
		t.Errorf("a search must find a person by its new name after a rename (SCHÖN finds Jürgen Schön); got totalCount %d", n)
	}
}

// Two requests creating an account of the same domain at once: one 201, the other 409.
func TestConcurrentAccountCreatesMakeOne(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := c.Do("POST", "/v0/accounts", accountCreate{Domain: fmt.Sprintf("https://www.Race.example/%d", i)})
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	if statuses[201] != 1 || statuses[409] != 7 {
		t.Fatalf("of 8 concurrent creates of one normalised domain exactly one must succeed (201) and 7 conflict (409); got statuses %v", statuses)
	}
	if n := listAccounts(t, c, "").TotalCount; n != 1 {
		t.Fatalf("concurrent creates of one domain must make one account; there are %d", n)
	}
}

// Concurrent patches of different fields both land (the row is locked for the change).
func TestConcurrentPatchesLoseNothing(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	id := createPerson(t, c, personCreate{Name: "Racer"}).PersonID
	var wg sync.WaitGroup
	for _, body := range []personUpdate{
		{PhoneNumber: "+1 555 0100"}, {LinkedinProfileURL: "https://www.linkedin.com/in/racer"}, {Email: "racer@race.example"},
		{Name: "Racer Two"},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := c.Do("PATCH", "/v0/persons/"+id, body); r.Status != 200 {
				t.Errorf("a valid patch must succeed (200) while others patch the same person; %+v got %s", body, r)
			}
		}()
	}
	wg.Wait()
	got := getPerson(t, c, id)
	if !is(got.PhoneNumber, "+1 555 0100") || got.LinkedinProfileURL == nil || !is(got.Email, "racer@race.example") ||
		!is(got.Domain, "race.example") || got.Name != "Racer Two" {
		t.Fatalf("concurrent patches of different fields must all land (phoneNumber +1 555 0100, a linkedinProfileUrl, email"+
			" racer@race.example and its domain race.example, name Racer Two); got %+v", got)
	}
}

// Another tenant's account and its logs are 404s, and its accounts are not listed.
func TestAccountTenantIsolation(t *testing.T) {
	s := start(t)
	a, b := client(t, s, "acme"), client(t, s, "globex")
	aid := createAccount(t, a, accountCreate{Domain: "private.example"}).AccountID
	anyLog := logCreate{Source: "a", Type: "b", Payload: map[string]any{}}
	lid := writeLog(t, a, "/v0/accounts/"+aid+"/logs", anyLog).AccountLogID
	apitest.ExpectNotFound(t, b.Do("GET", "/v0/accounts/"+aid, nil), "another tenant's account must not be found")
	apitest.ExpectNotFound(t, b.Do("GET", "/v0/accounts/"+aid+"/logs", nil), "another tenant's account log must not be listed")
	apitest.ExpectNotFound(t, b.Do("POST", "/v0/accounts/"+aid+"/logs", anyLog), "another tenant's account log must not be writable")
	apitest.ExpectNotFound(t, b.Do("GET", "/v0/accounts/"+aid+"/logs/"+lid, nil), "another tenant's account log entry must not be found")
	apitest.ExpectNotFound(t, b.Do("DELETE", "/v0/accounts/"+aid+"/logs/"+lid, nil), "another tenant's account log entry must not be deletable")
	if n := listAccounts(t, b, "").TotalCount; n != 0 {
		t.Fatalf("a tenant must not list another tenant's accounts; globex lists %d", n)
	}
	got := apitest.Decode[Log](t, a.Do("GET", "/v0/accounts/"+aid+"/logs/"+lid, nil), 200, "an account log entry must be readable by its ID")
	if got.DeletedAt != nil {
		t.Fatalf("another tenant's DELETE must not delete the entry; acme's entry has deletedAt %s", *got.DeletedAt)
	}
}
