// Package observe holds the gateway's own request metrics: every request of the public
// listener counted and timed by the upstream service that owns it and by its route
// template from the API document (`/v0/pages/{page_id}`, not the catch-all `/*` the
// proxy is mounted on), and the requests the gateway refuses itself, by reason. Labels are
// bounded: routes come from the document, methods from a fixed set, status codes are
// three digits; no label names a tenant, a key or a raw path.
package observe

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/customerapi/platform/libs/apierror"
)

// Labels of requests that match no template of the document.
const (
	// Unmatched is the route of a request matching no path of the document.
	Unmatched = "unmatched"
	// Gateway is the upstream of what the gateway answers itself: the API document,
	// unknown routes outside every service's prefix.
	Gateway = "gateway"
)

// methods are the values of the method label; anything else counts as "OTHER",
// as in every service's http_server_requests_total (telemetry.MethodLabel).
var methods = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "OTHER"}

func methodIndex(m string) int {
	switch m {
	case "GET":
		return 0
	case "HEAD":
		return 1
	case "POST":
		return 2
	case "PUT":
		return 3
	case "PATCH":
		return 4
	case "DELETE":
		return 5
	case "OPTIONS":
		return 6
	}
	return 7
}

// Route is one path template of the API document and the service that owns it.
type Route struct {
	// Template is the document's path, e.g. /v0/pages/{page_id}.
	Template string
	// Upstream is the service that serves it, or Gateway.
	Upstream string
}

// Metrics are the gateway's request metrics over a fixed set of routes.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	root     *node
	// prefix finds the upstream of a path that matches no template (the service answers
	// it, usually with 404); nil: Gateway.
	prefix func(path string) (string, bool)
	// unmatched holds the entries of paths matching no template, by upstream.
	mu        sync.Mutex
	unmatched map[string]*routeEntry
}

// node is one path segment of the route tree: literal children, or one parameter.
type node struct {
	children map[string]*node
	param    *node
	entry    *routeEntry
}

// routeEntry is one route's series, resolved lazily per method and status: the label
// lookups happen once, not per request.
type routeEntry struct {
	m        *Metrics
	route    string
	upstream string
	methods  [len(methods)]methodEntry
}

type methodEntry struct {
	mu       sync.Mutex
	duration atomic.Pointer[prometheus.Observer]
	codes    atomic.Pointer[[]codeCounter] // copy on write: read without a lock
}

type codeCounter struct {
	code int
	c    prometheus.Counter
}

// New registers the metrics on reg for the given routes. prefix, when set, names the
// upstream of a path that matches no route.
func New(reg prometheus.Registerer, routes []Route, prefix func(path string) (string, bool)) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_requests_total",
			Help: "Requests of the public listener, by upstream service, route template, method and status code.",
		}, []string{"upstream", "route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gateway_request_duration_seconds",
			Help:    "Time from a request's arrival to its answer's headers (streamed bodies go on after), by upstream service, route template and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"upstream", "route", "method"}),
		root:      &node{},
		prefix:    prefix,
		unmatched: map[string]*routeEntry{},
	}
	reg.MustRegister(m.requests, m.duration)
	sort.Slice(routes, func(i, j int) bool { return routes[i].Template < routes[j].Template })
	for _, r := range routes {
		n := m.root
		for _, seg := range strings.Split(strings.Trim(r.Template, "/"), "/") {
			if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
				if n.param == nil {
					n.param = &node{}
				}
				n = n.param
				continue
			}
			if n.children == nil {
				n.children = map[string]*node{}
			}
			c := n.children[seg]
			if c == nil {
				c = &node{}
				n.children[seg] = c
			}
			n = c
		}
		n.entry = &routeEntry{m: m, route: r.Template, upstream: r.Upstream}
	}
	return m
}

// match finds the route of path, walking the tree one segment at a time without
// allocating; a literal segment wins over a parameter.
func (m *Metrics) match(path string) *routeEntry {
	n := m.root
	p := strings.Trim(path, "/")
	for p != "" {
		seg := p
		rest := ""
		if i := strings.IndexByte(p, '/'); i >= 0 {
			seg, rest = p[:i], p[i+1:]
		}
		if c := n.children[seg]; c != nil {
			n = c
		} else if n.param != nil && seg != "" {
			n = n.param
		} else {
			return nil
		}
		p = rest
	}
	return n.entry
}

// Resolve returns the route entry of a path: its template's, or the unmatched route of
// the path's upstream.
func (m *Metrics) resolve(path string) *routeEntry {
	if e := m.match(path); e != nil {
		return e
	}
	up := Gateway
	if m.prefix != nil {
		if s, ok := m.prefix(path); ok {
			up = s
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.unmatched[up]
	if e == nil {
		e = &routeEntry{m: m, route: Unmatched, upstream: up}
		m.unmatched[up] = e
	}
	return e
}

func (e *routeEntry) observe(method int, status int, d time.Duration) {
	me := &e.methods[method]
	obs := me.duration.Load()
	if obs == nil {
		o := e.m.duration.WithLabelValues(e.upstream, e.route, methods[method])
		obs = &o
		me.duration.Store(obs)
	}
	(*obs).Observe(d.Seconds())
	if cs := me.codes.Load(); cs != nil {
		for _, c := range *cs {
			if c.code == status {
				c.c.Inc()
				return
			}
		}
	}
	me.mu.Lock()
	defer me.mu.Unlock()
	var cur []codeCounter
	if cs := me.codes.Load(); cs != nil {
		cur = *cs
	}
	for _, c := range cur {
		if c.code == status {
			c.c.Inc()
			return
		}
	}
	c := e.m.requests.WithLabelValues(e.upstream, e.route, methods[method], strconv.Itoa(status))
	next := append(append([]codeCounter(nil), cur...), codeCounter{code: status, c: c})
	me.codes.Store(&next)
	c.Inc()
}

const localsKey = "observe.route"

// Middleware counts and times every request that reaches it. Errors of later handlers
// are rendered here, so the status counted is the status sent.
func (m *Metrics) Middleware(render apierror.Renderer) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		e := m.resolve(c.Path())
		c.Locals(localsKey, e)
		err := c.Next()
		if err != nil {
			if rerr := render.Write(c, err); rerr != nil {
				return rerr
			}
		}
		e.observe(methodIndex(c.Method()), c.Response().StatusCode(), time.Since(start))
		return nil
	}
}

// RouteName is the route template Middleware resolved for the request ("" before it), for
// the listener's generic request metrics and the request's span name.
func RouteName(c *fiber.Ctx) string {
	if e, ok := c.Locals(localsKey).(*routeEntry); ok {
		return e.route
	}
	return ""
}

// Reason is why the gateway refused a request itself.
type Reason int

// The reasons of gateway_refusals_total, with the status each answers.
const (
	MissingKey         Reason = iota // 401: no x-api-key
	WrongHeader                      // 401: no x-api-key, but credentials in Authorization or the query
	MalformedKey                     // 401: an x-api-key without the shape of a key
	UnknownKey                       // 401: a key the gateway does not know (wrong, or revoked)
	ConflictingKeys                  // 401: several x-api-key headers that disagree
	MultiTenantKey                   // 403: a key of several tenants
	RateLimited                      // 429: the key's rate limit
	DownloadsPerLink                 // 429: too many downloads of one signed link at once
	DownloadsPerClient               // 429: too many downloads from one client address at once
	UploadsPerTenant                 // 429: too many uploads of one tenant at once
	MissingScope                     // 403: the key's scopes do not cover the operation
	numReasons
)

var reasons = [numReasons]struct {
	code, name string
}{
	MissingKey:         {"401", "missing_key"},
	WrongHeader:        {"401", "wrong_header"},
	MalformedKey:       {"401", "malformed_key"},
	UnknownKey:         {"401", "unknown_key"},
	ConflictingKeys:    {"401", "conflicting_keys"},
	MultiTenantKey:     {"403", "multi_tenant_key"},
	RateLimited:        {"429", "rate_limited"},
	DownloadsPerLink:   {"429", "downloads_per_link"},
	DownloadsPerClient: {"429", "downloads_per_client"},
	UploadsPerTenant:   {"429", "uploads_per_tenant"},
	MissingScope:       {"403", "missing_scope"},
}

// Refusals counts the requests the gateway refuses itself (gateway_refusals_total{code,
// reason}); every series exists from the start. A nil *Refusals counts nothing.
type Refusals struct {
	counters [numReasons]prometheus.Counter
}

// NewRefusals registers the refusal counters on reg.
func NewRefusals(reg prometheus.Registerer) *Refusals {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_refusals_total",
		Help: "Requests the gateway refused itself, by status code (401, 403, 429) and reason.",
	}, []string{"code", "reason"})
	reg.MustRegister(vec)
	r := &Refusals{}
	for i, rs := range reasons {
		r.counters[i] = vec.WithLabelValues(rs.code, rs.name)
	}
	return r
}

// Name is the reason as gateway_refusals_total's label and a 401's details.reason name it.
func (reason Reason) Name() string {
	if reason < 0 || reason >= numReasons {
		return ""
	}
	return reasons[reason].name
}

// Inc counts one refusal.
func (r *Refusals) Inc(reason Reason) {
	if r != nil && reason >= 0 && reason < numReasons {
		r.counters[reason].Inc()
	}
}
