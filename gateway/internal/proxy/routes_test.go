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
