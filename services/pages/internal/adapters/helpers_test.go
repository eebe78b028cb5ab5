package adapters_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/pages/internal/adapters"
	"github.com/customerapi/platform/services/pages/internal/application"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// schema is the database the service runs on: the outbox (which the service runtime
// applies first) and every migration set of the pages service, in service order.
var schema = append([]postgres.MigrationSet{outbox.Migrations}, application.Migrations...)

// The two tenants of the isolation tests.
const (
	tenantA = "tenant_a"
	tenantB = "tenant_b"
)

// start is the fixture clock's first reading: fixed, so leases and queue times are
// decided by the tests, never by how fast they run.
var start = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

// fixture is one test's own database, a store on it and a clock.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	store *adapters.Store
	now   time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	pool := pgtest.NewPool(t, schema...)
	return &fixture{t: t, ctx: context.Background(), pool: pool, store: adapters.NewStore(pool, outbox.Writer{}), now: start}
}

// tick moves the clock on by d and returns the new time.
func (f *fixture) tick(d time.Duration) time.Time {
	f.now = f.now.Add(d)
	return f.now
}

// newPage is a draft page of the tenant as the app's CreatePage makes it, not stored.
func newPage(tenantID string, now time.Time) domain.Page {
	return domain.Page{ID: ids.New("page"), TenantID: tenantID, Name: "home", Title: "Welcome", PageType: "inbound",
		Status: domain.PageDraft, Flags: []string{}, CreatedAt: now, UpdatedAt: now}
}

// createPage stores a new page of the tenant, changed first by the options.
func (f *fixture) createPage(tenantID string, opts ...func(*domain.Page)) domain.Page {
	f.t.Helper()
	p := newPage(tenantID, f.tick(time.Second))
	for _, o := range opts {
		o(&p)
	}
	if err := f.store.CreatePage(f.ctx, p); err != nil {
		f.t.Fatalf("create page: %v", err)
	}
	return p
}

// changePage runs fn on a stored page through UpdatePage, as the app's page use cases do.
func (f *fixture) changePage(p domain.Page, withDeleted bool, fn func(*domain.Page)) domain.Page {
	f.t.Helper()
	out, err := f.store.UpdatePage(f.ctx, p.TenantID, p.ID, withDeleted, update(func(p *domain.Page) error { fn(p); return nil }))
	if err != nil {
		f.t.Fatalf("update page %s: %v", p.ID, err)
	}
	return out
}

// deletePage soft-deletes a page as the app's DeletePage does.
func (f *fixture) deletePage(p domain.Page) {
	f.t.Helper()
	now := f.tick(time.Second)
	f.changePage(p, false, func(p *domain.Page) { p.DeletedAt, p.UpdatedAt = &now, now })
}

// archivePage archives a page as the app's ArchivePage does.
func (f *fixture) archivePage(p domain.Page) {
	f.t.Helper()
	now := f.tick(time.Second)
	f.changePage(p, false, func(p *domain.Page) { p.Archive(now) })
}

// newAudience is an audience and its first version as the app's CreateAudience makes
// them, not stored.
func newAudience(tenantID, pageID string, now time.Time) (domain.Audience, domain.Version) {
	a := domain.Audience{ID: ids.New("audience"), TenantID: tenantID, PageID: pageID, Status: domain.StatusQueued,
		Flags: []string{}, IsNewPageAgent: true, PublishBehavior: domain.BehaviorPublish, CreatedAt: now, UpdatedAt: now}
	v := domain.Version{ID: ids.New("version"), TenantID: tenantID, PageID: pageID, AudienceID: a.ID, VersionNumber: 1,
		Status: domain.StatusQueued, IsNewPageAgent: true, PublishOnComplete: true, CreatedAt: now, QueuedAt: &now}
	return a, v
}

// update is the update callback the app's use cases make of fn: it announces nothing
// and always stores.
func update[T any](fn func(*T) error) domain.Change[T] {
	return func(cur *T) (domain.Event, bool, error) { return domain.Event{}, true, fn(cur) }
}

// storeAudience stores an audience with its first version as the app's CreateAudience
// does, announcing the version.
func storeAudience(s *adapters.Store, ctx context.Context, a domain.Audience, v domain.Version) (domain.Audience, error) {
	return s.CreateAudience(ctx, a, v, domain.VersionCreatedEvent(&v))
}

// storeVersion queues a version as the app's CreateVersion does, announcing it.
func storeVersion(s *adapters.Store, ctx context.Context, v domain.Version) (domain.Version, bool, error) {
	return s.CreateVersion(ctx, v, domain.VersionCreatedEvent(&v))
}

// archiveAudience archives an audience at now as the app's ArchiveAudience does.
func archiveAudience(s *adapters.Store, ctx context.Context, tenantID, pageID, id string, now time.Time) (domain.Audience, error) {
	return s.ArchiveAudience(ctx, tenantID, pageID, id,
		func(a *domain.Audience) (domain.Event, bool, error) { return domain.Event{}, a.Archive(now), nil },
		func(v *domain.Version) domain.Event { return domain.VersionProcessedEvent(v, now) })
}

// createAudience stores a new audience (changed first by the options) with its first
// queued version.
func (f *fixture) createAudience(tenantID, pageID string, opts ...func(*domain.Audience)) domain.Audience {
	f.t.Helper()
	a, v := newAudience(tenantID, pageID, f.tick(time.Second))
	for _, o := range opts {
		o(&a)
	}
	v.TenantID, v.PageID, v.AudienceID = a.TenantID, a.PageID, a.ID
	v.PublishOnComplete, v.SupplementaryContext = a.PublishBehavior == domain.BehaviorPublish, a.SupplementaryContext
	out, err := storeAudience(f.store, f.ctx, a, v)
	if err != nil {
		f.t.Fatalf("create audience: %v", err)
	}
	return out
}

// newVersion is the version the app's CreateVersion hands to the store.
func (f *fixture) newVersion(a domain.Audience, operationKey *string) domain.Version {
	now := f.tick(time.Second)
	return domain.Version{ID: ids.New("version"), TenantID: a.TenantID, PageID: a.PageID, AudienceID: a.ID,
		Status: domain.StatusQueued, OperationKey: operationKey, CreatedAt: now, QueuedAt: &now}
}

// createVersion queues a new version of the audience.
func (f *fixture) createVersion(a domain.Audience) domain.Version {
	f.t.Helper()
	v, created, err := storeVersion(f.store, f.ctx, f.newVersion(a, nil))
	if err != nil || !created {
		f.t.Fatalf("create version of %s: created %v, %v", a.ID, created, err)
	}
	return v
}

// getAudience reads an audience that must exist.
func (f *fixture) getAudience(a domain.Audience) domain.Audience {
	f.t.Helper()
	got, err := f.store.GetAudience(f.ctx, a.TenantID, a.PageID, a.ID)
	if err != nil {
		f.t.Fatalf("get audience %s: %v", a.ID, err)
	}
	return got
}

// version reads a version row straight from the table.
func (f *fixture) version(tenantID, id string) versionRow {
	f.t.Helper()
	var v versionRow
	err := f.pool.QueryRow(f.ctx, `SELECT status, attempts, lease_until, queue_duration_ms, processing_at, obsolete_at,
		archived_at, cancelled_at, published_at, became_draft_at, snapshot IS NOT NULL
		FROM audience_versions WHERE tenant_id = $1 AND id = $2`, tenantID, id).
		Scan(&v.Status, &v.Attempts, &v.LeaseUntil, &v.QueueDurationMs, &v.ProcessingAt, &v.ObsoleteAt, &v.ArchivedAt,
			&v.CancelledAt, &v.PublishedAt, &v.BecameDraftAt, &v.HasSnapshot)
	if err != nil {
		f.t.Fatalf("read version %s: %v", id, err)
	}
	return v
}

// versionRow is the processing state of a stored version.
type versionRow struct {
	Status          string
	Attempts        int
	LeaseUntil      *time.Time
	QueueDurationMs *float64
	ProcessingAt    *time.Time
	HasSnapshot     bool
	ObsoleteAt      *time.Time
	ArchivedAt      *time.Time
	CancelledAt     *time.Time
	PublishedAt     *time.Time
	BecameDraftAt   *time.Time
}

// count runs a counting query.
func (f *fixture) count(sql string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(f.ctx, sql, args...).Scan(&n); err != nil {
		f.t.Fatalf("count: %v", err)
	}
	return n
}

// outboxRow is one event in the outbox, with the (32-bit) ID of the transaction that
// wrote it.
type outboxRow struct {
	Topic string
	Key   string
	XID   int64
	Event events.Envelope
}

// outboxRows returns the outbox in write order, of type typ only when typ is set.
func (f *fixture) outboxRows(typ string) []outboxRow {
	f.t.Helper()
	rows, err := f.pool.Query(f.ctx, `SELECT topic, msg_key, (txid::text::numeric % 4294967296)::bigint, value
		FROM outbox ORDER BY txid, id`)
	if err != nil {
		f.t.Fatalf("read outbox: %v", err)
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outboxRow, error) {
		var o outboxRow
		var value []byte
		if err := r.Scan(&o.Topic, &o.Key, &o.XID, &value); err != nil {
			return o, err
		}
		return o, json.Unmarshal(value, &o.Event)
	})
	if err != nil {
		f.t.Fatalf("read outbox: %v", err)
	}
	var out []outboxRow
	for _, o := range all {
		if typ == "" || o.Event.Type == typ {
			out = append(out, o)
		}
	}
	return out
}

// lastWriter returns the (32-bit) ID of the transaction that last wrote a row of table.
func (f *fixture) lastWriter(table, tenantID, id string) int64 {
	f.t.Helper()
	var xid int64
	// table is one of the tests' constants, never input.
	if err := f.pool.QueryRow(f.ctx, "SELECT xmin::text::bigint FROM "+table+" WHERE tenant_id = $1 AND id = $2",
		tenantID, id).Scan(&xid); err != nil {
		f.t.Fatalf("read xmin of %s %s: %v", table, id, err)
	}
	return xid
}

// payload decodes an outbox event's payload.
func payload[T any](t *testing.T, o outboxRow) T {
	t.Helper()
	var p T
	if err := json.Unmarshal(o.Event.Payload, &p); err != nil {
		t.Fatalf("decode the payload of %s: %v", o.Event.Type, err)
	}
	return p
}

// wantErr fails the test unless err is want; rule names the rule broken otherwise.
func wantErr(t *testing.T, err, want error, rule string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want %v", rule, err, want)
	}
}

// utc returns t in UTC (PostgreSQL hands timestamps back in the local zone).
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// sameTime reports whether two optional times are both unset or the same instant.
func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// reachable is tenant A's audiences in and out of reach: an audience and an archived one
// on page, another page of the tenant, and an audience of a page since deleted.
type reachable struct {
	page, other, gone          domain.Page
	audience, archived, ofGone domain.Audience
}

// reach creates the audiences of reachable.
func (f *fixture) reach(t *testing.T) reachable {
	t.Helper()
	var r reachable
	r.page = f.createPage(tenantA)
	r.other = f.createPage(tenantA)
	r.audience = f.createAudience(tenantA, r.page.ID)
	r.archived = f.createAudience(tenantA, r.page.ID)
	if _, err := archiveAudience(f.store, f.ctx, tenantA, r.page.ID, r.archived.ID, f.tick(time.Second)); err != nil {
		t.Fatalf("archive audience: %v", err)
	}
	r.gone = f.createPage(tenantA)
	r.ofGone = f.createAudience(tenantA, r.gone.ID)
	f.deletePage(r.gone)
	return r
}

// countedStore is a store on a pool of its own on the fixture's database whose round
// trips to the server are counted.
func (f *fixture) countedStore() (*adapters.Store, *pgtest.RoundTrips) {
	f.t.Helper()
	trips := &pgtest.RoundTrips{}
	return adapters.NewStore(pgtest.Traced(f.t, f.pool, trips), outbox.Writer{}), trips
}
