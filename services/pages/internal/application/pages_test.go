package application_test

import (
	"strings"
	"testing"

	"github.com/customerapi/platform/libs/service/servicetest"
)

func TestPageLifecycle(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")

	p := createPage(t, c, map[string]any{
		"name": "home", "title": "Welcome", "pageType": "inbound", "pageContext": "We sell widgets.",
		"flags":             []string{"home_page"},
		"actions":           []any{map[string]any{"actionId": "book", "buttonTitle": "Book a demo", "url": "https://x.test/book"}},
		"headerActionId":    "book",
		"actionCardWidgets": []any{map[string]any{"type": "logos", "logos": []any{map[string]any{"image": map[string]any{"url": "https://x.test/l.png"}}}}},
		"footerLinks":       []any{map[string]any{"id": "f1", "title": "Company", "links": []any{map[string]any{"id": "l1", "text": "About", "url": "/about"}}}},
		"navLinks":          []any{map[string]any{"id": "n1", "text": "Pricing", "url": "/pricing"}},
		"scripts":           []any{map[string]any{"name": "analytics", "content": "console.log(1)"}},
		"metadata":          map[string]any{"title": "Widgets", "keywords": []string{"a", "b"}},
	})
	id := p["pageId"].(string)
	if !strings.HasPrefix(id, "page_") || p["status"] != "draft" || p["audiencesCount"] != 0.0 || p["deletedAt"] != nil ||
		p["archivedAt"] != nil || p["headerActionId"] != "book" || obj(p["metadata"])["title"] != "Widgets" {
		t.Fatalf("created = %v", p)
	}
	action := p["actions"].([]any)[0].(map[string]any)
	if action["actionIndex"] != 0.0 || action["purpose"] != "" {
		t.Fatalf("action defaults = %v", action)
	}
	if s := p["scripts"].([]any)[0].(map[string]any); s["enabled"] != true {
		t.Fatalf("script default = %v", s)
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
		r := mustStatus(t, c.Do("GET", path, nil), 200)
		if r["totalCount"] != 5.0 {
			t.Fatalf("totalCount = %v", r["totalCount"])
		}
		for _, it := range r["items"].([]any) {
			id := obj(it)["pageId"].(string)
			if seen[id] {
				t.Fatalf("%s seen twice", id)
			}
			seen[id] = true
		}
		if r["nextCursor"] == nil {
			break
		}
		path = "/v0/pages?limit=2&cursor=" + r["nextCursor"].(string)
	}
	if len(seen) != len(want) {
		t.Fatalf("walk saw %d of %d", len(seen), len(want))
	}
	// A cursor of another list is refused.
	r := mustStatus(t, c.Do("GET", "/v0/pages?limit=2", nil), 200)
	p := createPage(t, c, nil)["pageId"].(string)
	mustStatus(t, c.Do("GET", "/v0/pages/"+p+"/audiences?cursor="+r["nextCursor"].(string), nil), 400)
}
