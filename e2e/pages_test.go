package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/testwait"
)

// waitPublished polls an audience through the gateway until its published version is
// the one wanted.
func waitPublished(t *testing.T, c *apitest.Client, pageID, audienceID, versionID string) apitypes.Audience {
	t.Helper()
	var a apitypes.Audience
	testwait.For(t, 20*time.Second, "version "+versionID+" to be published", func() (bool, string) {
		a = decode[apitypes.Audience](t, c.Do("GET", fmt.Sprintf("/v0/pages/%s/audiences/%s", pageID, audienceID), nil), 200)
		pv := a.PublishedVersion
		return pv != nil && pv.VersionId == versionID && a.Status == "published", fmt.Sprintf("%+v", a)
	})
	return a
}

// A page from create to publish; an audience from create to a published version; a
// second version superseding the first; the version events on Kafka keyed by audience.
func TestPageAndAudienceToPublishedVersions(t *testing.T) {
	s := local(t)
	c := api(t, newKey(t, nil))

	page := must(t, c.Do("POST", "/v0/pages", map[string]any{"name": "launch", "title": "Launch", "pageType": "outbound",
		"metadata": map[string]any{"title": "Launch day"},
		"actions":  []any{map[string]any{"actionId": "demo", "buttonTitle": "Book a demo"}}, "headerActionId": "demo"}), 201)
	pageID := page["pageId"].(string)
	if page["status"] != "draft" {
		t.Fatalf("page = %v", page)
	}
	if p := must(t, c.Do("POST", "/v0/pages/"+pageID+"/publish", map[string]any{}), 200); p["status"] != "published" {
		t.Fatalf("published page = %v", p)
	}

	a := decode[apitypes.Audience](t, c.Do("POST", "/v0/pages/"+pageID+"/audiences", map[string]any{"customName": "CTOs",
		"metadataOverride": map[string]any{"description": "For CTOs"}}), 201)
	audienceID := a.AudienceId
	if a.LatestVersion == nil {
		t.Fatalf("a new audience has no latestVersion: %+v", a)
	}
	v1 := a.LatestVersion.VersionId
	a = waitPublished(t, c, pageID, audienceID, v1)
	if m := a.EffectiveMetadata; m == nil || m.Title == nil || *m.Title != "Launch day" || m.Description == nil || *m.Description != "For CTOs" {
		t.Fatalf("effectiveMetadata = %+v", m)
	}
	if n := decode[apitypes.Page](t, c.Do("GET", "/v0/pages/"+pageID, nil), 200).AudiencesCount; n != 1 {
		t.Fatalf("audiencesCount = %v", n)
	}

	// A message, then a second version that applies it and supersedes the first.
	base := fmt.Sprintf("/v0/pages/%s/audiences/%s", pageID, audienceID)
	must(t, c.Do("POST", base+"/messages", map[string]any{"content": "sharper title",
		"changes": []any{map[string]any{"field": "currentMetaTitle", "newValue": "Launch day for CTOs"}}}), 201)
	v2 := must(t, c.Do("POST", base+"/versions", map[string]any{"operationKey": "second"}), 201)["versionId"].(string)
	if again := must(t, c.Do("POST", base+"/versions", map[string]any{"operationKey": "second"}), 200); again["versionId"] != v2 {
		t.Fatalf("operationKey replay = %v", again)
	}
	waitPublished(t, c, pageID, audienceID, v2)
	versions := decode[apitypes.AudienceVersionPage](t, c.Do("GET", base+"/versions?include=snapshot", nil), 200)
	items := versions.Items
	if versions.TotalCount != 2 || len(items) != 2 {
		t.Fatalf("versions = %+v", versions)
	}
	newest, old := items[0], items[1]
	if newest.VersionId != v2 || newest.Status != "published" || old.VersionId != v1 || old.ObsoleteAt == nil {
		t.Fatalf("versions = %+v", items)
	}
	msgs := decode[apitypes.AudienceMessages](t, c.Do("GET", base+"/messages", nil), 200)
	if msgs.Context.CurrentMetaTitle != "Launch day for CTOs" || len(msgs.PendingChanges) != 0 {
		t.Fatalf("messages = %+v", msgs)
	}

	// Events on Kafka: created, processed, published for each version, keyed by audience.
	for _, typ := range []string{events.TypePageVersionCreated, events.TypePageVersionProcessed, events.TypePageVersionPublished} {
		e := readPagesEvent(t, s.Brokers(), audienceID, typ)
		var body map[string]any
		if err := json.Unmarshal(e.Payload, &body); err != nil || body["pageId"] != pageID || body["type"] != typ {
			t.Fatalf("%s payload %s", typ, e.Payload)
		}
	}

	// Archive, restore, delete, restore.
	must(t, c.Do("POST", "/v0/pages/"+pageID+"/archive", nil), 200)
	must(t, c.Do("POST", "/v0/pages/"+pageID+"/restore", map[string]any{}), 200)
	must(t, c.Do("DELETE", "/v0/pages/"+pageID, nil), 204)
	must(t, c.Do("GET", base, nil), 404)
	if r := must(t, c.Do("POST", "/v0/pages/"+pageID+"/restore", nil), 200); r["status"] != "draft" || r["deletedAt"] != nil {
		t.Fatalf("restored = %v", r)
	}
	must(t, c.Do("POST", "/v0/pages/"+pageID+"/restore", nil), 409)

	// Lists through the gateway, and another tenant sees nothing.
	list := must(t, c.Do("GET", "/v0/pages/"+pageID+"/audiences?limit=1", nil), 200)
	if list["totalCount"] != 1.0 {
		t.Fatalf("audiences = %v", list)
	}
	other := api(t, newKey(t, nil))
	must(t, other.Do("GET", "/v0/pages/"+pageID, nil), 404)
	must(t, other.Do("GET", base+"/versions", nil), 404)
	cur := must(t, c.Do("GET", "/v0/pages?limit=1", nil), 200)["nextCursor"]
	if cur != nil {
		if r := other.Do("GET", "/v0/pages?cursor="+url.QueryEscape(cur.(string)), nil); r.Status != 400 {
			t.Fatalf("foreign cursor: %s", r)
		}
	}
}

func TestPagesValidation(t *testing.T) {
	c := api(t, newKey(t, nil))
	pageID := must(t, c.Do("POST", "/v0/pages", map[string]any{"name": "v", "title": "V", "pageType": "custom"}), 201)["pageId"].(string)
	aid := must(t, c.Do("POST", "/v0/pages/"+pageID+"/audiences", map[string]any{"publishBehavior": "draft"}), 201)["audienceId"].(string)
	base := fmt.Sprintf("/v0/pages/%s/audiences/%s", pageID, aid)
	for name, tc := range map[string]struct {
		method, path string
		body         any
	}{
		"page type":        {"POST", "/v0/pages", map[string]any{"name": "x", "title": "x", "pageType": "nope"}},
		"page malformed":   {"POST", "/v0/pages", rawBody(`{"name":`)},
		"page limit":       {"GET", "/v0/pages?limit=0", nil},
		"patch unknown":    {"PATCH", "/v0/pages/" + pageID, map[string]any{"status": "published"}},
		"behaviour":        {"POST", "/v0/pages/" + pageID + "/audiences", map[string]any{"publishBehavior": "soon"}},
		"override image":   {"POST", "/v0/pages/" + pageID + "/audiences", map[string]any{"metadataOverride": map[string]any{"twitterImageUrl": "x"}}},
		"operation key":    {"POST", base + "/versions", map[string]any{"operationKey": ""}},
		"include":          {"GET", base + "/versions?include=all", nil},
		"message field":    {"POST", base + "/messages", map[string]any{"content": "x", "changes": []any{map[string]any{"field": "x", "newValue": "y"}}}},
		"publish body":     {"POST", "/v0/pages/" + pageID + "/publish", map[string]any{"now": true}},
		"audiences cursor": {"GET", "/v0/pages/" + pageID + "/audiences?cursor=zzz", nil},
	} {
		r := c.Do(tc.method, tc.path, tc.body)
		if r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" {
			t.Errorf("%s: %s", name, r)
		}
	}
}
