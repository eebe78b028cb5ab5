package application_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/requestid"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/services/topics/internal/application"
)

// BenchmarkCreateTopic measures `POST /v0/topics` through the service's real handler
// chain (request ID, trace and metrics middleware, the gateway signature check, the
// OpenAPI document's validation, the handler, group commit of the INSERT and its outbox
// row) called in-process, 16 callers at a time as the load run sends them, and the outbox
// relay publishing every event to the embedded broker: the clock stops only once the
// outbox is empty. Besides ns/op it reports
//   - cpu-ns/op: CPU time of the whole test process per create (service, relay, broker,
//     the callers), steadier than ns/op on a shared machine;
//   - gc-cpu-ns/op: the part of cpu-ns/op the Go runtime spent collecting garbage;
//   - pg-cpu-ns/op: CPU time of the PostgreSQL server's processes per create (read from
//     /proc; only when the server runs on this machine, as pgtest's throwaway cluster does);
//   - stmts/op: statements PostgreSQL executed per create, the relay's included, when
//     pg_stat_statements is loaded (shared_preload_libraries; docs/benchmarks.md shows a
//     cluster started that way). -v lists them one by one.
func BenchmarkCreateTopic(b *testing.B) { benchmarkCreateTopic(b) }

// createCaller sends creates straight to the service's fasthttp handler, signed as the
// gateway signs them.
type createCaller struct {
	h      fasthttp.RequestHandler
	s      *servicetest.Service
	ctx    fasthttp.RequestCtx
	sigAt  time.Time
	sig    string
	reqID  string
	body   []byte
	tenant string
}

func newCaller(s *servicetest.Service, tenantID string, n int64) *createCaller {
	c := &createCaller{h: s.Runtime.Server.App.Handler(), s: s, tenant: tenantID,
		body: []byte(`{"title":"Pricing ` + strconv.FormatInt(n, 10) + `","purpose":"why we price","sortOrder":3}`)}
	c.ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000 + int(n)}, nil)
	return c
}

func (c *createCaller) do(b *testing.B) {
	if now := time.Now(); now.Sub(c.sigAt) > 10*time.Second {
		c.reqID = requestid.New()
		c.sig = c.s.Runtime.Signer.Sign(internalauth.Claims{TenantID: c.tenant, RequestID: c.reqID}, now)
		c.sigAt = now
	}
	ctx := &c.ctx
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.ResetUserValues()
	ctx.Request.Header.SetMethod(fasthttp.MethodPost)
	ctx.Request.SetRequestURI("/v0/topics")
	ctx.Request.Header.SetHost("127.0.0.1:25011")
	ctx.Request.Header.SetContentType("application/json")
	ctx.Request.Header.Set(requestid.Header, c.reqID)
	ctx.Request.Header.Set(tenant.Header, c.tenant)
	ctx.Request.Header.Set(internalauth.SignatureHeader, c.sig)
	ctx.Request.SetBody(c.body)
	c.h(ctx)
	if ctx.Response.StatusCode() != 201 {
		b.Fatalf("create: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

func startCreateBench(b *testing.B) *servicetest.Service {
	return servicetest.Start(b, application.Name, application.Migrations, application.Setup, servicetest.Options{})
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gcCPU is the CPU time the Go runtime estimates it spent collecting garbage.
func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

// serverCPU is the CPU time of the PostgreSQL server's processes (the postmaster and its
// children), or -1 when they cannot be read from this machine's /proc.
func serverCPU(ctx context.Context, conn *pgx.Conn) time.Duration {
	var dir string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir); err != nil {
		return -1
	}
	f, err := os.Open(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return -1
	}
	postmaster := strings.TrimSpace(sc.Text())
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	var ticks int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces): state ppid ... utime(14) stime(15).
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
		fields := strings.Fields(rest)
		if len(fields) < 13 || (e.Name() != postmaster && fields[1] != postmaster) {
			continue
		}
		u, _ := strconv.ParseInt(fields[11], 10, 64)
		st, _ := strconv.ParseInt(fields[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ is 100 on Linux
}

type stmtCount struct {
	query string
	calls int64
}

// statements reads pg_stat_statements of the current database (nil when not loaded).
func statements(ctx context.Context, conn *pgx.Conn) map[string]int64 {
	rows, err := conn.Query(ctx, `SELECT query, calls FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		return nil
	}
	out := map[string]int64{}
	for rows.Next() {
		var q string
		var n int64
		if rows.Scan(&q, &n) == nil {
			out[q] += n
		}
	}
	if rows.Err() != nil {
		return nil
	}
	return out
}

func statementDelta(before, after map[string]int64) []stmtCount {
	var out []stmtCount
	for q, n := range after {
		if d := n - before[q]; d > 0 && !strings.Contains(q, "pg_stat_statements") && !strings.Contains(q, "benchmark probe") {
			out = append(out, stmtCount{query: q, calls: d})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].calls > out[j].calls })
	return out
}

var callerSeq atomic.Int64

func benchmarkCreateTopic(b *testing.B) {
	s := startCreateBench(b)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DatabaseURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	// Warm up: connections, prepared statements, the broker's topic.
	w := newCaller(s, "bench", callerSeq.Add(1))
	for i := 0; i < 200; i++ {
		w.do(b)
	}
	drained := func() {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var n int64
			if err := conn.QueryRow(ctx, "SELECT count(*) /* benchmark probe */ FROM outbox").Scan(&n); err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("the relay left %d outbox rows", n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	drained()
	before := statements(ctx, conn)
	pg0 := serverCPU(ctx, conn)
	b.ReportAllocs()
	b.SetParallelism(8) // 16 callers on 2 cores, as the load run's 16 connections
	cpu0, gc0 := cpuTime(), gcCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := newCaller(s, "bench", callerSeq.Add(1))
		for pb.Next() {
			c.do(b)
		}
	})
	drained()
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(gcCPU()-gc0)/float64(b.N), "gc-cpu-ns/op")
	if pg0 >= 0 {
		if pg1 := serverCPU(ctx, conn); pg1 >= 0 {
			b.ReportMetric(float64(pg1-pg0)/float64(b.N), "pg-cpu-ns/op")
		}
	}
	if before != nil {
		var total int64
		d := statementDelta(before, statements(ctx, conn))
		for _, sc := range d {
			total += sc.calls
		}
		b.ReportMetric(float64(total)/float64(b.N), "stmts/op")
		if testing.Verbose() {
			for _, sc := range d {
				fmt.Fprintf(os.Stderr, "%10.3f/op  %s\n", float64(sc.calls)/float64(b.N), strings.Join(strings.Fields(sc.query), " "))
			}
		}
	}
}
