package outbox_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// BenchmarkWriterAdd writes one event per Add, as a create does, b.N of them in one
// transaction on one connection, so that the figure is the statement's own cost and not
// the commits'. Besides the client's ns/op and allocations it reports pg-cpu-ns/op, the
// CPU time of the server process that ran the statements (from /proc, when the server
// runs on this machine).
func BenchmarkWriterAdd(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewPool(b, outbox.Migrations)
	conn2, err := pgx.Connect(ctx, pool.Config().ConnString())
	if err != nil {
		b.Fatal(err)
	}
	defer conn2.Close(ctx)
	var pid int
	if err := conn2.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		b.Fatal(err)
	}
	e, err := events.New("acme", "topic.created", "topic_01jq3v5c8bf4r9q6x2m7t0kz5a",
		map[string]any{"topicId": "topic_01jq3v5c8bf4r9q6x2m7t0kz5a", "title": "Pricing", "sortOrder": 3})
	if err != nil {
		b.Fatal(err)
	}
	w := outbox.Writer{}
	tx, err := conn2.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)     //nolint:errcheck // a benchmark's scratch rows
	for i := 0; i < 100; i++ { // warm-up: the prepared statement
		if err := w.Add(ctx, tx, "topics.events", e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	cpu0 := processCPU(pid)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := w.Add(ctx, tx, "topics.events", e); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if cpu0 >= 0 {
		b.ReportMetric(float64(processCPU(pid)-cpu0)/float64(b.N), "pg-cpu-ns/op")
	}
}

// processCPU is the user and system CPU time of a process of this machine, -1 when it
// cannot be read.
func processCPU(pid int) time.Duration {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return -1
	}
	u, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(u+st) * (time.Second / 100)
}
