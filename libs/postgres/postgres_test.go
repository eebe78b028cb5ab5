package postgres_test

import (
	"context"
	"net/url"
	"os"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func sub(t *testing.T, dir string) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(dir + "/" + e.Name())
		out[e.Name()] = &fstest.MapFile{Data: b}
	}
	return out
}

func TestMigrateConcurrentReplicas(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	migs := sub(t, "testdata/ok")
	// Eight replicas starting at once: each migration applies exactly once, none fails.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- postgres.Migrate(ctx, pool, nil, postgres.MigrationSet{Name: "test", FS: migs})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM schema_migrations WHERE set_name = 'test'").Scan(&n); err != nil || n != 2 {
		t.Fatalf("applied = %d (%v)", n, err)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO things (id, name) VALUES ('a', 'b')"); err != nil {
		t.Fatal(err)
	}
}

func TestMigrateRefusesEditedMigration(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	migs := sub(t, "testdata/ok")
	if err := postgres.Migrate(ctx, pool, nil, postgres.MigrationSet{Name: "test", FS: migs}); err != nil {
		t.Fatal(err)
	}
	migs["0001_things.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE things (id int);")}
	if err := postgres.Migrate(ctx, pool, nil, postgres.MigrationSet{Name: "test", FS: migs}); err == nil {
		t.Fatal("edited migration accepted")
	}
}

func TestMigrateFailureIsAtomic(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	if err := postgres.Migrate(ctx, pool, nil, postgres.MigrationSet{Name: "test", FS: sub(t, "testdata/bad")}); err == nil {
		t.Fatal("broken migration accepted")
	}
	var exists bool
	_ = pool.QueryRow(ctx, "SELECT to_regclass('ok_before_error') IS NOT NULL").Scan(&exists)
	if exists {
		t.Fatal("a failed migration left part of its work behind")
	}
}

// A no-transaction migration builds its index CONCURRENTLY (refused inside a
// transaction). When the build fails part way it leaves an invalid index and records
// nothing; once the cause is fixed, the same file runs again from the start and succeeds.
func TestMigrateNoTransactionBuildsConcurrentlyAndRecovers(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	migs := fstest.MapFS{
		"0001_t.sql": {Data: []byte("CREATE TABLE t (v int NOT NULL);\nINSERT INTO t VALUES (1), (1), (2);\n")},
		"0002_t_unique.sql": {Data: []byte(`-- migrate:no-transaction
-- A failed build leaves an invalid index: drop it before building again.
DROP INDEX CONCURRENTLY IF EXISTS t_v;
CREATE UNIQUE INDEX CONCURRENTLY t_v
    ON t (v);
`)},
	}
	set := postgres.MigrationSet{Name: "notx", FS: migs}
	if err := postgres.Migrate(ctx, pool, nil, set); err == nil {
		t.Fatal("a unique index over duplicate values was built")
	}
	state := func() (recorded int, valid *bool) {
		t.Helper()
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM schema_migrations WHERE set_name = 'notx'").Scan(&recorded); err != nil {
			t.Fatal(err)
		}
		_ = pool.QueryRow(ctx, "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('t_v')").Scan(&valid)
		return recorded, valid
	}
	if n, valid := state(); n != 1 || valid == nil || *valid {
		t.Fatalf("after the failed build: %d migrations recorded, index valid %v; want 1 recorded (the table) and an invalid index left", n, valid)
	}
	if _, err := pool.Exec(ctx, "DELETE FROM t WHERE ctid = (SELECT min(ctid) FROM t WHERE v = 1)"); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Migrate(ctx, pool, nil, set); err != nil {
		t.Fatalf("the fixed migration run again: %v", err)
	}
	if n, valid := state(); n != 2 || valid == nil || !*valid {
		t.Fatalf("after the second run: %d migrations recorded, index valid %v; want 2 and a valid index", n, valid)
	}
}

func TestLoadMigrationsRejectsBadNames(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no number": {"init.sql": {Data: []byte("")}},
		"duplicate": {"0001_a.sql": {Data: []byte("")}, "01_b.sql": {Data: []byte("")}},
	} {
		if _, err := postgres.LoadMigrations(fsys); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestErrorHelpers(t *testing.T) {
	pool := pgtest.NewPool(t, postgres.MigrationSet{Name: "test", FS: sub(t, "testdata/ok")})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := pool.Exec(ctx, "INSERT INTO things (id) VALUES ('x')"); err != nil {
		t.Fatal(err)
	}
	_, err := pool.Exec(ctx, "INSERT INTO things (id) VALUES ('x')")
	if !postgres.IsCode(err, postgres.UniqueViolation) || postgres.ConstraintOf(err) != "things_pkey" {
		t.Fatalf("err = %v", err)
	}
	err = pool.QueryRow(ctx, "SELECT id FROM things WHERE id = 'none'").Scan(new(string))
	if !postgres.IsNoRows(err) {
		t.Fatalf("err = %v", err)
	}
	if err := postgres.Check(pool)(ctx); err != nil {
		t.Fatal(err)
	}
}

// The services' sessions run without JIT compilation unless the URL asks for it.
func TestConnectTurnsJITOffUnlessTheURLSetsIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := pgtest.NewDatabase(t)
	on, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := on.Query()
	q.Set("jit", "on")
	on.RawQuery = q.Encode()
	for _, tc := range []struct{ url, want string }{{base, "off"}, {on.String(), "on"}} {
		pool, err := postgres.Connect(ctx, tc.url)
		if err != nil {
			t.Fatal(err)
		}
		var jit string
		err = pool.QueryRow(ctx, "SHOW jit").Scan(&jit)
		pool.Close()
		if err != nil || jit != tc.want {
			t.Errorf("%s: jit is %q (%v), want %q", tc.url, jit, err, tc.want)
		}
	}
}
