package telemetry

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// NewRegistry returns a Prometheus registry with the Go runtime and process collectors;
// each process makes one and registers its own metrics on it.
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// MetricsHandler serves the registry in the Prometheus text format, for GET /metrics.
func MetricsHandler(r *prometheus.Registry) fiber.Handler {
	h := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(r, promhttp.HandlerOpts{Registry: r}))
	return func(c *fiber.Ctx) error {
		h(c.Context())
		return nil
	}
}

// HTTPMetrics are the request metrics of one HTTP server.
type HTTPMetrics struct {
	// RouteName, when set, names the route of a request (the metrics' route label and the
	// span's name) when it returns something: for an app that serves many routes through
	// one catch-all, whose pattern ("/*") says nothing.
	RouteName func(c *fiber.Ctx) string

	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge

	// children holds the series of each (method, route, status) seen, resolved once:
	// read without a lock, copied on write (a new combination is rare after warm-up).
	mu       sync.Mutex
	children atomic.Pointer[map[seriesKey]series]
}

type seriesKey struct {
	method, route string
	status        int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// series returns the request counter and duration histogram of one combination of
// labels, without WithLabelValues' hashing and lookup on every request. The method and
// route must outlive the request (constants, or strings the app holds).
func (m *HTTPMetrics) series(method, route string, status int) series {
	k := seriesKey{method, route, status}
	if cur := m.children.Load(); cur != nil {
		if s, ok := (*cur)[k]; ok {
			return s
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var cur map[seriesKey]series
	if p := m.children.Load(); p != nil {
		cur = *p
	}
	if s, ok := cur[k]; ok {
		return s
	}
	s := series{requests: m.requests.WithLabelValues(method, route, strconv.Itoa(status)),
		duration: m.duration.WithLabelValues(method, route)}
	next := make(map[seriesKey]series, len(cur)+1)
	for key, v := range cur {
		next[key] = v
	}
	next[k] = s
	m.children.Store(&next)
	return s
}

// NewHTTPMetrics registers the metrics of the named HTTP server on r (a process with two
// listeners registers two, told apart by the "server" label).
func NewHTTPMetrics(r prometheus.Registerer, server string) *HTTPMetrics {
	labels := prometheus.Labels{"server": server}
	m := &HTTPMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "http_server_requests_total",
			Help:        "HTTP requests served, by method, route pattern and status code.",
			ConstLabels: labels,
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:        "http_server_request_duration_seconds",
			Help:        "Time to serve an HTTP request, by method and route pattern.",
			Buckets:     []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
			ConstLabels: labels,
		}, []string{"method", "route"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        "http_server_requests_in_flight",
			Help:        "HTTP requests being served now.",
			ConstLabels: labels,
		}),
	}
	r.MustRegister(m.requests, m.duration, m.inflight)
	return m
}
