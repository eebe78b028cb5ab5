package observe

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func testMetrics(t *testing.T) (*Metrics, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	m := New(reg, []Route{
		{"/v0/pages", "pages"}, {"/v0/pages/{page_id}", "pages"}, {"/v0/pages/{page_id}/publish", "pages"},
		{"/v0/page_links/search", "pages"}, {"/v0/page_links/{page_link_id}", "pages"},
		{"/v0/openapi.json", Gateway},
	}, func(p string) (string, bool) {
		if strings.HasPrefix(p, "/v0/pages/") || strings.HasPrefix(p, "/v0/page_links/") {
			return "pages", true
		}
		return "", false
	})
	return m, reg
}

func TestRouteTemplates(t *testing.T) {
	m, _ := testMetrics(t)
	for path, want := range map[string]string{
		"/v0/pages":                             "/v0/pages pages",
		"/v0/pages/":                            "/v0/pages pages",
		"/v0/pages/page_1":                      "/v0/pages/{page_id} pages",
		"/v0/pages/page_1/publish":              "/v0/pages/{page_id}/publish pages",
		"/v0/page_links/search":                 "/v0/page_links/search pages", // a literal wins over a parameter
		"/v0/page_links/plink_1":                "/v0/page_links/{page_link_id} pages",
		"/v0/pages/page_1/nope":                 "unmatched pages",
		"/v0/pages//publish":                    "unmatched pages",
		"/v0/openapi.json":                      "/v0/openapi.json gateway",
		"/v0/unknown":                           "unmatched gateway",
		"/../../etc/passwd":                     "unmatched gateway",
		"/v0/pages/" + strings.Repeat("x/", 50): "unmatched pages",
	} {
		e := m.resolve(path)
		if got := e.route + " " + e.upstream; got != want {
			t.Errorf("%s: %s, want %s", path, got, want)
		}
	}
}

// Whatever clients send, the series stay bounded: unknown paths share one route per
// upstream, unknown methods one method.
func TestCardinalityIsBounded(t *testing.T) {
	m, reg := testMetrics(t)
	for i := 0; i < 200; i++ {
		e := m.resolve("/v0/junk/" + strings.Repeat("a", i))
		e.observe(methodIndex("M"+strings.Repeat("X", i)), 404, 0)
		m.resolve("/v0/pages/p"+strings.Repeat("1", i)).observe(methodIndex("GET"), 200, 0)
	}
	if n := testutil.CollectAndCount(reg, "gateway_requests_total"); n != 2 {
		t.Fatalf("%d series of gateway_requests_total after 400 distinct paths, want 2", n)
	}
	if n := testutil.CollectAndCount(reg, "gateway_request_duration_seconds"); n != 2 {
		t.Fatalf("%d histograms, want 2", n)
	}
}

func TestRefusalsStartAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := NewRefusals(reg)
	r.Inc(RateLimited)
	var nilRefusals *Refusals
	nilRefusals.Inc(RateLimited) // counts nothing, does not panic
	if n := testutil.CollectAndCount(reg, "gateway_refusals_total"); n != int(numReasons) {
		t.Fatalf("%d series, want one per reason (%d)", n, numReasons)
	}
	if v := testutil.ToFloat64(r.counters[RateLimited]); v != 1 {
		t.Fatalf("rate_limited = %v", v)
	}
}

func BenchmarkResolveAndObserve(b *testing.B) {
	reg := prometheus.NewRegistry()
	m := New(reg, []Route{{"/v0/pages/{page_id}/audiences/{audience_id}", "pages"}}, nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m.resolve("/v0/pages/page_01j/audiences/aud_01j").observe(0, 200, 1000)
	}
}
