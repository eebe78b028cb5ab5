package application_test

import (
	"fmt"
	"net/url"
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
	aid := createAudience(t, c, pageID, nil).AudienceId
	page := "/v0/pages/" + pageID
	aud := fmt.Sprintf("%s/audiences/%s", page, aid)
	long := strings.Repeat("x", 129)

	page3 := map[string]any{"name": "n", "title": "t", "pageType": "inbound"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for k, v := range page3 {
			m[k] = v
		}
		m[k] = v
		return m
	}
	msg := func(changes ...any) map[string]any { return map[string]any{"content": "x", "changes": changes} }
	change := func(field, value string) map[string]any { return map[string]any{"field": field, "newValue": value} }

	// Each case names the issues it must get, as field:code:path.
	cases := []struct {
		name, method, path string
		body               any
		want               string
	}{
		{"list pages limit 0", "GET", "/v0/pages?limit=0", nil, "query:too_small:[limit]"},
		{"list pages limit 101", "GET", "/v0/pages?limit=101", nil, "query:too_big:[limit]"},
		{"list pages limit abc", "GET", "/v0/pages?limit=abc", nil, "query:invalid_type:[limit]"},
		{"list pages bad cursor", "GET", "/v0/pages?cursor=nonsense", nil, "query:invalid_cursor:[cursor]"},
		{"create page malformed", "POST", "/v0/pages", "{", "body:invalid_json:[]"},
		{"create page no body", "POST", "/v0/pages", nil, "body:invalid_type:[]"},
		{"create page empty", "POST", "/v0/pages", map[string]any{},
			"body:invalid_type:[name] body:invalid_type:[title] body:invalid_type:[pageType]"},
		{"create page bad type", "POST", "/v0/pages", with("pageType", "blog"), "body:invalid_enum_value:[pageType]"},
		{"create page unknown field", "POST", "/v0/pages", with("color", "red"), "body:unrecognized_keys:[color]"},
		{"create page wrong type", "POST", "/v0/pages", with("name", 1), "body:invalid_type:[name]"},
		{"create page bad flag", "POST", "/v0/pages", with("flags", []string{"pinned"}), "body:invalid_enum_value:[flags 0]"},
		{"create page dup flag", "POST", "/v0/pages", with("flags", []string{"home_page", "home_page"}), "body:too_big:[flags] body:custom:[flags]"},
		{"create page action without id", "POST", "/v0/pages", with("actions", []any{map[string]any{"buttonTitle": "x"}}),
			"body:invalid_type:[actions 0 actionId]"},
		{"create page duplicate action ids", "POST", "/v0/pages", with("actions", []any{map[string]any{"actionId": "a", "buttonTitle": "x"},
			map[string]any{"actionId": "b", "buttonTitle": "y"}, map[string]any{"actionId": "a", "buttonTitle": "z"}}),
			"body:custom:[actions 2 actionId]"},
		{"create page action index", "POST", "/v0/pages", with("actions", []any{map[string]any{"actionId": "a", "buttonTitle": "x", "actionIndex": 1001}}),
			"body:too_big:[actions 0 actionIndex]"},
		{"create page unknown header action", "POST", "/v0/pages", with("headerActionId", "zz"), "body:custom:[headerActionId]"},
		{"create page script no content", "POST", "/v0/pages", with("scripts", []any{map[string]any{"name": "s"}}),
			"body:invalid_type:[scripts 0 content]"},
		{"create page nav link not object", "POST", "/v0/pages", with("navLinks", []any{"x"}), "body:invalid_type:[navLinks 0]"},
		{"create page widget logos wrong", "POST", "/v0/pages", with("actionCardWidgets", []any{map[string]any{"type": "logos", "logos": "x"}}),
			"body:invalid_type:[actionCardWidgets 0 logos]"},
		{"create page widget without type", "POST", "/v0/pages", with("actionCardWidgets", []any{map[string]any{"title": "t"}}),
			"body:invalid_type:[actionCardWidgets 0 type]"},
		{"create page footer link missing url", "POST", "/v0/pages", with("footerLinks", []any{map[string]any{"id": "f", "title": "F",
			"links": []any{map[string]any{"id": "l", "text": "t"}}}}), "body:invalid_type:[footerLinks 0 links 0 url]"},
		{"create page footer group missing links", "POST", "/v0/pages", with("footerLinks", []any{
			map[string]any{"id": "f", "title": "F", "links": []any{}}, map[string]any{"id": "g", "title": "G"}}),
			"body:invalid_type:[footerLinks 1 links]"},
		{"create page metadata unknown", "POST", "/v0/pages", with("metadata", map[string]any{"colour": "x"}),
			"body:unrecognized_keys:[metadata colour]"},
		{"create page keywords wrong", "POST", "/v0/pages", with("metadata", map[string]any{"keywords": "a,b"}),
			"body:invalid_type:[metadata keywords]"},
		{"create page not json", "POST", "/v0/pages", "[1,2]", "body:invalid_type:[]"},
		{"update page no body", "PATCH", page, nil, "body:invalid_type:[]"},
		{"update page only white space", "PATCH", page, " \n\t", "body:invalid_json:[]"},
		{"update page empty name", "PATCH", page, map[string]any{"name": ""}, "body:too_small:[name]"},
		{"update page null title", "PATCH", page, map[string]any{"title": nil}, "body:invalid_type:[title]"},
		{"update page bad type", "PATCH", page, map[string]any{"pageType": "x"}, "body:invalid_enum_value:[pageType]"},
		{"update page metadata wrong", "PATCH", page, map[string]any{"metadata": "x"}, "body:invalid_type:[metadata]"},
		{"update page metadata unknown", "PATCH", page, map[string]any{"metadata": map[string]any{"colour": "x"}}, "body:unrecognized_keys:[metadata colour]"},
		{"update page metadata too long", "PATCH", page, map[string]any{"metadata": map[string]any{"title": strings.Repeat("t", 501)}},
			"body:too_big:[metadata title]"},
		{"update page unknown", "PATCH", page, map[string]any{"status": "published"}, "body:unrecognized_keys:[status]"},
		{"update page duplicate action ids", "PATCH", page, map[string]any{"actions": []any{map[string]any{"actionId": "a", "buttonTitle": "x"},
			map[string]any{"actionId": "a", "buttonTitle": "y"}}}, "body:custom:[actions 1 actionId]"},
		{"update page header action gone", "PATCH", page, map[string]any{"actions": []any{}, "headerActionId": "a"}, "body:custom:[headerActionId]"},
		{"publish with body field", "POST", page + "/publish", map[string]any{"force": true}, "body:unrecognized_keys:[force]"},
		{"publish only white space", "POST", page + "/publish", " ", "body:invalid_json:[]"},
		{"archive malformed", "POST", page + "/archive", "{", "body:invalid_json:[]"},
		{"archive only white space", "POST", page + "/archive", "\r\n", "body:invalid_json:[]"},
		{"restore with body field", "POST", page + "/restore", map[string]any{"x": 1}, "body:unrecognized_keys:[x]"},
		{"restore only white space", "POST", page + "/restore", "\t", "body:invalid_json:[]"},
		{"list audiences limit", "GET", page + "/audiences?limit=-1", nil, "query:too_small:[limit]"},
		{"list audiences cursor", "GET", page + "/audiences?cursor=abc", nil, "query:invalid_cursor:[cursor]"},
		{"create audience no body", "POST", page + "/audiences", nil, "body:invalid_type:[]"},
		{"create audience only white space", "POST", page + "/audiences", "  ", "body:invalid_json:[]"},
		{"create audience bad behaviour", "POST", page + "/audiences", map[string]any{"publishBehavior": "later"}, "body:invalid_enum_value:[publishBehavior]"},
		{"create audience empty name", "POST", page + "/audiences", map[string]any{"customName": ""}, "body:too_small:[customName]"},
		{"create audience empty context", "POST", page + "/audiences", map[string]any{"supplementaryContext": ""}, "body:too_small:[supplementaryContext]"},
		{"create audience bad url", "POST", page + "/audiences", map[string]any{"actionUrlOverride": "not a url"}, "body:invalid_string:[actionUrlOverride]"},
		{"create audience url without host", "POST", page + "/audiences", map[string]any{"actionUrlOverride": "https://"}, "body:invalid_string:[actionUrlOverride]"},
		{"create audience override image", "POST", page + "/audiences", map[string]any{"metadataOverride": map[string]any{"ogImageUrl": "https://x"}},
			"body:unrecognized_keys:[metadataOverride ogImageUrl]"},
		{"create audience unknown", "POST", page + "/audiences", map[string]any{"personId": "p"}, "body:unrecognized_keys:[personId]"},
		{"update audience no body", "PATCH", aud, nil, "body:invalid_type:[]"},
		{"update audience only white space", "PATCH", aud, "\n", "body:invalid_json:[]"},
		{"update audience bad behaviour", "PATCH", aud, map[string]any{"publishBehavior": 1}, "body:invalid_enum_value:[publishBehavior]"},
		{"update audience override image", "PATCH", aud, map[string]any{"metadataOverride": map[string]any{"twitterImageFileId": "file_1"}},
			"body:unrecognized_keys:[metadataOverride twitterImageFileId]"},
		{"update audience empty name", "PATCH", aud, map[string]any{"customName": ""}, "body:too_small:[customName]"},
		{"update audience bad url", "PATCH", aud, map[string]any{"actionUrlOverride": "ftp://x"}, "body:invalid_string:[actionUrlOverride]"},
		{"archive audience field", "POST", aud + "/archive", map[string]any{"reason": "x"}, "body:unrecognized_keys:[reason]"},
		{"archive audience only white space", "POST", aud + "/archive", " ", "body:invalid_json:[]"},
		{"create version long key", "POST", aud + "/versions", map[string]any{"operationKey": long}, "body:too_big:[operationKey]"},
		{"create version empty key", "POST", aud + "/versions", map[string]any{"operationKey": ""}, "body:too_small:[operationKey]"},
		{"create version key type", "POST", aud + "/versions", map[string]any{"operationKey": 5}, "body:invalid_type:[operationKey]"},
		{"create version only white space", "POST", aud + "/versions", " \n ", "body:invalid_json:[]"},
		{"list versions include", "GET", aud + "/versions?include=everything", nil, "query:invalid_string:[include]"},
		{"list versions include another", "GET", aud + "/versions?include=snapshot,changes", nil, "query:invalid_string:[include]"},
		{"list versions limit", "GET", aud + "/versions?limit=1000", nil, "query:too_big:[limit]"},
		{"list versions cursor", "GET", aud + "/versions?cursor=x", nil, "query:invalid_cursor:[cursor]"},
		{"add message no body", "POST", aud + "/messages", nil, "body:invalid_type:[]"},
		{"add message empty", "POST", aud + "/messages", map[string]any{"content": ""}, "body:too_small:[content]"},
		{"add message bad field", "POST", aud + "/messages", msg(change("title", "y")), "body:invalid_enum_value:[changes 0 field]"},
		{"add message change value type", "POST", aud + "/messages", msg(map[string]any{"field": "currentMetaTitle", "newValue": 3}),
			"body:invalid_type:[changes 0 newValue]"},
		{"add message change without value", "POST", aud + "/messages", msg(change("currentMetaTitle", "y"), map[string]any{"field": "currentMetaTitle"}),
			"body:invalid_type:[changes 1 newValue]"},
		{"add message malformed", "POST", aud + "/messages", "{\"content\":", "body:invalid_json:[]"},
		// A change may propose only what the audience field it lands in can hold.
		{"add message long title", "POST", aud + "/messages", msg(change("currentMetaTitle", strings.Repeat("t", 501))),
			"body:too_big:[changes 0 newValue]"},
		{"add message long description", "POST", aud + "/messages", msg(change("currentMetaDescription", strings.Repeat("d", 2001))),
			"body:too_big:[changes 0 newValue]"},
		{"add message long context", "POST", aud + "/messages", msg(change("currentSupplementaryContext", strings.Repeat("c", 20001))),
			"body:too_big:[changes 0 newValue]"},
		{"add message too many keywords", "POST", aud + "/messages", msg(change("currentMetaKeywords", strings.Repeat("k,", 51))),
			"body:too_big:[changes 0 newValue]"},
		{"add message long keyword", "POST", aud + "/messages", msg(change("currentMetaTitle", "ok"), change("currentMetaKeywords", "a, "+strings.Repeat("k", 201))),
			"body:too_big:[changes 1 newValue]"},
		{"create page NUL in name", "POST", "/v0/pages", with("name", "a\x00b"), "body:invalid_string:[name]"},
		{"update page NUL in metadata", "PATCH", page, map[string]any{"metadata": map[string]any{"keywords": []string{"\x00"}}},
			"body:invalid_string:[metadata keywords 0]"},
		{"create audience NUL", "POST", page + "/audiences", map[string]any{"customName": "\x00"}, "body:invalid_string:[customName]"},
		{"add message NUL", "POST", aud + "/messages", map[string]any{"content": "hi\x00"}, "body:invalid_string:[content]"},
		{"create version NUL key", "POST", aud + "/versions", map[string]any{"operationKey": "\x00"}, "body:invalid_string:[operationKey]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if s, ok := body.(string); ok {
				body = apitest.Raw(s)
			}
			r := c.Do(tc.method, tc.path, body)
			if r.Status != 400 || r.Map()["code"] != "VALIDATION_ERROR" || fmt.Sprint(apitest.IssueCodes(r)) != "["+tc.want+"]" {
				t.Fatalf("%s %s → %v, want [%s]: %s", tc.method, tc.path, apitest.IssueCodes(r), tc.want, r)
			}
		})
	}
	// An empty object is a valid patch, and a version may be created without a body.
	mustStatus(t, c.Do("PATCH", page, map[string]any{}), 200)
	mustStatus(t, c.Do("PATCH", aud, map[string]any{}), 200)
	mustStatus(t, c.Do("POST", aud+"/versions", nil), 201)
	mustStatus(t, c.Do("GET", aud+"/versions?include="+url.QueryEscape(" snapshot,,snapshot "), nil), 200)
}
