package application_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/service/servicetest"
)

// Every pages core endpoint answers bad input with a 400 VALIDATION_ERROR envelope
// (the client checks the envelope against the document), never a 500.
func TestBadInputIs400(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID := createPage(t, c, map[string]any{"name": "p", "title": "T", "pageType": "inbound",
		"actions": []any{map[string]any{"actionId": "a", "buttonTitle": "Go"}}})["pageId"].(string)
	aid := createAudience(t, c, pageID, nil)["audienceId"].(string)
	page := "/v0/pages/" + pageID
	aud := fmt.Sprintf("%s/audiences/%s", page, aid)
	long := strings.Repeat("x", 129)

	cases := []struct {
		name, method, path string
		body               any
	}{
		{"list pages limit 0", "GET", "/v0/pages?limit=0", nil},
		{"list pages limit 101", "GET", "/v0/pages?limit=101", nil},
		{"list pages limit abc", "GET", "/v0/pages?limit=abc", nil},
		{"list pages bad cursor", "GET", "/v0/pages?cursor=nonsense", nil},
		{"create page malformed", "POST", "/v0/pages", "{"},
		{"create page empty", "POST", "/v0/pages", map[string]any{}},
		{"create page bad type", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "blog"}},
		{"create page unknown field", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound", "color": "red"}},
		{"create page wrong type", "POST", "/v0/pages", map[string]any{"name": 1, "title": "t", "pageType": "inbound"}},
		{"create page bad flag", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound", "flags": []string{"pinned"}}},
		{"create page dup flag", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound", "flags": []string{"home_page", "home_page"}}},
		{"create page action without id", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound",
			"actions": []any{map[string]any{"buttonTitle": "x"}}}},
		{"create page duplicate action ids", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound",
			"actions": []any{map[string]any{"actionId": "a", "buttonTitle": "x"}, map[string]any{"actionId": "a", "buttonTitle": "y"}}}},
		{"create page unknown header action", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound", "headerActionId": "zz"}},
		{"create page script no content", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound",
			"scripts": []any{map[string]any{"name": "s"}}}},
		{"create page nav link not object", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound", "navLinks": []any{"x"}}},
		{"create page widget logos wrong", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound",
			"actionCardWidgets": []any{map[string]any{"type": "logos", "logos": "x"}}}},
		{"create page footer link missing url", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound",
			"footerLinks": []any{map[string]any{"id": "f", "title": "F", "links": []any{map[string]any{"id": "l", "text": "t"}}}}}},
		{"create page metadata unknown", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound",
			"metadata": map[string]any{"colour": "x"}}},
		{"create page keywords wrong", "POST", "/v0/pages", map[string]any{"name": "n", "title": "t", "pageType": "inbound",
			"metadata": map[string]any{"keywords": "a,b"}}},
		{"create page not json", "POST", "/v0/pages", "[1,2]"},
		{"update page empty name", "PATCH", page, map[string]any{"name": ""}},
		{"update page null title", "PATCH", page, map[string]any{"title": nil}},
		{"update page bad type", "PATCH", page, map[string]any{"pageType": "x"}},
		{"update page metadata wrong", "PATCH", page, map[string]any{"metadata": "x"}},
		{"update page unknown", "PATCH", page, map[string]any{"status": "published"}},
		{"publish with body field", "POST", page + "/publish", map[string]any{"force": true}},
		{"archive malformed", "POST", page + "/archive", "{"},
		{"restore with body field", "POST", page + "/restore", map[string]any{"x": 1}},
		{"list audiences limit", "GET", page + "/audiences?limit=-1", nil},
		{"list audiences cursor", "GET", page + "/audiences?cursor=abc", nil},
		{"create audience bad behaviour", "POST", page + "/audiences", map[string]any{"publishBehavior": "later"}},
		{"create audience empty name", "POST", page + "/audiences", map[string]any{"customName": ""}},
		{"create audience empty context", "POST", page + "/audiences", map[string]any{"supplementaryContext": ""}},
		{"create audience bad url", "POST", page + "/audiences", map[string]any{"actionUrlOverride": "not a url"}},
		{"create audience override image", "POST", page + "/audiences", map[string]any{"metadataOverride": map[string]any{"ogImageUrl": "https://x"}}},
		{"create audience unknown", "POST", page + "/audiences", map[string]any{"personId": "p"}},
		{"update audience bad behaviour", "PATCH", aud, map[string]any{"publishBehavior": 1}},
		{"update audience empty name", "PATCH", aud, map[string]any{"customName": ""}},
		{"update audience bad url", "PATCH", aud, map[string]any{"actionUrlOverride": "ftp://x"}},
		{"archive audience field", "POST", aud + "/archive", map[string]any{"reason": "x"}},
		{"create version long key", "POST", aud + "/versions", map[string]any{"operationKey": long}},
		{"create version empty key", "POST", aud + "/versions", map[string]any{"operationKey": ""}},
		{"create version key type", "POST", aud + "/versions", map[string]any{"operationKey": 5}},
		{"list versions include", "GET", aud + "/versions?include=everything", nil},
		{"list versions limit", "GET", aud + "/versions?limit=1000", nil},
		{"list versions cursor", "GET", aud + "/versions?cursor=x", nil},
		{"add message empty", "POST", aud + "/messages", map[string]any{"content": ""}},
		{"add message bad field", "POST", aud + "/messages", map[string]any{"content": "x", "changes": []any{map[string]any{"field": "title", "newValue": "y"}}}},
		{"add message change value type", "POST", aud + "/messages", map[string]any{"content": "x", "changes": []any{map[string]any{"field": "currentMetaTitle", "newValue": 3}}}},
		{"add message malformed", "POST", aud + "/messages", "{\"content\":"},
		// A change may propose only what the audience field it lands in can hold.
		{"add message long title", "POST", aud + "/messages", map[string]any{"content": "x",
			"changes": []any{map[string]any{"field": "currentMetaTitle", "newValue": strings.Repeat("t", 501)}}}},
		{"add message long description", "POST", aud + "/messages", map[string]any{"content": "x",
			"changes": []any{map[string]any{"field": "currentMetaDescription", "newValue": strings.Repeat("d", 2001)}}}},
		{"add message too many keywords", "POST", aud + "/messages", map[string]any{"content": "x",
			"changes": []any{map[string]any{"field": "currentMetaKeywords", "newValue": strings.Repeat("k,", 51)}}}},
		{"add message long keyword", "POST", aud + "/messages", map[string]any{"content": "x",
			"changes": []any{map[string]any{"field": "currentMetaKeywords", "newValue": "a, " + strings.Repeat("k", 201)}}}},
		{"create page NUL in name", "POST", "/v0/pages", map[string]any{"name": "a\x00b", "title": "t", "pageType": "inbound"}},
		{"update page NUL in metadata", "PATCH", page, map[string]any{"metadata": map[string]any{"keywords": []string{"\x00"}}}},
		{"create audience NUL", "POST", page + "/audiences", map[string]any{"customName": "\x00"}},
		{"add message NUL", "POST", aud + "/messages", map[string]any{"content": "hi\x00"}},
		{"create version NUL key", "POST", aud + "/versions", map[string]any{"operationKey": "\x00"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if s, ok := body.(string); ok {
				body = apitest.Raw(s)
			}
			r := c.Do(tc.method, tc.path, body)
			if r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" {
				t.Fatalf("%s %s → %s", tc.method, tc.path, r)
			}
		})
	}
}
