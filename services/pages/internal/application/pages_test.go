package application_test

import (
	"strings"
	"testing"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/service/servicetest"
)

func TestPageLifecycle(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")

	p := apitest.Decode[apitypes.Page](t, c.Do("POST", "/v0/pages", map[string]any{
		"name": "home", "title": "Welcome", "pageType": "inbound", "pageContext": "We sell widgets.",
		"flags":             []string{"home_page"},
		"actions":           []any{map[string]any{"actionId": "book", "buttonTitle": "Book a demo", "url": "https://x.test/book"}},
		"headerActionId":    "book",
		"actionCardWidgets": []any{map[string]any{"type": "logos", "logos": []any{map[string]any{"image": map[string]any{"url": "https://x.test/l.png"}}}}},
		"footerLinks":       []any{map[string]any{"id": "f1", "title": "Company", "links": []any{map[string]any{"id": "l1", "text": "About", "url": "/about"}}}},
		"navLinks":          []any{map[string]any{"id": "n1", "text": "Pricing", "url": "/pricing"}},
		"scripts":           []any{map[string]any{"name": "analytics", "content": "console.log(1)"}},
		"metadata":          map[string]any{"title": "Widgets", "keywords": []string{"a", "b"}},
	}), 201, "a page is created")
	id := p.PageId
	if !strings.HasPrefix(id, "page_") || p.Status != "draft" || p.AudiencesCount != 0 || p.DeletedAt != nil ||
		p.ArchivedAt != nil || request.Value(p.HeaderActionId) != "book" || p.Metadata == nil || request.Value(p.Metadata.Title) != "Widgets" {
		t.Fatalf("created = %+v", p)
	}
	if action := p.Actions[0]; action.ActionIndex != 0 || action.Purpose != "" {
		t.Fatalf("action defaults = %+v", action)
	}
	if s := p.Scripts[0]; s.Enabled == nil || !*s.Enabled {
		t.Fatalf("script default = %+v", s)
	}

	got := mustStatus(t, c.Do("GET", "/v0/pages/"+id, nil), 200)
	if got["title"] != "Welcome" {
		t.Fatalf("got = %v", got)
	}
	patched := mustStatus(t, c.Do("PATCH", "/v0/pages/"+id, map[string]any{"title": "Hello", "metadata": nil, "headerActionId": nil}), 200)
	if patched["title"] != "Hello" || patched["metadata"] != nil || patched["headerActionId"] != nil || patched["name"] != "home" {
		t.Fatalf("patched = %v", patched)
	}
	// Removing the action the header points at is inconsistent.
	mustStatus(t, c.Do("PATCH", "/v0/pages/"+id, map[string]any{"headerActionId": "book", "actions": []any{}}), 400)

	// Restore works only on archived or deleted pages.
	mustStatus(t, c.Do("POST", "/v0/pages/"+id+"/restore", map[string]any{}), 409)
	pub := mustStatus(t, c.Do("POST", "/v0/pages/"+id+"/publish", nil), 200)
	if pub["status"] != "published" {
		t.Fatalf("published = %v", pub)
	}
	mustStatus(t, c.Do("POST", "/v0/pages/"+id+"/publish", map[string]any{}), 200)
	arch := mustStatus(t, c.Do("POST", "/v0/pages/"+id+"/archive", nil), 200)
	if arch["status"] != "archived" || arch["archivedAt"] == nil {
		t.Fatalf("archived = %v", arch)
	}
	mustStatus(t, c.Do("POST", "/v0/pages/"+id+"/publish", nil), 409)
	mustStatus(t, c.Do("POST", "/v0/pages/"+id+"/audiences", map[string]any{}), 409)
	back := mustStatus(t, c.Do("POST", "/v0/pages/"+id+"/restore", map[string]any{}), 200)
	if back["status"] != "draft" || back["archivedAt"] != nil || back["deletedAt"] != nil {
		t.Fatalf("restored = %v", back)
	}

	mustStatus(t, c.Do("DELETE", "/v0/pages/"+id, nil), 204)
	mustStatus(t, c.Do("GET", "/v0/pages/"+id, nil), 404)
	mustStatus(t, c.Do("PATCH", "/v0/pages/"+id, map[string]any{"title": "x"}), 404)
	mustStatus(t, c.Do("DELETE", "/v0/pages/"+id, nil), 404)
	mustStatus(t, c.Do("GET", "/v0/pages/"+id+"/audiences", nil), 404)
	if n := mustStatus(t, c.Do("GET", "/v0/pages", nil), 200)["totalCount"]; n != 0.0 {
		t.Fatalf("deleted page listed: %v", n)
	}
	back = mustStatus(t, c.Do("POST", "/v0/pages/"+id+"/restore", nil), 200)
	if back["status"] != "draft" || back["deletedAt"] != nil {
		t.Fatalf("restored = %v", back)
	}
	mustStatus(t, c.Do("GET", "/v0/pages/"+id, nil), 200)

	// Another tenant sees nothing.
	other := client(t, s, "globex")
	mustStatus(t, other.Do("GET", "/v0/pages/"+id, nil), 404)
	mustStatus(t, other.Do("POST", "/v0/pages/"+id+"/restore", nil), 404)
}

func TestListPagesWalk(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	want := map[string]bool{}
	for i := 0; i < 5; i++ {
		want[createPage(t, c, nil)["pageId"].(string)] = true
	}
	seen := map[string]bool{}
	path := "/v0/pages?limit=2"
	for pages := 0; ; pages++ {
		r := apitest.Decode[apitypes.PageList](t, c.Do("GET", path, nil), 200, "a walk's page answers")
		if r.TotalCount != 5 {
			t.Fatalf("totalCount = %v", r.TotalCount)
		}
		for _, it := range r.Items {
			id := it.PageId
			if seen[id] {
				t.Fatalf("%s seen twice", id)
			}
			seen[id] = true
		}
		if r.NextCursor == nil {
			break
		}
		path = "/v0/pages?limit=2&cursor=" + *r.NextCursor
	}
	if len(seen) != len(want) {
		t.Fatalf("walk saw %d of %d", len(seen), len(want))
	}
	// A cursor of another list is refused.
	r := mustStatus(t, c.Do("GET", "/v0/pages?limit=2", nil), 200)
	p := createPage(t, c, nil)["pageId"].(string)
	mustStatus(t, c.Do("GET", "/v0/pages/"+p+"/audiences?cursor="+r["nextCursor"].(string), nil), 400)
}
