package idempotency_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/customerapi/platform/gateway/internal/idempotency"
	"github.com/customerapi/platform/gateway/migrations"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/retention"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The store decides: a new key proceeds; the same request in flight waits; another
// request with the key is a mismatch; a completed key replays its answer; an abandoned
// flight (lease over) of the same request may run again, of another request not; a
// released key is free; an expired row counts as absent and is purged.
func TestStoreOutcomes(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, migrations.Set)
	s := idempotency.NewStore(pool)
	fp, other := []byte("request-a"), []byte("request-b")
	const day = 24 * time.Hour
	begin := func(key string, fp []byte, lease, ttl time.Duration) (idempotency.Outcome, idempotency.Answer) {
		t.Helper()
		o, a, err := s.Begin(ctx, "acme", key, fp, lease, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return o, a
	}
	if o, _ := begin("k1", fp, time.Minute, day); o != idempotency.Proceed {
		t.Fatalf("a new key: %v", o)
	}
	if o, _ := begin("k1", fp, time.Minute, day); o != idempotency.InFlight {
		t.Fatalf("the same request in flight: %v", o)
	}
	if o, _ := begin("k1", other, time.Minute, day); o != idempotency.Mismatch {
		t.Fatalf("another request with the key: %v", o)
	}
	want := idempotency.Answer{Status: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"id":1}`)}
	if err := s.Complete(ctx, "acme", "k1", want); err != nil {
		t.Fatal(err)
	}
	if o, a := begin("k1", fp, time.Minute, day); o != idempotency.Replay || a.Status != 201 || string(a.Body) != `{"id":1}` ||
		a.Headers["Content-Type"] != "application/json" {
		t.Fatalf("a completed key: %v %+v", o, a)
	}
	if o, _ := begin("k1", other, time.Minute, day); o != idempotency.Mismatch {
		t.Fatalf("another request with a completed key: %v", o)
	}

	if o, _ := begin("k2", fp, time.Millisecond, day); o != idempotency.Proceed {
		t.Fatal(o)
	}
	time.Sleep(20 * time.Millisecond)
	if o, _ := begin("k2", other, time.Minute, day); o != idempotency.Mismatch {
		t.Fatalf("an abandoned flight is not another request's: %v", o)
	}
	if o, _ := begin("k2", fp, time.Minute, day); o != idempotency.Proceed {
		t.Fatalf("an abandoned flight of the same request runs again: %v", o)
	}
	if err := s.Release(ctx, "acme", "k2"); err != nil {
		t.Fatal(err)
	}
	if o, _ := begin("k2", other, time.Minute, day); o != idempotency.Proceed {
		t.Fatalf("a released key is free: %v", o)
	}

	if o, _ := begin("k3", fp, time.Minute, time.Millisecond); o != idempotency.Proceed {
		t.Fatal(o)
	}
	time.Sleep(20 * time.Millisecond)
	if o, _ := begin("k3", other, time.Minute, day); o != idempotency.Proceed {
		t.Fatalf("an expired key counts as absent: %v", o)
	}
	if _, _, err := s.Begin(ctx, "acme", "k4", fp, time.Minute, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	pruner := &retention.Pruner{Pool: pool, Tables: []retention.Table{idempotency.RetentionTable(time.Millisecond)}}
	if n, err := pruner.Prune(ctx); err != nil || n != 4 {
		t.Fatalf("purge with a 1 ms retention: %d, %v; want the four rows, all older", n, err)
	}
	if o, _ := begin("k1", other, time.Minute, day); o != idempotency.Proceed {
		t.Fatalf("a purged key is free: %v", o)
	}
}
