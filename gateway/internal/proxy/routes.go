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
	{"/v0/events", "webhooks"},
	{"/v0/event_types", "webhooks"},
}

// Upload is a route whose request body streams through to the service (a multipart
// upload of up to the upload limit) instead of being read whole under the 1 MiB limit.
type Upload struct {
	Method string
	Path   string
}

// Uploads are the platform's streamed upload routes.
var Uploads = []Upload{{"POST", "/v0/assets"}}

// IsUpload reports whether method and path name an upload route (a trailing slash
// allowed, as the services' routers allow it).
func IsUpload(method, path string) bool {
	path = strings.TrimSuffix(path, "/")
	for _, u := range Uploads {
		if u.Method == method && u.Path == path {
			return true
		}
	}
	return false
}

// Signed downloads: the one path served without an API key. The token in it is the
// authorisation (the assets service checks its signature and expiry); the gateway
// forwards GET and HEAD of FilesPrefix + token, and nothing else, to FilesService at
// FilesUpstreamPath + token, with no tenant.
const (
	FilesPrefix       = "/v0/asset_files/"
	FilesRoute        = FilesPrefix + ":token"
	FilesService      = "assets"
	FilesUpstreamPath = "/files/"
)

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

var routeTable = newTable(Routes)

// ServiceOf returns the service a path goes to, as the gateway routes it: by its prefix,
// and the signed downloads to FilesService.
func ServiceOf(path string) (string, bool) {
	if strings.HasPrefix(path, FilesPrefix) {
		return FilesService, true
	}
	return routeTable.match(path)
}
