package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/testwait"
)

// Every failure a pool gives while its server is killed (SIGKILL of the postmaster under
// concurrent writers, as in a crash) classifies as a dependency outage, which the API
// answers with 503, never as an internal error (it used to be 2,392 answers of 500).
func TestKilledServerFailuresAreUnavailable(t *testing.T) {
	ctx := context.Background()
	cluster, cleanup, err := pgtest.StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	pool, err := postgres.Connect(ctx, cluster.URL("postgres")+"&pool_max_conns=8")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE t (id bigserial PRIMARY KEY, v text)`); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var failures []error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err := postgres.InTx(qctx, pool, func(tx pgx.Tx) error {
					_, err := tx.Exec(qctx, `INSERT INTO t (v) SELECT repeat('x', 100) FROM generate_series(1, 20)`)
					return err
				})
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}
		}()
	}
	testwait.For(t, 20*time.Second, "more than 200 rows written before the kill", func() (bool, string) {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
		return n > 200, fmt.Sprintf("%d rows (%v)", n, err)
	})
	cluster.Kill()
	testwait.For(t, 20*time.Second, "50 failures of the writers during the outage", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(failures) >= 50, fmt.Sprintf("%d failures", len(failures))
	})
	close(stop)
	wg.Wait()

	kinds := map[string]int{}
	for _, err := range failures {
		if e := apierror.Internal(err); e.Status != 503 {
			kinds[err.Error()]++
		}
	}
	for msg, n := range kinds {
		t.Errorf("%d failures during the outage would answer 500, not 503: %s", n, msg)
	}
}

// A database that refuses connections (ALTER DATABASE ... ALLOW_CONNECTIONS false, as an
// operator or a failover does) is an outage: the server's refusal (SQLSTATE 55000) comes
// inside the connect error, and it used to classify by that code as a bug (500 for the
// API, and a failed attempt of the event for a consumer, which then dead-lettered it).
func TestARefusedConnectionIsUnavailable(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, os.Getenv(pgtest.EnvURL))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := pgx.Identifier{cfg.Database}.Sanitize()
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" WITH ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = admin.Exec(ctx, "ALTER DATABASE "+name+" WITH ALLOW_CONNECTIONS true") }()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		conn.Close(ctx)
		t.Fatal("a database refusing connections accepted one")
	}
	if !apierror.IsUnavailable(err) {
		t.Fatalf("a refused connection must classify as unavailable (503, waited out), got: %v", err)
	}
}
