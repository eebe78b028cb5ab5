package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/assets/internal/adapters"
	"github.com/customerapi/platform/services/assets/internal/adapters/preview"
	"github.com/customerapi/platform/services/assets/internal/adapters/signing"
	"github.com/customerapi/platform/services/assets/internal/adapters/storage"
	"github.com/customerapi/platform/services/assets/internal/app"
	"github.com/customerapi/platform/services/assets/internal/domain"
	"github.com/customerapi/platform/services/assets/migrations"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// faulty is the real local storage with failures switched on by the test.
type faulty struct {
	domain.Storage
	puts       atomic.Int32
	failPutN   atomic.Int32 // fail the n-th put (1-based); 0: none
	failDelete atomic.Bool
}

func (f *faulty) Put(ctx context.Context, key string, r io.Reader, ct string) (int64, error) {
	if n := f.puts.Add(1); n == f.failPutN.Load() {
		_, _ = io.CopyN(io.Discard, r, 100)
		return 0, errors.New("disk full")
	}
	return f.Storage.Put(ctx, key, r, ct)
}

func (f *faulty) Delete(ctx context.Context, key string) error {
	if f.failDelete.Load() {
		return errors.New("storage unreachable")
	}
	return f.Storage.Delete(ctx, key)
}

// fixture is a Service on a real database and a real (fault-injecting) directory.
type fixture struct {
	svc   *app.Service
	pool  *pgxpool.Pool
	store *faulty
	dir   string
	clock atomic.Int64 // offset added to the real time, in nanoseconds
}

const grace = time.Hour

func newFixture(t *testing.T) *fixture {
	t.Helper()
	pool := pgtest.NewPool(t, outbox.Migrations, migrations.Set)
	return newFixtureOn(t, pool, t.TempDir())
}

func newFixtureOn(t *testing.T, pool *pgxpool.Pool, dir string) *fixture {
	t.Helper()
	local, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := signing.New(bytes.Repeat([]byte("k"), 32))
	f := &fixture{pool: pool, store: &faulty{Storage: local}, dir: dir}
	f.svc = &app.Service{Repo: adapters.NewStore(pool, outbox.Writer{}), Storage: f.store, Signer: signer,
		Previews: preview.NewGenerator(64, 1_000_000, preview.DefaultMaxDecodeBytes, 1), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		MaxUploadBytes: 1 << 20, UploadGrace: grace, URLTTL: time.Hour, BaseURL: "http://api.test",
		Clock: func() time.Time { return time.Now().Add(time.Duration(f.clock.Load())) }}
	return f
}

func (f *fixture) advance(d time.Duration) { f.clock.Add(int64(d)) }

func (f *fixture) objects(t *testing.T) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(f.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".partial" {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func (f *fixture) rows(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// nothingLeft asserts that no asset, object or cleanup record exists.
func (f *fixture) nothingLeft(t *testing.T) {
	t.Helper()
	if a, o, c := f.rows(t, "assets"), f.objects(t), f.rows(t, "object_cleanup"); a+o+c != 0 {
		t.Fatalf("left behind: %d assets, %d objects, %d cleanup records", a, o, c)
	}
}

func pngBytes(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 200
	}
	img.Set(0, 0, color.NRGBA{1, 2, 3, 255})
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

func (f *fixture) upload(t *testing.T, tenantID string) domain.Asset {
	t.Helper()
	ctx := context.Background()
	st, err := f.svc.Stage(ctx, tenantID, bytes.NewReader(pngBytes(100, 100)), "image/png")
	if err != nil {
		t.Fatal(err)
	}
	a, err := f.svc.Create(ctx, app.NewAsset{Name: "n", Type: domain.TypeImage}, st)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestStorageFailureWhileStoringLeavesNothing(t *testing.T) {
	f := newFixture(t)
	f.store.failPutN.Store(1)
	if _, err := f.svc.Stage(context.Background(), "acme", bytes.NewReader(pngBytes(10, 10)), ""); err == nil {
		t.Fatal("stage succeeded")
	}
	f.nothingLeft(t)
}

func TestPreviewFailureRemovesTheOriginal(t *testing.T) {
	f := newFixture(t)
	f.store.failPutN.Store(2) // the preview
	st, err := f.svc.Stage(context.Background(), "acme", bytes.NewReader(pngBytes(100, 100)), "")
	if err != nil {
		t.Fatal(err)
	}
	if f.objects(t) != 1 || f.rows(t, "object_cleanup") != 1 {
		t.Fatal("a staged file is one object tracked by one cleanup record")
	}
	if _, err := f.svc.Create(context.Background(), app.NewAsset{Name: "n", Type: domain.TypeImage}, st); err == nil {
		t.Fatal("create succeeded")
	}
	f.nothingLeft(t)
}

func TestDatabaseRefusalRemovesObjects(t *testing.T) {
	f := newFixture(t)
	st, err := f.svc.Stage(context.Background(), "acme", bytes.NewReader(pngBytes(100, 100)), "")
	if err != nil {
		t.Fatal(err)
	}
	parent := "asset_missing"
	_, err = f.svc.Create(context.Background(), app.NewAsset{Name: "n", Type: domain.TypeImage, ParentID: &parent}, st)
	if !errors.Is(err, domain.ErrParentMissing) {
		t.Fatalf("create: %v", err)
	}
	f.nothingLeft(t) // the original and its preview are both gone
}

func TestTooLargeAndWrongMediaLeaveNothing(t *testing.T) {
	f := newFixture(t)
	if _, err := f.svc.Stage(context.Background(), "acme", bytes.NewReader(make([]byte, 1<<20+1)), ""); !errors.Is(err, app.ErrTooLarge) {
		t.Fatalf("oversize: %v", err)
	}
	st, err := f.svc.Stage(context.Background(), "acme", bytes.NewReader(pngBytes(10, 10)), "")
	if err != nil {
		t.Fatal(err)
	}
	var me *app.MediaError
	if _, err := f.svc.Create(context.Background(), app.NewAsset{Name: "n", Type: domain.TypeVideo}, st); !errors.As(err, &me) {
		t.Fatalf("png as video: %v", err)
	}
	f.nothingLeft(t)
}

// A process that dies mid-upload leaves its object tracked; the janitor removes it once
// the grace period has passed, and not before.
func TestCrashedUploadIsSweptAfterTheGracePeriod(t *testing.T) {
	f := newFixture(t)
	if _, err := f.svc.Stage(context.Background(), "acme", bytes.NewReader(pngBytes(10, 10)), ""); err != nil {
		t.Fatal(err)
	}
	// ... and the process dies here: neither Create nor Discard runs.
	if n, err := f.svc.SweepOnce(context.Background()); err != nil || n != 0 || f.objects(t) != 1 {
		t.Fatalf("swept an upload in progress: %d %v", n, err)
	}
	f.advance(grace + time.Second)
	if n, err := f.svc.SweepOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	f.nothingLeft(t)
}

// An upload that outlasts the grace period (its object may be gone) is refused.
func TestUploadOutlastingTheGracePeriodIsRefused(t *testing.T) {
	f := newFixture(t)
	st, err := f.svc.Stage(context.Background(), "acme", bytes.NewReader([]byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)), "")
	if err != nil {
		t.Fatal(err)
	}
	f.advance(grace + time.Second)
	if _, err := f.svc.SweepOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Create(context.Background(), app.NewAsset{Name: "n", Type: domain.TypeIcon}, st); !errors.Is(err, domain.ErrUploadExpired) {
		t.Fatalf("create: %v", err)
	}
	f.nothingLeft(t)
}

// When removing the bytes fails, the asset is deleted all the same and the janitor
// removes the bytes later.
func TestFailedRemovalIsRetriedByTheJanitor(t *testing.T) {
	f := newFixture(t)
	a := f.upload(t, "acme")
	f.store.failDelete.Store(true)
	if err := f.svc.Delete(context.Background(), "acme", a.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := f.svc.Get(context.Background(), "acme", a.ID)
	if got.State != domain.Deleted || f.objects(t) != 2 || f.rows(t, "object_cleanup") != 2 {
		t.Fatalf("state %s, %d objects, %d records", got.State, f.objects(t), f.rows(t, "object_cleanup"))
	}
	if n, _ := f.svc.SweepOnce(context.Background()); n != 0 {
		t.Fatal("removed while storage is down")
	}
	f.store.failDelete.Store(false)
	f.advance(2 * time.Minute) // past the retry delay
	if n, err := f.svc.SweepOnce(context.Background()); err != nil || n != 2 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if f.objects(t) != 0 || f.rows(t, "object_cleanup") != 0 {
		t.Fatal("bytes of a deleted asset remain")
	}
}

// Several replicas purge the same trash at once: each asset is deleted exactly once
// (one asset.deleted event each), none is missed, and none that is still within the
// retention is touched.
func TestConcurrentPurgesDeleteEachAssetOnce(t *testing.T) {
	pool := pgtest.NewPool(t, outbox.Migrations, migrations.Set)
	dir := t.TempDir()
	replicas := []*fixture{newFixtureOn(t, pool, dir), newFixtureOn(t, pool, dir), newFixtureOn(t, pool, dir)}
	first := replicas[0]
	const n = 250
	var ids []string
	for i := range n {
		a := first.upload(t, fmt.Sprint("tenant", i%3))
		if _, err := first.svc.Trash(context.Background(), a.TenantID, a.ID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	recent := first.upload(t, "tenant0")
	for _, r := range replicas {
		r.advance(2 * time.Hour)
	}
	if _, err := first.svc.Trash(context.Background(), "tenant0", recent.ID); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var total atomic.Int64
	for _, r := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := r.svc.PurgeOnce(context.Background(), time.Hour)
			if err != nil {
				t.Error(err)
			}
			total.Add(int64(got))
		}()
	}
	wg.Wait()
	if total.Load() != n {
		t.Fatalf("purged %d, want %d", total.Load(), n)
	}
	var deleted, events, distinct int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM assets WHERE lifecycle_state = 'deleted' AND asset_id = ANY($1)",
		ids).Scan(&deleted); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT msg_key) FROM outbox
		WHERE headers->>'event-type' = 'asset.deleted' OR convert_from(value, 'UTF8')::jsonb->>'type' = 'asset.deleted'`).Scan(&events, &distinct); err != nil {
		t.Fatal(err)
	}
	if deleted != n || events != n || distinct != n {
		t.Fatalf("%d deleted, %d asset.deleted events for %d assets; want %d each", deleted, events, distinct, n)
	}
	got, _ := first.svc.Get(context.Background(), "tenant0", recent.ID)
	if got.State != domain.Trashed {
		t.Fatalf("an asset trashed within the retention was purged: %s", got.State)
	}
	if first.objects(t) != 2 { // the recent asset and its preview
		t.Fatalf("%d objects left, want 2", first.objects(t))
	}
}

func TestLinks(t *testing.T) {
	f := newFixture(t)
	a := f.upload(t, "acme")
	l := f.svc.Links(a)
	if l.Download == nil || l.Preview == nil {
		t.Fatal("links missing")
	}
	d, err := f.svc.Resolve(context.Background(), (*l.Preview)[len("http://api.test/v0/asset_files/"):])
	if err != nil || d.File.ID != a.Preview.ID {
		t.Fatalf("resolve preview: %+v %v", d, err)
	}
	a.State = domain.Deleted
	if l := f.svc.Links(a); l.Download != nil || l.Preview != nil {
		t.Fatal("a deleted asset has links")
	}
}

// slowDeletes is the real local storage whose deletes wait for the test: each Delete
// announces itself on entered (buffered), then waits for proceed (closed when the test
// ends) or its context.
type slowDeletes struct {
	domain.Storage
	entered chan string
	proceed chan struct{}
}

func (s *slowDeletes) Delete(ctx context.Context, key string) error {
	s.entered <- key
	select {
	case <-s.proceed:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Storage.Delete(ctx, key)
}

// openTransactions lists the other sessions of the test's database that are inside a
// transaction: what holds back pg_snapshot_xmin, and with it every outbox relay.
func openTransactions(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT state || ': ' || left(query, 60) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	open, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return open
}

// The janitor removes objects from storage with no transaction open: a slow object store
// must not hold back the oldest running transaction (and every outbox relay of the
// cluster behind it).
func TestSweepHoldsNoTransactionWhileRemovingObjects(t *testing.T) {
	f := newFixture(t)
	slow := &slowDeletes{Storage: f.store.Storage, entered: make(chan string, 100), proceed: make(chan struct{})}
	f.svc.Storage = slow
	t.Cleanup(func() { close(slow.proceed) })
	for range 3 {
		f.upload(t, "acme")
	}
	if _, err := f.pool.Exec(context.Background(), "UPDATE assets SET lifecycle_state = 'deleted', deleted_at = now()"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(context.Background(), `INSERT INTO object_cleanup (tenant_id, object_key, due_at)
		SELECT tenant_id, k, now() - interval '1 second' FROM assets, unnest(ARRAY[object_key, preview_key]) k`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.svc.SweepOnce(context.Background())
		done <- err
	}()
	for i := range 6 {
		select {
		case <-slow.entered:
		case err := <-done:
			t.Fatalf("the sweep ended after %d removals: %v", i, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the sweep never removed an object")
		}
		if open := openTransactions(t, f.pool); len(open) > 0 {
			t.Fatalf("a transaction is open while an object is being removed (the janitor must not hold one across object-store I/O): %v", open)
		}
		slow.proceed <- struct{}{}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f.objects(t) != 0 || f.rows(t, "object_cleanup") != 0 {
		t.Fatalf("%d objects, %d cleanup records left", f.objects(t), f.rows(t, "object_cleanup"))
	}
}

// A janitor that dies between taking records and dropping them loses none: the objects
// are removed by the next sweep once its lease ends, and an upload whose record was taken
// meanwhile is refused (its object may be gone), never stored over a removed object.
func TestASweepThatDiesMidwayLeavesItsRecordsToTheNext(t *testing.T) {
	f := newFixture(t)
	st, err := f.svc.Stage(context.Background(), "acme", bytes.NewReader([]byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)), "")
	if err != nil {
		t.Fatal(err)
	}
	f.advance(grace + time.Second)
	slow := &slowDeletes{Storage: f.store.Storage, entered: make(chan string, 100), proceed: make(chan struct{})}
	t.Cleanup(func() { close(slow.proceed) })
	f.svc.Storage = slow
	ctx, die := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.svc.SweepOnce(ctx)
		done <- err
	}()
	<-slow.entered
	die() // the process dies while the object is being removed
	if err := <-done; err == nil {
		t.Fatal("a sweep cut off midway reported success")
	}
	f.svc.Storage = f.store
	if _, err := f.svc.Create(context.Background(), app.NewAsset{Name: "n", Type: domain.TypeIcon}, st); !errors.Is(err, domain.ErrUploadExpired) {
		t.Fatalf("an upload whose cleanup record the janitor took must be refused: %v", err)
	}
	// Create's own cleanup removed it; a record left by the dead sweep alone comes due again.
	if _, err := f.pool.Exec(context.Background(), `INSERT INTO object_cleanup (tenant_id, object_key, due_at, taken_at)
		VALUES ('acme', 't/acme/file_orphan', $1, $2)`, time.Now().Add(grace+5*time.Minute), time.Now().Add(grace)); err != nil {
		t.Fatal(err)
	}
	if n, err := f.svc.SweepOnce(context.Background()); err != nil || n != 0 {
		t.Fatalf("a record within its lease was taken again: %d %v", n, err)
	}
	f.advance(15 * time.Minute)
	if n, err := f.svc.SweepOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("a record whose lease ended was not removed: %d %v", n, err)
	}
	f.nothingLeft(t)
}
