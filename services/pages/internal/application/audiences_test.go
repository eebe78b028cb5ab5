package application_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/customerapi/platform/libs/service/servicetest"
)

func TestAudienceToPublishedVersionAndSupersede(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID := createPage(t, c, map[string]any{"name": "p", "title": "T", "pageType": "outbound",
		"metadata": map[string]any{"title": "Page title", "description": "Page description"}})["pageId"].(string)

	a := createAudience(t, c, pageID, map[string]any{"customName": "CFOs", "supplementaryContext": "finance people",
		"metadataOverride": map[string]any{"title": "For CFOs"}, "actionUrlOverride": "https://x.test/cfo"})
	aid := a["audienceId"].(string)
	if !strings.HasPrefix(aid, "audience_") || a["status"] != "queued" || a["effectiveName"] != "CFOs" ||
		a["computedName"] != "Audience 1" || a["publishBehavior"] != "publish" || a["publishedVersion"] != nil {
		t.Fatalf("created = %v", a)
	}
	if m := obj(a["effectiveMetadata"]); m["title"] != "For CFOs" || m["description"] != "Page description" {
		t.Fatalf("effectiveMetadata = %v", m)
	}
	v1 := obj(a["latestVersion"])
	if v1["versionNumber"] != 1.0 || v1["status"] != "queued" || v1["queuedAt"] == nil {
		t.Fatalf("first version = %v", v1)
	}
	if n := mustStatus(t, c.Do("GET", "/v0/pages/"+pageID, nil), 200)["audiencesCount"]; n != 1.0 {
		t.Fatalf("audiencesCount = %v", n)
	}

	a = waitAudience(t, c, pageID, aid, status("published"))
	pv := obj(a["publishedVersion"])
	if pv["versionId"] != v1["versionId"] || pv["publishedAt"] == nil || pv["queueDurationMs"] == nil ||
		obj(a["latestVersion"])["versionId"] != v1["versionId"] {
		t.Fatalf("published audience = %v", a)
	}

	// A second version supersedes the first.
	v2 := mustStatus(t, c.Do("POST", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", pageID, aid), map[string]any{}), 201)
	if v2["versionNumber"] != 2.0 || v2["status"] != "queued" {
		t.Fatalf("v2 = %v", v2)
	}
	a = waitAudience(t, c, pageID, aid, func(a map[string]any) bool {
		return a["status"] == "published" && obj(a["publishedVersion"])["versionId"] == v2["versionId"]
	})
	if obj(a["latestVersion"])["versionId"] != v2["versionId"] || obj(a["publishedVersion"])["publishedAt"] == nil {
		t.Fatalf("audience after the second version = %v", a)
	}
	list := mustStatus(t, c.Do("GET", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions?include=snapshot", pageID, aid), nil), 200)
	items := list["items"].([]any)
	if list["totalCount"] != 2.0 || len(items) != 2 {
		t.Fatalf("versions = %v", list)
	}
	newest, oldest := obj(items[0]), obj(items[1])
	if newest["versionId"] != v2["versionId"] || newest["status"] != "published" || newest["obsoleteAt"] != nil {
		t.Fatalf("newest = %v", newest)
	}
	if oldest["obsoleteAt"] == nil || oldest["status"] != "archived" || oldest["publishedAt"] == nil {
		t.Fatalf("superseded = %v", oldest)
	}
	if snap := obj(newest["snapshot"]); snap["effectiveName"] != "CFOs" || snap["pageTitle"] != "T" {
		t.Fatalf("snapshot = %v", snap)
	}
	if _, ok := obj(mustStatus(t, c.Do("GET", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", pageID, aid), nil), 200)["items"].([]any)[0])["snapshot"]; ok {
		t.Fatal("snapshot shown without include")
	}

	// Audiences list, 404 under another page, archive.
	other := createPage(t, c, nil)["pageId"].(string)
	mustStatus(t, c.Do("GET", fmt.Sprintf("/v0/pages/%s/audiences/%s", other, aid), nil), 404)
	mustStatus(t, c.Do("GET", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", other, aid), nil), 404)
	mustStatus(t, c.Do("GET", fmt.Sprintf("/v0/pages/%s/audiences/%s/messages", other, aid), nil), 404)
	createAudience(t, c, pageID, map[string]any{"publishBehavior": "draft"})
	l := mustStatus(t, c.Do("GET", "/v0/pages/"+pageID+"/audiences?limit=1", nil), 200)
	if l["totalCount"] != 2.0 || l["hasMore"] != true {
		t.Fatalf("audiences = %v", l)
	}
	patched := mustStatus(t, c.Do("PATCH", fmt.Sprintf("/v0/pages/%s/audiences/%s", pageID, aid), map[string]any{"customName": nil}), 200)
	if patched["effectiveName"] != "Audience 1" || patched["customName"] != nil {
		t.Fatalf("patched = %v", patched)
	}
	arch := mustStatus(t, c.Do("POST", fmt.Sprintf("/v0/pages/%s/audiences/%s/archive", pageID, aid), nil), 200)
	if arch["status"] != "archived" || arch["archivedAt"] == nil {
		t.Fatalf("archived = %v", arch)
	}
	mustStatus(t, c.Do("POST", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", pageID, aid), nil), 409)
	mustStatus(t, c.Do("PATCH", fmt.Sprintf("/v0/pages/%s/audiences/%s", pageID, aid), map[string]any{"customName": "x"}), 409)
}

func TestDraftBehaviour(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	aid := createAudience(t, c, pageID, map[string]any{"publishBehavior": "draft"})["audienceId"].(string)
	a := waitAudience(t, c, pageID, aid, status("draft"))
	if a["publishedVersion"] != nil || obj(a["latestVersion"])["becameDraftAt"] == nil || obj(a["latestVersion"])["publishedAt"] != nil {
		t.Fatalf("draft audience = %v", a)
	}
}

func TestOperationKeyConcurrent(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	aid := createAudience(t, c, pageID, nil)["audienceId"].(string)
	path := fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", pageID, aid)

	const n = 12
	var wg sync.WaitGroup
	got := make([]string, n)
	created := make([]int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := c.Do("POST", path, map[string]any{"operationKey": "op-1"})
			if r.Status != 201 && r.Status != 200 {
				t.Errorf("status %d: %s", r.Status, r.Body)
				return
			}
			created[i] = r.Status
			got[i] = r.Map()["versionId"].(string)
		}()
	}
	wg.Wait()
	n201 := 0
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("different versions for one key: %v", got)
		}
		if created[i] == 201 {
			n201++
		}
	}
	if n201 != 1 {
		t.Fatalf("%d requests reported a creation, want 1", n201)
	}
	list := mustStatus(t, c.Do("GET", path, nil), 200)
	if list["totalCount"] != 2.0 { // the audience's first version and the one keyed version
		t.Fatalf("versions = %v", list)
	}
	// The key is per audience.
	other := createAudience(t, c, pageID, nil)["audienceId"].(string)
	v := mustStatus(t, c.Do("POST", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", pageID, other), map[string]any{"operationKey": "op-1"}), 201)
	if v["versionId"] == got[0] {
		t.Fatal("operation key leaked across audiences")
	}
}

func TestMessagesApplyWithNextVersion(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID := createPage(t, c, map[string]any{"name": "p", "title": "T", "pageType": "inbound", "pageContext": "ctx",
		"metadata": map[string]any{"title": "Old title", "keywords": []string{"x", "y"}}})["pageId"].(string)
	aid := createAudience(t, c, pageID, nil)["audienceId"].(string)
	waitAudience(t, c, pageID, aid, status("published"))
	base := fmt.Sprintf("/v0/pages/%s/audiences/%s", pageID, aid)

	empty := mustStatus(t, c.Do("GET", base+"/messages", nil), 200)
	ctx := obj(empty["context"])
	if empty["conversation"] != nil || len(empty["messages"].([]any)) != 0 || ctx["currentMetaTitle"] != "Old title" ||
		ctx["currentMetaKeywords"] != "x, y" || ctx["pageContext"] != "ctx" || ctx["pageId"] != pageID {
		t.Fatalf("empty messages = %v", empty)
	}
	m := mustStatus(t, c.Do("POST", base+"/messages", map[string]any{"content": "make it punchier", "changes": []any{
		map[string]any{"field": "currentMetaTitle", "newValue": "New title"},
		map[string]any{"field": "currentSupplementaryContext", "newValue": "CFOs in retail"},
	}}), 201)
	ch := m["changes"].([]any)
	if len(ch) != 2 || obj(ch[0])["previousValue"] != "Old title" || obj(ch[0])["newValue"] != "New title" || m["hasSnapshot"] != false {
		t.Fatalf("message = %v", m)
	}
	pending := mustStatus(t, c.Do("GET", base+"/messages", nil), 200)
	if len(pending["pendingChanges"].([]any)) != 2 || obj(pending["context"])["currentMetaTitle"] != "Old title" || pending["conversation"] == nil {
		t.Fatalf("pending = %v", pending)
	}
	v := mustStatus(t, c.Do("POST", base+"/versions", nil), 201)
	waitAudience(t, c, pageID, aid, func(a map[string]any) bool {
		return obj(a["publishedVersion"])["versionId"] == v["versionId"]
	})
	after := mustStatus(t, c.Do("GET", base+"/messages", nil), 200)
	actx := obj(after["context"])
	if len(after["pendingChanges"].([]any)) != 0 || actx["currentMetaTitle"] != "New title" ||
		actx["currentSupplementaryContext"] != "CFOs in retail" || obj(after["messages"].([]any)[0])["hasSnapshot"] != true ||
		obj(after["conversation"])["publishedMessageId"] != m["messageId"] {
		t.Fatalf("after = %v", after)
	}
	a := mustStatus(t, c.Do("GET", base, nil), 200)
	if a["supplementaryContext"] != "CFOs in retail" || obj(a["effectiveMetadata"])["title"] != "New title" {
		t.Fatalf("audience after changes = %v", a)
	}
}

// An archived page takes no new audience or version (409) until it is restored; an
// operationKey replay still answers with the version it made.
func TestArchivedPageTakesNoNewVersion(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	aid := createAudience(t, c, pageID, nil)["audienceId"].(string)
	versions := fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", pageID, aid)
	first := mustStatus(t, c.Do("POST", versions, map[string]any{"operationKey": "k1"}), 201)
	mustStatus(t, c.Do("POST", "/v0/pages/"+pageID+"/archive", nil), 200)

	r := c.Do("POST", versions, map[string]any{})
	if r.Status != 409 || r.Map()["code"] != "CONFLICT" {
		t.Fatalf("version on an archived page: %s", r)
	}
	if again := mustStatus(t, c.Do("POST", versions, map[string]any{"operationKey": "k1"}), 200); again["versionId"] != first["versionId"] {
		t.Fatalf("replay on an archived page = %v", again)
	}
	if l := mustStatus(t, c.Do("GET", versions, nil), 200); l["totalCount"] != 2.0 {
		t.Fatalf("versions = %v", l)
	}
	mustStatus(t, c.Do("POST", "/v0/pages/"+pageID+"/restore", nil), 200)
	if v := mustStatus(t, c.Do("POST", versions, nil), 201); v["versionNumber"] != 3.0 {
		t.Fatalf("version after restore = %v", v)
	}
}

// The largest values a message change may propose, once a version applies them, give an
// audience, snapshot and messages read that still match the contract (the client
// validates every response) and that the audience's own update accepts back.
func TestLargestChangesStayWithinContract(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	aid := createAudience(t, c, pageID, nil)["audienceId"].(string)
	base := fmt.Sprintf("/v0/pages/%s/audiences/%s", pageID, aid)
	keywords := strings.TrimSuffix(strings.Repeat(strings.Repeat("k", 200)+",", 50), ",")
	mustStatus(t, c.Do("POST", base+"/messages", map[string]any{"content": "max", "changes": []any{
		map[string]any{"field": "currentMetaTitle", "newValue": strings.Repeat("t", 500)},
		map[string]any{"field": "currentMetaDescription", "newValue": strings.Repeat("d", 2000)},
		map[string]any{"field": "currentMetaKeywords", "newValue": keywords},
		map[string]any{"field": "currentSupplementaryContext", "newValue": strings.Repeat("s", 20000)},
	}}), 201)
	v := mustStatus(t, c.Do("POST", base+"/versions", nil), 201)
	a := waitAudience(t, c, pageID, aid, func(a map[string]any) bool {
		return obj(a["publishedVersion"])["versionId"] == v["versionId"]
	})
	if kw := obj(a["metadataOverride"])["keywords"].([]any); len(kw) != 50 {
		t.Fatalf("keywords = %d", len(kw))
	}
	mustStatus(t, c.Do("GET", base+"/versions?include=snapshot", nil), 200)
	mustStatus(t, c.Do("GET", base+"/messages", nil), 200)
	mustStatus(t, c.Do("PATCH", base, map[string]any{"metadataOverride": a["metadataOverride"],
		"supplementaryContext": a["supplementaryContext"]}), 200)
}
