// Package proxy forwards authenticated requests to the service that owns their path,
// over pooled keep-alive connections, with the tenant and request ID in internal headers.
package proxy

import "strings"

// Route maps a path prefix (/v0/<collection>) to the service that owns it.
type Route struct {
	Prefix  string
	Service string
}

// Routes is the platform's routing table.
var Routes = []Route{
	{"/v0/topics", "topics"},
	{"/v0/pages", "pages"},
	{"/v0/page_links", "pages"},
	{"/v0/persons", "persons"},
	{"/v0/accounts", "persons"},
	{"/v0/assets", "assets"},
	{"/v0/webhook_subscriptions", "webhooks"},
}

// Services lists the service names in Routes, once each, in order.
func Services() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range Routes {
		if !seen[r.Service] {
			seen[r.Service] = true
			out = append(out, r.Service)
		}
	}
	return out
}

// table finds a route by the first two path segments in one map lookup.
type table map[string]string

func newTable(routes []Route) table {
	t := table{}
	for _, r := range routes {
		t[r.Prefix] = r.Service
	}
	return t
}

// match returns the service owning path: the prefix must be the whole path or be
// followed by "/".
func (t table) match(path string) (string, bool) {
	if !strings.HasPrefix(path, "/v0/") {
		return "", false
	}
	end := strings.IndexByte(path[4:], '/')
	prefix := path
	if end >= 0 {
		prefix = path[:4+end]
	}
	s, ok := t[prefix]
	return s, ok
}
