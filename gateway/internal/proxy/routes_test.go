package proxy

import "testing"

func TestRouteMatching(t *testing.T) {
	tbl := newTable(Routes)
	for path, want := range map[string]string{
		"/v0/topics":                        "topics",
		"/v0/topics/topic_1/entries":        "topics",
		"/v0/pages/p/audiences":             "pages",
		"/v0/page_links/search":             "pages",
		"/v0/persons/search":                "persons",
		"/v0/accounts/account_1/logs":       "persons",
		"/v0/assets/trash":                  "assets",
		"/v0/webhook_subscriptions/w/retry": "webhooks",
		"/v0/topicsX":                       "",
		"/v0/":                              "",
		"/v1/topics":                        "",
		"/topics":                           "",
		"/v0/openapi.json":                  "",
	} {
		got, ok := tbl.match(path)
		if got != want || ok != (want != "") {
			t.Errorf("match(%q) = %q, %v; want %q", path, got, ok, want)
		}
	}
	if s := Services(); len(s) != 5 || s[0] != "topics" {
		t.Fatalf("Services() = %v", s)
	}
}

func TestUploadRoutes(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/v0/assets", true},
		{"POST", "/v0/assets/", true},
		{"PUT", "/v0/assets", false},
		{"POST", "/v0/assets/asset_1/trash", false},
		{"POST", "/v0/topics", false},
		{"POST", "/v0/assetsX", false},
	} {
		if got := IsUpload(tc.method, tc.path); got != tc.want {
			t.Errorf("IsUpload(%s %s) = %v", tc.method, tc.path, got)
		}
	}
}
