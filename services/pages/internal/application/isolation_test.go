package application_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/customerapi/platform/api"
	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/service/servicetest"
)

// Another tenant's page, audience, version and message IDs are 404 on every pages core
// endpoint, reads and writes alike, and its writes change nothing of the owner's.
func TestAnotherTenantGets404Everywhere(t *testing.T) {
	s := start(t, servicetest.Options{})
	acme, globex := client(t, s, "acme"), client(t, s, "globex")
	pageID := createPage(t, acme, nil)["pageId"].(string)
	aid := createAudience(t, acme, pageID, nil).AudienceId
	waitAudience(t, acme, pageID, aid, status("published"))
	mustStatus(t, acme.Do("POST", fmt.Sprintf("/v0/pages/%s/audiences/%s/messages", pageID, aid),
		map[string]any{"content": "hi", "changes": []any{map[string]any{"field": "currentMetaTitle", "newValue": "T"}}}), 201)
	// globex has a page of its own, so a 404 is not just "this tenant has nothing".
	own := createPage(t, globex, nil)["pageId"].(string)

	page := "/v0/pages/" + pageID
	aud := fmt.Sprintf("%s/audiences/%s", page, aid)
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"GET", page, nil},
		{"PATCH", page, map[string]any{"title": "mine"}},
		{"DELETE", page, nil},
		{"POST", page + "/publish", nil},
		{"POST", page + "/archive", nil},
		{"POST", page + "/restore", map[string]any{}},
		{"GET", page + "/audiences", nil},
		{"POST", page + "/audiences", map[string]any{}},
		{"GET", aud, nil},
		{"PATCH", aud, map[string]any{"customName": "mine"}},
		{"POST", aud + "/archive", nil},
		{"GET", aud + "/versions", nil},
		{"POST", aud + "/versions", map[string]any{"operationKey": "k"}},
		{"GET", aud + "/messages", nil},
		{"POST", aud + "/messages", map[string]any{"content": "mine"}},
		// The audience under the other tenant's own page is not found either.
		{"GET", fmt.Sprintf("/v0/pages/%s/audiences/%s", own, aid), nil},
		{"GET", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", own, aid), nil},
		{"POST", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", own, aid), nil},
	} {
		if got := globex.Do(r.method, r.path, r.body); got.Status != 404 || got.Map()["code"] != "NOT_FOUND" {
			t.Errorf("globex %s %s → %s", r.method, r.path, got)
		}
	}
	if l := mustStatus(t, globex.Do("GET", "/v0/pages", nil), 200); l["totalCount"] != 1.0 {
		t.Fatalf("globex lists %v", l)
	}
	// Nothing of acme's changed.
	p := mustStatus(t, acme.Do("GET", page, nil), 200)
	a := mustStatus(t, acme.Do("GET", aud, nil), 200)
	vs := mustStatus(t, acme.Do("GET", aud+"/versions", nil), 200)
	m := apitest.Decode[apitypes.AudienceMessages](t, acme.Do("GET", aud+"/messages", nil), 200, "acme's messages")
	if p["title"] != "Welcome" || p["status"] != "draft" || p["audiencesCount"] != 1.0 || a["customName"] != nil ||
		a["status"] != "published" || vs["totalCount"] != 1.0 || len(m.Messages) != 1 {
		t.Fatalf("acme's data changed: page %v audience %v versions %v messages %v", p, a, vs, m)
	}
}

// Audiences created at the same time on one page are all counted and numbered once:
// audiencesCount is exact and every computedName distinct.
func TestConcurrentAudienceCreatesCountExactly(t *testing.T) {
	s := start(t, servicetest.Options{Env: map[string]string{"PAGES_WORKERS": "0"}})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	const n = 10
	names := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := c.Do("POST", "/v0/pages/"+pageID+"/audiences", map[string]any{})
			if r.Status != 201 {
				t.Errorf("create: %s", r)
				return
			}
			names[i] = r.Map()["computedName"].(string)
		}()
	}
	// A concurrent page update must not lose the count either.
	wg.Add(1)
	go func() {
		defer wg.Done()
		mustStatus(t, c.Do("PATCH", "/v0/pages/"+pageID, map[string]any{"title": "Renamed"}), 200)
	}()
	wg.Wait()
	p := mustStatus(t, c.Do("GET", "/v0/pages/"+pageID, nil), 200)
	if p["audiencesCount"] != float64(n) || p["title"] != "Renamed" {
		t.Fatalf("page after %d concurrent creates = %v", n, p)
	}
	sort.Strings(names)
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			t.Fatalf("computedName %q given twice: %v", name, names)
		}
		seen[name] = true
	}
	if l := mustStatus(t, c.Do("GET", "/v0/pages/"+pageID+"/audiences?limit=100", nil), 200); l["totalCount"] != float64(n) {
		t.Fatalf("audiences totalCount = %v", l["totalCount"])
	}
}

// checkEventPayload validates an event payload against its schema in the OpenAPI
// document (the webhooks region documents every public event type's payload).
func checkEventPayload(t testing.TB, typ string, raw json.RawMessage) {
	t.Helper()
	name := map[string]string{
		events.TypePageVersionCreated:   "PageVersionCreatedEventPayload",
		events.TypePageVersionProcessed: "PageVersionProcessedEventPayload",
		events.TypePageVersionPublished: "PageVersionPublishedEventPayload",
		events.TypeFormSubmitted:        "FormSubmittedEventPayload",
	}[typ]
	if name == "" {
		t.Fatalf("no payload schema known for %s", typ)
	}
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	ref := doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		t.Fatalf("the OpenAPI document has no schema %s", name)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if err := ref.Value.VisitJSON(v); err != nil {
		t.Fatalf("%s payload %s does not match %s: %v", typ, raw, name, err)
	}
}
