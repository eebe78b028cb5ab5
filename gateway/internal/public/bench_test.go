package public

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/gateway/internal/conditional"
	"github.com/customerapi/platform/gateway/internal/idempotency"
	"github.com/customerapi/platform/gateway/internal/keys"
	"github.com/customerapi/platform/gateway/internal/observe"
	"github.com/customerapi/platform/gateway/internal/proxy"
	"github.com/customerapi/platform/gateway/internal/ratelimit"
	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/server"
	"github.com/customerapi/platform/libs/telemetry"
)

// topicJSON is what the stand-in topics service answers: a stored topic.
const topicJSON = `{"topicId":"topic_01jq3v5c8bf4r9q6x2m7t0kz5a","title":"Pricing","description":null,` +
	`"sortOrder":0,"createdAt":"2026-11-23T10:00:00.000Z","updatedAt":"2026-11-23T10:00:00.000Z"}`

// BenchmarkProxiedGet measures one authenticated, rate-limited GET through the gateway's
// public handler chain, as the listener serves it (request ID, trace context, metrics,
// access-log check, key check, GCRA and its headers, signed internal headers, proxying),
// to a stand-in service: a fasthttp server on 127.0.0.1 answering a stored topic. The
// client side calls the handler directly (no client socket); the upstream exchange is a
// real pooled keep-alive connection. Tracing and logging are configured as `make bench`
// runs the gateway: no OTEL_* variables (nothing samples), LOG_LEVEL=warn.
func BenchmarkProxiedGet(b *testing.B) {
	do, ctx := proxiedGet(b)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		do()
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
	b.StopTimer()
	// CPU time of the whole process (the gateway's handler, the stand-in service, and the
	// kernel's loopback work on both sides) per request: steadier than ns/op on a shared
	// machine, where ns/op also counts the time spent waiting for a core.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// The proxied GET's garbage is bounded: seven allocations, three for the request ID
// and its context value and two each for the caller's and the span's context values. A
// middleware that walked every header through an iterator cost four more, unnoticed until
// the benchmark's figures were read again.
func TestAProxiedGetAllocatesAtMostSevenTimes(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	do, ctx := proxiedGet(t)
	if n := testing.AllocsPerRun(200, do); n > 7 {
		t.Fatalf("a proxied GET allocated %.0f times, want at most 7 (go test -bench BenchmarkProxiedGet -memprofile shows where)", n)
	}
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

// proxiedGet returns a function that sends one authenticated GET of a stored topic
// through the public chain into ctx, already sent once and checked.
func proxiedGet(tb testing.TB) (func(), *fasthttp.RequestCtx) {
	h, key := benchGateway(tb)
	ctx := &fasthttp.RequestCtx{}
	ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, nil)
	do := func() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.ResetUserValues()
		ctx.Request.Header.SetMethod(fasthttp.MethodGet)
		ctx.Request.SetRequestURI("/v0/topics/topic_01jq3v5c8bf4r9q6x2m7t0kz5a")
		ctx.Request.Header.SetHost("127.0.0.1:25001")
		ctx.Request.Header.Set("x-api-key", key)
		ctx.Request.Header.Set("Accept", "application/json")
		ctx.Request.Header.Set("User-Agent", "bench")
		h(ctx)
	}
	do()
	if ctx.Response.StatusCode() != 200 || string(ctx.Response.Body()) != topicJSON {
		tb.Fatalf("warm-up: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	for _, name := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "RateLimit-Policy", "RateLimit", "X-Request-Id"} {
		if len(ctx.Response.Header.Peek(name)) == 0 {
			tb.Fatalf("warm-up: no %s header in\n%s", name, &ctx.Response.Header)
		}
	}
	return do, ctx
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchGateway builds the public chain over a stand-in topics service and returns its
// handler and a valid key (with a limit far above what the benchmark sends).
func benchGateway(tb testing.TB) (fasthttp.RequestHandler, string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	up := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
		c.Response.Header.SetContentType("application/json")
		c.Response.Header.SetBytesV("X-Request-Id", c.Request.Header.Peek("X-Request-Id"))
		c.Response.SetBodyString(topicJSON)
	}}
	go func() { _ = up.Serve(ln) }()
	tb.Cleanup(func() { _ = up.Shutdown() })

	signer, err := internalauth.New([]byte(strings.Repeat("s", 32)))
	if err != nil {
		tb.Fatal(err)
	}
	opts := proxy.Options{Signer: signer, Timeout: 10 * time.Second, DialTimeout: time.Second, MaxConns: 64,
		TransferTimeout: time.Minute, MaxUploadBytes: proxy.DefaultMaxUploadBytes}
	topics, err := proxy.NewUpstream("topics", "http://"+ln.Addr().String(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	hasher, err := keys.NewHasher([]byte(strings.Repeat("p", 32)))
	if err != nil {
		tb.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cache := keys.NewCache(nil, hasher, time.Second, log, nil)
	key, err := keys.Generate()
	if err != nil {
		tb.Fatal(err)
	}
	cache.Put(keys.Key{ID: "key_01jq3v5c8bf4r9q6x2m7t0kz5b", Hash: hasher.Hash(key), TenantIDs: []string{"acme"},
		RateLimit: &keys.RateLimit{Limit: 1_000_000, Window: time.Second}})
	tracing, err := telemetry.SetupTracing(context.Background(), "gateway-bench")
	if err != nil {
		tb.Fatal(err)
	}
	reg := telemetry.NewRegistry()
	local := ratelimit.NewLocal()
	s, _, err := New(Config{
		Server: server.Config{Name: "gateway", BaseURL: "http://127.0.0.1:25001"},
		Log:    log, Tracer: tracing.Tracer("gateway"), Registry: reg,
		Cache: cache, Limiter: ratelimit.Counted{Local: local, Metrics: ratelimit.NewMetrics(reg)},
		Default:   ratelimit.Policy{Limit: 100, Window: time.Second},
		Upstreams: map[string]*proxy.Upstream{"topics": topics}, Proxy: opts,
		OpenAPI: []byte("{}"),
		Routes:  []observe.Route{{Template: "/v0/topics", Upstream: "topics"}, {Template: "/v0/topics/{topic_id}", Upstream: "topics"}},
		// The production chain's other steps; a GET reaches none of their stores.
		Family:      func(*fiber.Ctx) (string, bool) { return "topics", true },
		Usage:       keys.NewUsage(nil, log),
		Idempotency: &idempotency.Middleware{Log: log},
		Conditional: &conditional.Middleware{Target: func(*fiber.Ctx) (string, bool) { return "", false },
			Tenant: func(*fiber.Ctx) string { return "acme" }},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s.App.Handler(), key
}
