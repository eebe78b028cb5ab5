package application_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/testwait"
	sessionstore "github.com/customerapi/platform/services/pages/internal/adapters/sessions"
	"github.com/customerapi/platform/services/pages/internal/domain"
	"github.com/customerapi/platform/services/pages/internal/domain/session"
	"github.com/customerapi/platform/services/pages/migrations"
)

// Several workers (replicas) at once compute every pending session exactly once.
func TestSessionComputeConcurrentWorkers(t *testing.T) {
	pool := pgtest.NewPool(t, migrations.Set, migrations.Sessions)
	store := sessionstore.NewStore(pool, outbox.Writer{})
	ctx := context.Background()
	pageID, _ := seedPage(t, pool, "acme", 0)
	const n = 450
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		end := at.Add(time.Duration(i) * time.Second)
		if _, _, err := store.Record(ctx, session.Session{TenantID: "acme", ID: ids.New("session"), PageID: pageID,
			AnalyticsSessionID: fmt.Sprint("s", i), RequestHash: []byte{1}, StartedAt: at, EndedAt: &end,
			CreatedAt: time.Now().UTC()}, domain.Event{}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				done, err := store.ComputePending(ctx, session.DefaultMetrics, 25, time.Now())
				if err != nil {
					t.Error(err)
					return
				}
				if done.Total() == 0 {
					return
				}
				mu.Lock()
				total += done.Total()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var pending, twice, bounces int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE computation_status = 'pending'),
		count(*) FILTER (WHERE computation_attempts <> 1), count(*) FILTER (WHERE is_bounce)
		FROM audience_sessions`).Scan(&pending, &twice, &bounces); err != nil {
		t.Fatal(err)
	}
	if total != n || pending != 0 || twice != 0 || bounces != 10 {
		t.Fatalf("computed %d of %d; pending %d, not computed exactly once %d, bounces %d (want 10: 0..9 s)",
			total, n, pending, twice, bounces)
	}
}

// Sessions left pending while the service was down are computed after it restarts.
func TestSessionComputeAfterRestart(t *testing.T) {
	first := start(t, servicetest.Options{Env: map[string]string{"SESSION_COMPUTE_INTERVAL": "1h"}})
	pool := first.Runtime.Pool
	pageID, _ := seedPage(t, pool, "acme", 0)
	// Written behind the worker's back (no wake-up), as if a replica died before computing.
	store := sessionstore.NewStore(pool, outbox.Writer{})
	id := ids.New("session")
	if _, _, err := store.Record(context.Background(), session.Session{TenantID: "acme", ID: id, PageID: pageID,
		AnalyticsSessionID: "left", RequestHash: []byte{1}, StartedAt: time.Now().UTC(), CreatedAt: time.Now().UTC()}, domain.Event{}); err != nil {
		t.Fatal(err)
	}
	dbURL := first.DatabaseURL
	broker := first.Broker
	first.Stop()

	second := start(t, servicetest.Options{DatabaseURL: dbURL, Broker: broker})
	c := client(t, second, "acme")
	testwait.Eventually(t, 10*time.Second, "computation after restart", func() bool {
		return mustStatus(t, c.Do("GET", "/v0/pages/"+pageID+"/audience_sessions/"+id, nil), 200)["computationStatus"] == "completed"
	})
}
