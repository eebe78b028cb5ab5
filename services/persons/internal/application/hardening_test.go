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
	pid := createPerson(t, c, map[string]any{"name": "Valid"})["personId"].(string)
	aid := createAccount(t, c, map[string]any{"domain": "valid.example"})["accountId"].(string)
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
		"deep payload":                  {"POST", plog, logBody(`{"x":` + deep + `}`), 201, `[[[`},
		"exact big integer":             {"POST", plog, logBody(`{"x":123456789012345678901234567890}`), 201, `123456789012345678901234567890`},
		"invalid UTF-8 in name":         {"POST", "/v0/persons", apitest.Raw("{\"name\":\"\xff\"}"), 400, `invalid_json`},
		"unpaired surrogate in name":    {"POST", "/v0/persons", apitest.Raw(`{"name":"\ud800"}`), 201, "\"name\":\"\ufffd\""},
		"non-ASCII email domain":        {"POST", "/v0/persons", map[string]any{"name": "x", "email": "ü@bücher.example"}, 201, `"domain":null`},
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
			t.Errorf("%s: %s", name, r)
		}
	}
	// Bytes that are not UTF-8 in a path (a client that does not escape them) name nothing.
	for _, p := range []string{"/v0/persons/\xff\xfe", plog + "/\xff", "/v0/persons/\xff/logs", "/v0/accounts/" + aid + "/logs/\xff"} {
		if status := rawGet(t, s, p); status != 404 {
			t.Errorf("GET %q: %d", p, status)
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
	emile := createPerson(t, c, map[string]any{"name": "Émile Zola", "email": "EMILE@Zola.example"})["personId"].(string)
	muller := createPerson(t, c, map[string]any{"name": "JÜRGEN MÜLLER"})["personId"].(string)
	createPerson(t, c, map[string]any{"name": "Plain Person"})
	for q, want := range map[string][]string{
		"Émile": {emile}, "émile": {emile}, "ÉMILE": {emile}, "emile": {emile}, "müller": {muller}, "Jürgen": {muller},
		"é": {emile}, "ü": {muller}, "Ü": {muller}, "zo": {emile}, "Z": {emile}, "q": nil, "@z": {emile}, "%": nil,
	} {
		page := mustStatus(t, c.Do("GET", apitest.Query("/v0/persons/search", "query", q), nil), 200)
		var got []string
		for _, it := range items(page) {
			got = append(got, it["personId"].(string))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || page["totalCount"] != float64(len(want)) {
			t.Errorf("query %q: %v (total %v), want %v", q, got, page["totalCount"], want)
		}
	}
	// A rename moves what search finds.
	mustStatus(t, c.Do("PATCH", "/v0/persons/"+muller, map[string]any{"name": "Jürgen Schön"}), 200)
	if n := mustStatus(t, c.Do("GET", apitest.Query("/v0/persons/search", "query", "SCHÖN"), nil), 200)["totalCount"]; n != 1.0 {
		t.Errorf("after rename: %v", n)
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
			r := c.Do("POST", "/v0/accounts", map[string]any{"domain": fmt.Sprintf("https://www.Race.example/%d", i)})
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	if statuses[201] != 1 || statuses[409] != 7 {
		t.Fatalf("statuses = %v", statuses)
	}
	if n := mustStatus(t, c.Do("GET", "/v0/accounts", nil), 200)["totalCount"]; n != 1.0 {
		t.Fatalf("%v accounts", n)
	}
}

// Concurrent patches of different fields both land (the row is locked for the change).
func TestConcurrentPatchesLoseNothing(t *testing.T) {
	s := start(t)
	c := client(t, s, "acme")
	id := createPerson(t, c, map[string]any{"name": "Racer"})["personId"].(string)
	var wg sync.WaitGroup
	for _, body := range []map[string]any{
		{"phoneNumber": "+1 555 0100"}, {"linkedinProfileUrl": "https://www.linkedin.com/in/racer"}, {"email": "racer@race.example"},
		{"name": "Racer Two"},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mustStatus(t, c.Do("PATCH", "/v0/persons/"+id, body), 200)
		}()
	}
	wg.Wait()
	got := mustStatus(t, c.Do("GET", "/v0/persons/"+id, nil), 200)
	if got["phoneNumber"] != "+1 555 0100" || got["linkedinProfileUrl"] == nil || got["email"] != "racer@race.example" ||
		got["domain"] != "race.example" || got["name"] != "Racer Two" {
		t.Fatalf("person = %v", got)
	}
}

// Another tenant's account and its logs are 404s, and its accounts are not listed.
func TestAccountTenantIsolation(t *testing.T) {
	s := start(t)
	a, b := client(t, s, "acme"), client(t, s, "globex")
	aid := createAccount(t, a, map[string]any{"domain": "private.example"})["accountId"].(string)
	lid := mustStatus(t, a.Do("POST", "/v0/accounts/"+aid+"/logs", map[string]any{"source": "a", "type": "b", "payload": map[string]any{}}), 201)["accountLogId"].(string)
	mustStatus(t, b.Do("GET", "/v0/accounts/"+aid, nil), 404)
	mustStatus(t, b.Do("GET", "/v0/accounts/"+aid+"/logs", nil), 404)
	mustStatus(t, b.Do("POST", "/v0/accounts/"+aid+"/logs", map[string]any{"source": "a", "type": "b", "payload": map[string]any{}}), 404)
	mustStatus(t, b.Do("GET", "/v0/accounts/"+aid+"/logs/"+lid, nil), 404)
	mustStatus(t, b.Do("DELETE", "/v0/accounts/"+aid+"/logs/"+lid, nil), 404)
	if n := mustStatus(t, b.Do("GET", "/v0/accounts", nil), 200)["totalCount"]; n != 0.0 {
		t.Fatalf("globex lists %v accounts", n)
	}
	if got := mustStatus(t, a.Do("GET", "/v0/accounts/"+aid+"/logs/"+lid, nil), 200); got["deletedAt"] != nil {
		t.Fatalf("globex deleted acme's entry: %v", got)
	}
}
