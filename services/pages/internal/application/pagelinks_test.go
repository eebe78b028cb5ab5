package application_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/service/servicetest"
)

func audienceTarget(id string) map[string]any {
	return map[string]any{"targetType": "audience", "audienceId": id}
}

func TestPageLinkLifecycle(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID, audiences := seedPage(t, s.Runtime.Pool, "acme", 1)

	created := apitest.Decode[apitypes.PageLink](t, c.Do("POST", "/v0/page_links", map[string]any{"path": "/Spring-Offer/",
		"target": audienceTarget(audiences[0])}), 201, "a link is created")
	id := created.PageLinkId
	target, err := created.Target.AsPageLinkAudienceTarget()
	if err != nil || !strings.HasPrefix(id, "pagelink_") || created.Path != "/Spring-Offer" || created.TenantDomainId != nil ||
		target.TargetType != "audience" || target.AudienceId != audiences[0] || target.PageId != pageID ||
		created.DeletedAt != nil || created.CreatedAt != created.UpdatedAt {
		t.Fatalf("created = %+v, target %+v (%v)", created, target, err)
	}
	if got := mustStatus(t, c.Do("GET", "/v0/page_links/"+id, nil), 200); got["path"] != "/Spring-Offer" {
		t.Fatalf("got = %v", got)
	}

	// The same path (any case, with or without a trailing slash) on the same domain: 409.
	mustStatus(t, c.Do("POST", "/v0/page_links", map[string]any{"path": "/spring-offer", "target": map[string]any{"targetType": "page", "pageId": pageID}}), 409)
	// Another domain, or another tenant, may use it.
	onDomain := apitest.Decode[apitypes.PageLink](t, c.Do("POST", "/v0/page_links", map[string]any{"path": "/spring-offer",
		"tenantDomainId": "dom_1", "target": map[string]any{"targetType": "page_routing", "pageId": pageID}}), 201, "another domain may use the path")
	// A page target has no audienceId: read as an audience target, it has none.
	if at, err := onDomain.Target.AsPageLinkAudienceTarget(); err != nil || request.Value(onDomain.TenantDomainId) != "dom_1" || at.AudienceId != "" {
		t.Fatalf("on domain = %+v (%v)", onDomain, err)
	}
	otherPage, _ := seedPage(t, s.Runtime.Pool, "globex", 0)
	mustStatus(t, client(t, s, "globex").Do("POST", "/v0/page_links", map[string]any{"path": "/spring-offer",
		"target": map[string]any{"targetType": "page", "pageId": otherPage}}), 201)
	mustStatus(t, client(t, s, "globex").Do("GET", "/v0/page_links/"+id, nil), 404)

	// Deleting is soft: the link reads with deletedAt, is not found by search, and frees the path.
	time.Sleep(2 * time.Millisecond)
	mustStatus(t, c.Do("DELETE", "/v0/page_links/"+id, nil), 204)
	deleted := mustStatus(t, c.Do("GET", "/v0/page_links/"+id, nil), 200)
	if deleted["deletedAt"] == nil || deleted["updatedAt"] != deleted["deletedAt"] {
		t.Fatalf("deleted = %v", deleted)
	}
	mustStatus(t, c.Do("DELETE", "/v0/page_links/"+id, nil), 204)
	if again := mustStatus(t, c.Do("GET", "/v0/page_links/"+id, nil), 200); again["deletedAt"] != deleted["deletedAt"] {
		t.Fatalf("a second delete changed deletedAt: %v", again)
	}
	if found := mustStatus(t, c.Do("GET", "/v0/page_links/search?query=spring", nil), 200); found["totalCount"] != 0.0 {
		t.Fatalf("search found a deleted link: %v", found)
	}
	mustStatus(t, c.Do("POST", "/v0/page_links", map[string]any{"path": "/SPRING-offer", "target": audienceTarget(audiences[0])}), 201)
	mustStatus(t, c.Do("DELETE", "/v0/page_links/pagelink_nope", nil), 404)
	mustStatus(t, c.Do("GET", "/v0/page_links/pagelink_nope", nil), 404)
	mustStatus(t, c.Do("GET", "/v0/page_links/%00", nil), 404)
	mustStatus(t, c.Do("DELETE", "/v0/page_links/x%00", nil), 404)
}

func TestPageLinkTargets(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID, audiences := seedPage(t, s.Runtime.Pool, "acme", 1)
	otherPage, _ := seedPage(t, s.Runtime.Pool, "acme", 0)
	foreignPage, foreignAudiences := seedPage(t, s.Runtime.Pool, "globex", 1)
	for name, tc := range map[string]struct {
		target map[string]any
		status int
	}{
		"audience with its page":       {map[string]any{"targetType": "audience", "audienceId": audiences[0], "pageId": pageID}, 201},
		"audience under another page":  {map[string]any{"targetType": "audience", "audienceId": audiences[0], "pageId": otherPage}, 404},
		"unknown audience":             {audienceTarget("audience_nope"), 404},
		"another tenant's audience":    {audienceTarget(foreignAudiences[0]), 404},
		"unknown page":                 {map[string]any{"targetType": "page", "pageId": "page_nope"}, 404},
		"another tenant's page":        {map[string]any{"targetType": "page", "pageId": foreignPage}, 404},
		"page routing":                 {map[string]any{"targetType": "page_routing", "pageId": otherPage}, 201},
		"page target with an audience": {map[string]any{"targetType": "page", "pageId": pageID, "audienceId": audiences[0]}, 400},
		"audience without audienceId":  {map[string]any{"targetType": "audience", "pageId": pageID}, 400},
		"page without pageId":          {map[string]any{"targetType": "page"}, 400},
	} {
		r := c.Do("POST", "/v0/page_links", map[string]any{"path": "/" + strings.ReplaceAll(name, " ", "-"), "target": tc.target})
		if r.Status != tc.status {
			t.Errorf("%s: %s", name, r)
		}
	}
	// A deleted page cannot be linked to, nor can its audiences.
	if _, err := s.Runtime.Pool.Exec(context.Background(), `UPDATE pages SET deleted_at = now() WHERE id = $1`, pageID); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, c.Do("POST", "/v0/page_links", map[string]any{"path": "/gone", "target": map[string]any{"targetType": "page", "pageId": pageID}}), 404)
	mustStatus(t, c.Do("POST", "/v0/page_links", map[string]any{"path": "/gone", "target": audienceTarget(audiences[0])}), 404)
}

func TestPageLinkSearch(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageA, audA := seedPage(t, s.Runtime.Pool, "acme", 2)
	pageB, _ := seedPage(t, s.Runtime.Pool, "acme", 0)
	link := func(path string, domain any, target map[string]any) string {
		return mustStatus(t, c.Do("POST", "/v0/page_links", map[string]any{"path": path, "tenantDomainId": domain, "target": target}), 201)["pageLinkId"].(string)
	}
	winter := link("/offers/Winter", nil, audienceTarget(audA[0]))
	summer := link("/offers/summer", nil, audienceTarget(audA[1]))
	home := link("/", nil, map[string]any{"targetType": "page", "pageId": pageB})
	route := link("/b/route", nil, map[string]any{"targetType": "page_routing", "pageId": pageB})
	pct := link("/100%25_off", nil, map[string]any{"targetType": "page", "pageId": pageA})
	custom := link("/offers/winter", "dom_x", audienceTarget(audA[0]))

	search := func(query string) []string {
		m := apitest.Decode[apitypes.PageLinkPage](t, c.Do("GET", "/v0/page_links/search"+query, nil), 200, "search answers")
		var out []string
		for _, it := range m.Items {
			out = append(out, it.PageLinkId)
		}
		if m.TotalCount != len(out) && !m.HasMore {
			t.Errorf("%s: totalCount %v for %d items", query, m.TotalCount, len(out))
		}
		return out
	}
	for q, want := range map[string][]string{
		"":                                 {home, pct, route, summer, winter}, // path order
		"?query=WINTER":                    {winter},
		"?query=offers":                    {summer, winter},
		"?query=" + audA[0]:                {winter},
		"?query=" + pageB:                  {home, route},
		"?query=" + pageB[:10]:             nil,   // identifiers match exactly, not as substrings
		"?query=%25":                       {pct}, // LIKE wildcards are literal
		"?query=_":                         {pct},
		"?targetType=page":                 {home, pct},
		"?targetType=page_routing":         {route},
		"?pageId=" + pageA:                 {pct, summer, winter},
		"?pageId=" + pageA + "&query=sum":  {summer},
		"?tenantDomainId=dom_x":            {custom},
		"?tenantDomainId=dom_x&query=off":  {custom},
		"?tenantDomainId=dom_none":         nil,
		"?targetType=audience&query=route": nil,
	} {
		if got := search(q); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("search %q = %v, want %v", q, got, want)
		}
	}

	// Walking two at a time returns every link once; a cursor is bound to its filters.
	var walked []string
	path := "/v0/page_links/search?limit=2"
	for {
		m := apitest.Decode[apitypes.PageLinkPage](t, c.Do("GET", path, nil), 200, "a walk's page answers")
		for _, it := range m.Items {
			walked = append(walked, it.PageLinkId)
		}
		if m.NextCursor == nil {
			break
		}
		path = "/v0/page_links/search?limit=2&cursor=" + url.QueryEscape(*m.NextCursor)
	}
	if fmt.Sprint(walked) != fmt.Sprint([]string{home, pct, route, summer, winter}) {
		t.Fatalf("walk = %v", walked)
	}
	cur := mustStatus(t, c.Do("GET", "/v0/page_links/search?limit=1", nil), 200)["nextCursor"].(string)
	for _, q := range []string{"?query=x&cursor=", "?tenantDomainId=dom_x&cursor="} {
		if r := c.Do("GET", "/v0/page_links/search"+q+url.QueryEscape(cur), nil); r.Status != 400 {
			t.Errorf("cursor with other filters %s: %s", q, r)
		}
	}
	if r := client(t, s, "globex").Do("GET", "/v0/page_links/search?cursor="+url.QueryEscape(cur), nil); r.Status != 400 {
		t.Errorf("foreign cursor: %s", r)
	}
	if got := mustStatus(t, client(t, s, "globex").Do("GET", "/v0/page_links/search", nil), 200); got["totalCount"] != 0.0 {
		t.Errorf("other tenant sees links: %v", got)
	}
}

// Concurrent creations of one path on one domain: exactly one wins, the rest get 409.
func TestPageLinkConcurrentSamePath(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID, _ := seedPage(t, s.Runtime.Pool, "acme", 0)
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = c.Do("POST", "/v0/page_links", map[string]any{"path": "/race", "target": map[string]any{"targetType": "page", "pageId": pageID}}).Status
		}()
	}
	wg.Wait()
	created := 0
	for _, st := range statuses {
		switch st {
		case 201:
			created++
		case 409:
		default:
			t.Fatalf("statuses = %v", statuses)
		}
	}
	if created != 1 {
		t.Fatalf("statuses = %v", statuses)
	}
}

func TestPageLinkBadInput(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID, _ := seedPage(t, s.Runtime.Pool, "acme", 0)
	page := map[string]any{"targetType": "page", "pageId": pageID}
	link := func(p any) map[string]any { return map[string]any{"path": p, "target": page} }
	// Each case names the issues it must get, as field:code:path.
	for name, tc := range map[string]struct {
		method, path string
		body         any
		want         string
	}{
		"malformed JSON":        {"POST", "/v0/page_links", apitest.Raw(`{"path":`), "body:invalid_json:[]"},
		"empty body":            {"POST", "/v0/page_links", nil, "body:invalid_type:[]"},
		"only white space":      {"POST", "/v0/page_links", apitest.Raw("\n"), "body:invalid_json:[]"},
		"missing target":        {"POST", "/v0/page_links", map[string]any{"path": "/a"}, "body:invalid_type:[target]"},
		"missing path":          {"POST", "/v0/page_links", map[string]any{"target": page}, "body:invalid_type:[path]"},
		"null target":           {"POST", "/v0/page_links", map[string]any{"path": "/a", "target": nil}, "body:invalid_type:[target]"},
		"target a string":       {"POST", "/v0/page_links", map[string]any{"path": "/a", "target": "page"}, "body:invalid_type:[target]"},
		"bad target type":       {"POST", "/v0/page_links", map[string]any{"path": "/a", "target": map[string]any{"targetType": "site", "pageId": pageID}}, "body:invalid_enum_value:[target targetType]"},
		"unknown target key":    {"POST", "/v0/page_links", map[string]any{"path": "/a", "target": map[string]any{"targetType": "page", "pageId": pageID, "x": 1}}, "body:unrecognized_keys:[target x]"},
		"unknown field":         {"POST", "/v0/page_links", map[string]any{"path": "/a", "target": page, "slug": "a"}, "body:unrecognized_keys:[slug]"},
		"audience without ID":   {"POST", "/v0/page_links", map[string]any{"path": "/a", "target": map[string]any{"targetType": "audience", "pageId": pageID}}, "body:invalid_type:[target audienceId]"},
		"page with audience":    {"POST", "/v0/page_links", map[string]any{"path": "/a", "target": map[string]any{"targetType": "page_routing", "pageId": pageID, "audienceId": "audience_1"}}, "body:unrecognized_keys:[target audienceId]"},
		"page without pageId":   {"POST", "/v0/page_links", map[string]any{"path": "/a", "target": map[string]any{"targetType": "page"}}, "body:invalid_type:[target pageId]"},
		"path without slash":    {"POST", "/v0/page_links", link("a"), "body:invalid_string:[path]"},
		"empty path":            {"POST", "/v0/page_links", link(""), "body:too_small:[path] body:invalid_string:[path]"},
		"path with query":       {"POST", "/v0/page_links", link("/a?b=c"), "body:invalid_string:[path]"},
		"path with fragment":    {"POST", "/v0/page_links", link("/a#b"), "body:invalid_string:[path]"},
		"path with space":       {"POST", "/v0/page_links", link("/a b"), "body:invalid_string:[path]"},
		"path with dot segment": {"POST", "/v0/page_links", link("/a/../b"), "body:invalid_string:[path]"},
		"path encoded dots":     {"POST", "/v0/page_links", link("/a/%2E%2e"), "body:invalid_string:[path]"},
		"path double slash":     {"POST", "/v0/page_links", link("/a//b"), "body:invalid_string:[path]"},
		"path bad escape":       {"POST", "/v0/page_links", link("/a%zz"), "body:invalid_string:[path]"},
		"path short escape":     {"POST", "/v0/page_links", link("/a%4"), "body:invalid_string:[path]"},
		"path non-ASCII":        {"POST", "/v0/page_links", link("/café"), "body:invalid_string:[path]"},
		"path too long":         {"POST", "/v0/page_links", link("/" + strings.Repeat("a", 1024)), "body:too_big:[path]"},
		"path a number":         {"POST", "/v0/page_links", link(7), "body:invalid_type:[path]"},
		"empty domain":          {"POST", "/v0/page_links", map[string]any{"path": "/a", "tenantDomainId": "", "target": page}, "body:too_small:[tenantDomainId]"},
		"domain a number":       {"POST", "/v0/page_links", map[string]any{"path": "/a", "tenantDomainId": 3, "target": page}, "body:invalid_type:[tenantDomainId]"},
		"empty pageId":          {"POST", "/v0/page_links", map[string]any{"path": "/a", "target": map[string]any{"targetType": "page", "pageId": ""}}, "body:too_small:[target pageId]"},
		"limit zero":            {"GET", "/v0/page_links/search?limit=0", nil, "query:too_small:[limit]"},
		"limit 101":             {"GET", "/v0/page_links/search?limit=101", nil, "query:too_big:[limit]"},
		"limit abc":             {"GET", "/v0/page_links/search?limit=abc", nil, "query:invalid_type:[limit]"},
		"garbage cursor":        {"GET", "/v0/page_links/search?cursor=abc", nil, "query:invalid_cursor:[cursor]"},
		"bad targetType":        {"GET", "/v0/page_links/search?targetType=site", nil, "query:invalid_enum_value:[targetType]"},
		"upper-case targetType": {"GET", "/v0/page_links/search?targetType=PAGE", nil, "query:invalid_enum_value:[targetType]"},
		"empty tenantDomainId":  {"GET", "/v0/page_links/search?tenantDomainId=", nil, "query:too_small:[tenantDomainId]"},
		"long query":            {"GET", "/v0/page_links/search?query=" + strings.Repeat("q", 256), nil, "query:too_big:[query]"},
		"long pageId":           {"GET", "/v0/page_links/search?pageId=" + strings.Repeat("p", 256), nil, "query:too_big:[pageId]"},
		"repeated query":        {"GET", "/v0/page_links/search?query=a&query=b", nil, "query:invalid_type:[query]"},
		"NUL in path":           {"POST", "/v0/page_links", link("/a\x00"), "body:invalid_string:[path]"},
		"NUL in domain":         {"POST", "/v0/page_links", map[string]any{"path": "/a", "tenantDomainId": "d\x00", "target": page}, "body:invalid_string:[tenantDomainId]"},
		"NUL in query":          {"GET", "/v0/page_links/search?query=%00", nil, "query:invalid_string:[query]"},
		"NUL in pageId":         {"GET", "/v0/page_links/search?pageId=a%00", nil, "query:invalid_string:[pageId]"},
	} {
		r := c.Do(tc.method, tc.path, tc.body)
		if r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" || fmt.Sprint(apitest.IssueCodes(r)) != "["+tc.want+"]" {
			t.Errorf("%s: %v, want [%s]: %s", name, apitest.IssueCodes(r), tc.want, r)
		}
	}
	// The path characters RFC 3986 allows, percent escapes and a trailing slash are fine.
	for i, p := range []string{"/a:b@c!$&'()*+,;=", "/caf%C3%A9/", "/~x_y.z-1"} {
		r := mustStatus(t, c.Do("POST", "/v0/page_links", link(p)), 201)
		if want := strings.TrimSuffix(p, "/"); r["path"] != want {
			t.Errorf("%d: path %v, want %s", i, r["path"], want)
		}
	}
}
