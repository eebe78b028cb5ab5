package application_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/service/servicetest"
)

func TestAudienceToPublishedVersionAndSupersede(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID := createPage(t, c, map[string]any{"name": "p", "title": "T", "pageType": "outbound",
		"metadata": map[string]any{"title": "Page title", "description": "Page description"}})["pageId"].(string)

	a := createAudience(t, c, pageID, map[string]any{"customName": "CFOs", "supplementaryContext": "finance people",
		"metadataOverride": map[string]any{"title": "For CFOs"}, "actionUrlOverride": "https://x.test/cfo"})
	aid := a.AudienceId
	if !strings.HasPrefix(aid, "audience_") || a.Status != "queued" || a.EffectiveName != "CFOs" ||
		a.ComputedName != "Audience 1" || a.PublishBehavior != "publish" || a.PublishedVersion != nil {
		t.Fatalf("created = %+v", a)
	}
	if m := a.EffectiveMetadata; m == nil || request.Value(m.Title) != "For CFOs" || request.Value(m.Description) != "Page description" {
		t.Fatalf("effectiveMetadata = %+v", m)
	}
	v1 := a.LatestVersion
	if v1 == nil || v1.VersionNumber != 1 || v1.Status != "queued" || v1.QueuedAt == nil {
		t.Fatalf("first version = %+v", v1)
	}
	if n := mustStatus(t, c.Do("GET", "/v0/pages/"+pageID, nil), 200)["audiencesCount"]; n != 1.0 {
		t.Fatalf("audiencesCount = %v", n)
	}

	a = waitAudience(t, c, pageID, aid, status("published"))
	pv := a.PublishedVersion
	if versionID(pv) != v1.VersionId || pv.PublishedAt == nil || pv.QueueDurationMs == nil ||
		versionID(a.LatestVersion) != v1.VersionId {
		t.Fatalf("published audience = %+v", a)
	}

	// A second version supersedes the first.
	v2 := mustStatus(t, c.Do("POST", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", pageID, aid), map[string]any{}), 201)
	if v2["versionNumber"] != 2.0 || v2["status"] != "queued" {
		t.Fatalf("v2 = %v", v2)
	}
	a = waitAudience(t, c, pageID, aid, func(a apitypes.Audience) bool {
		return a.Status == "published" && v2["versionId"] == versionID(a.PublishedVersion)
	})
	if v2["versionId"] != versionID(a.LatestVersion) || a.PublishedVersion.PublishedAt == nil {
		t.Fatalf("audience after the second version = %+v", a)
	}
	list := apitest.Decode[apitypes.AudienceVersionPage](t, c.Do("GET", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions?include=snapshot",
		pageID, aid), nil), 200, "versions list with their snapshots")
	if list.TotalCount != 2 || len(list.Items) != 2 {
		t.Fatalf("versions = %+v", list)
	}
	newest, oldest := list.Items[0], list.Items[1]
	if v2["versionId"] != newest.VersionId || newest.Status != "published" || newest.ObsoleteAt != nil {
		t.Fatalf("newest = %+v", newest)
	}
	if oldest.ObsoleteAt == nil || oldest.Status != "archived" || oldest.PublishedAt == nil {
		t.Fatalf("superseded = %+v", oldest)
	}
	if snap := newest.Snapshot; snap == nil || snap.EffectiveName != "CFOs" || snap.PageTitle != "T" {
		t.Fatalf("snapshot = %+v", snap)
	}
	if l := apitest.Decode[apitypes.AudienceVersionPage](t, c.Do("GET", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", pageID, aid), nil),
		200, "versions list"); l.Items[0].Snapshot != nil {
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
	aid := createAudience(t, c, pageID, map[string]any{"publishBehavior": "draft"}).AudienceId
	a := waitAudience(t, c, pageID, aid, status("draft"))
	if a.PublishedVersion != nil || a.LatestVersion == nil || a.LatestVersion.BecameDraftAt == nil || a.LatestVersion.PublishedAt != nil {
		t.Fatalf("draft audience = %+v", a)
	}
}

func TestOperationKeyConcurrent(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	aid := createAudience(t, c, pageID, nil).AudienceId
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
	other := createAudience(t, c, pageID, nil).AudienceId
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
	aid := createAudience(t, c, pageID, nil).AudienceId
	waitAudience(t, c, pageID, aid, status("published"))
	base := fmt.Sprintf("/v0/pages/%s/audiences/%s", pageID, aid)

	messages := func(rule string) apitypes.AudienceMessages {
		return apitest.Decode[apitypes.AudienceMessages](t, c.Do("GET", base+"/messages", nil), 200, rule)
	}
	empty := messages("messages before the first")
	ctx := empty.Context
	if empty.Conversation != nil || len(empty.Messages) != 0 || ctx.CurrentMetaTitle != "Old title" ||
		ctx.CurrentMetaKeywords != "x, y" || ctx.PageContext != "ctx" || ctx.PageId != pageID {
		t.Fatalf("empty messages = %+v", empty)
	}
	m := apitest.Decode[apitypes.AudienceMessage](t, c.Do("POST", base+"/messages", map[string]any{"content": "make it punchier", "changes": []any{
		map[string]any{"field": "currentMetaTitle", "newValue": "New title"},
		map[string]any{"field": "currentSupplementaryContext", "newValue": "CFOs in retail"},
	}}), 201, "a message is added")
	ch := m.Changes
	if len(ch) != 2 || ch[0].PreviousValue != "Old title" || ch[0].NewValue != "New title" || m.HasSnapshot {
		t.Fatalf("message = %+v", m)
	}
	pending := messages("messages with pending changes")
	if len(pending.PendingChanges) != 2 || pending.Context.CurrentMetaTitle != "Old title" || pending.Conversation == nil {
		t.Fatalf("pending = %+v", pending)
	}
	v := mustStatus(t, c.Do("POST", base+"/versions", nil), 201)
	waitAudience(t, c, pageID, aid, func(a apitypes.Audience) bool { return v["versionId"] == versionID(a.PublishedVersion) })
	after := messages("messages after a version applied them")
	actx := after.Context
	if len(after.PendingChanges) != 0 || actx.CurrentMetaTitle != "New title" ||
		actx.CurrentSupplementaryContext != "CFOs in retail" || len(after.Messages) == 0 || !after.Messages[0].HasSnapshot ||
		after.Conversation == nil || request.Value(after.Conversation.PublishedMessageId) != m.MessageId {
		t.Fatalf("after = %+v", after)
	}
	a := getAudience(t, c, pageID, aid)
	if request.Value(a.SupplementaryContext) != "CFOs in retail" || a.EffectiveMetadata == nil || request.Value(a.EffectiveMetadata.Title) != "New title" {
		t.Fatalf("audience after changes = %+v", a)
	}
}

// An archived page takes no new audience or version (409) until it is restored; an
// operationKey replay still answers with the version it made.
func TestArchivedPageTakesNoNewVersion(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	aid := createAudience(t, c, pageID, nil).AudienceId
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
	aid := createAudience(t, c, pageID, nil).AudienceId
	base := fmt.Sprintf("/v0/pages/%s/audiences/%s", pageID, aid)
	keywords := strings.TrimSuffix(strings.Repeat(strings.Repeat("k", 200)+",", 50), ",")
	mustStatus(t, c.Do("POST", base+"/messages", map[string]any{"content": "max", "changes": []any{
		map[string]any{"field": "currentMetaTitle", "newValue": strings.Repeat("t", 500)},
		map[string]any{"field": "currentMetaDescription", "newValue": strings.Repeat("d", 2000)},
		map[string]any{"field": "currentMetaKeywords", "newValue": keywords},
		map[string]any{"field": "currentSupplementaryContext", "newValue": strings.Repeat("s", 20000)},
	}}), 201)
	v := mustStatus(t, c.Do("POST", base+"/versions", nil), 201)
	a := waitAudience(t, c, pageID, aid, func(a apitypes.Audience) bool { return v["versionId"] == versionID(a.PublishedVersion) })
	if a.MetadataOverride == nil || len(request.Value(a.MetadataOverride.Keywords)) != 50 {
		t.Fatalf("metadataOverride = %+v", a.MetadataOverride)
	}
	mustStatus(t, c.Do("GET", base+"/versions?include=snapshot", nil), 200)
	mustStatus(t, c.Do("GET", base+"/messages", nil), 200)
	mustStatus(t, c.Do("PATCH", base, map[string]any{"metadataOverride": a.MetadataOverride,
		"supplementaryContext": a.SupplementaryContext}), 200)
}
