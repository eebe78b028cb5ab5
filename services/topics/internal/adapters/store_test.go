package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/topics/internal/adapters"
	"github.com/customerapi/platform/services/topics/internal/domain"
	"github.com/customerapi/platform/services/topics/migrations"
)

// A list of topics loads the entries of no more topics than a page can hold: those whose
// predecessors' entries stay within pagination.MaxPageBytes, and at least two, so the
// page can tell that more follow. It loaded every entry of limit+1 topics (101 topics of
// 2 MB made one request hold 200 MB).
func TestListTopicsLoadsEntriesWithinThePageBudget(t *testing.T) {
	pool := pgtest.NewPool(t, outbox.Migrations, migrations.Set)
	ctx := context.Background()
	now := time.Now()
	const topics, entries, size = 5, 20, 30000 // 600 kB of entries a topic
	if _, err := pool.Exec(ctx, `INSERT INTO topics (tenant_id, topic_id, title, sort_order, created_at, updated_at)
		SELECT 'big', 'topic_' || lpad(i::text, 26, '0'), 'topic ' || i, i, $1, $1 FROM generate_series(1, $2) i`, now, topics); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO topic_entries (tenant_id, topic_entry_id, topic_id, sort_order, content_type, content, created_at, updated_at)
		SELECT 'big', 'topicentry_' || lpad((i * 100 + j)::text, 26, '0'), 'topic_' || lpad(i::text, 26, '0'), j, 'text', $3, $1, $1
		FROM generate_series(1, $2) i, generate_series(1, $4) j`, now, topics, strings.Repeat("a", size), entries); err != nil {
		t.Fatal(err)
	}
	store := adapters.NewStore(pool, outbox.Writer{})
	got, total, err := store.ListTopics(ctx, "big", nil, pagination.MaxLimit+1)
	if err != nil {
		t.Fatal(err)
	}
	if total != topics {
		t.Fatalf("totalCount must count every topic (%d); got %d", topics, total)
	}
	if len(got) != 2 {
		t.Fatalf("with topics of %d bytes of entries, a list must load the two whose predecessors fit in %d bytes (one page and the one that ends it); loaded %d",
			entries*size, pagination.MaxPageBytes, len(got))
	}
	for i, tp := range got {
		if len(tp.Entries) != entries {
			t.Fatalf("a topic loaded must come with all its entries; topic %d has %d of %d", i, len(tp.Entries), entries)
		}
	}
	// Entries are counted as the answer writes them: 200 kB of control characters a
	// topic is 1.2 MB of JSON (each \u0001), so again two topics are loaded, not six.
	if _, err := pool.Exec(ctx, `UPDATE topic_entries SET content = repeat(chr(1), 10000), content_bytes = NULL
		WHERE tenant_id = 'big'`); err != nil {
		t.Fatal(err)
	}
	got, _, err = store.ListTopics(ctx, "big", nil, pagination.MaxLimit+1)
	if err != nil || len(got) != 2 {
		t.Fatalf("topics of 200 kB of control characters (1.2 MB as JSON) must be loaded two at a time; loaded %d (%v)", len(got), err)
	}
	// The second only tells that the page, full with the first, was cut: no answer holds
	// its entries, so they are not loaded.
	if len(got[0].Entries) != entries || len(got[1].Entries) != 0 {
		t.Fatalf("the page's topic must come with its %d entries and the one past the budget with none; got %d and %d",
			entries, len(got[0].Entries), len(got[1].Entries))
	}
}

// A topic's entries stay within domain.MaxTopicBytes as the API writes them: an entry of
// control characters (6 bytes each in JSON) counts six times its length, the write that
// would take the topic past the bound is refused whether it adds or changes an entry,
// and rows written before content_bytes existed count too. 100 entries of 20,000
// control characters made a single topic a 12 MB answer.
func TestATopicsEntriesStayWithinTheirAnswerSize(t *testing.T) {
	pool, store, topic := oneTopic(t)
	ctx, now := context.Background(), topic.CreatedAt
	control := domain.Content{Type: "text", Text: strings.Repeat("\x01", 20000)} // 120,000 bytes and its type
	add := func(i int, c domain.Content) error {
		e := domain.Entry{ID: fmt.Sprintf("topicentry_%026d", i), TopicID: topic.ID, Content: c, CreatedAt: now, UpdatedAt: now}
		return store.AddEntry(ctx, "t", e, domain.EntryCreated(e))
	}
	fit := domain.MaxTopicBytes / control.Size()
	for i := range fit {
		if err := add(i, control); err != nil {
			t.Fatalf("entry %d of %d, within %d bytes: %v", i+1, fit, domain.MaxTopicBytes, err)
		}
	}
	if err := add(fit, control); !errors.Is(err, domain.ErrTopicTooLarge) {
		t.Fatalf("an entry taking the topic's entries past %d bytes as JSON must be refused with ErrTopicTooLarge; got %v",
			domain.MaxTopicBytes, err)
	}
	small := domain.Content{Type: "text", Text: "x"}
	if err := add(fit+1, small); err != nil {
		t.Fatalf("a small entry that still fits must be added: %v", err)
	}
	// Growing an entry past the bound is refused too; shrinking one is not.
	grow := func(e *domain.Entry) (domain.Event, bool, error) {
		e.Content = control
		return domain.EntryUpdated(*e), true, nil
	}
	id := fmt.Sprintf("topicentry_%026d", fit+1)
	if _, err := store.UpdateEntry(ctx, "t", topic.ID, id, grow); err == nil {
		t.Fatal("an entry changed to take the topic past its bound must be refused")
	} else if !errors.Is(err, domain.ErrTopicTooLarge) {
		t.Fatalf("growing an entry past the bound: %v, want ErrTopicTooLarge", err)
	}
	if _, err := store.UpdateEntry(ctx, "t", topic.ID, fmt.Sprintf("topicentry_%026d", 0), func(e *domain.Entry) (domain.Event, bool, error) {
		e.Content = small
		return domain.EntryUpdated(*e), true, nil
	}); err != nil {
		t.Fatalf("shrinking an entry must be allowed: %v", err)
	}
	// Rows written before the column existed count by their text: as many more entries
	// fit as the sizes say.
	if _, err := pool.Exec(ctx, "UPDATE topic_entries SET content_bytes = NULL"); err != nil {
		t.Fatal(err)
	}
	room := domain.MaxTopicBytes - (fit-1)*control.Size() - 2*small.Size()
	for i := range room / control.Size() {
		if err := add(fit+2+i, control); err != nil {
			t.Fatalf("entry %d of the %d that still fit: %v", i+1, room/control.Size(), err)
		}
	}
	if err := add(fit+2+room/control.Size(), control); !errors.Is(err, domain.ErrTopicTooLarge) {
		t.Fatalf("entries without content_bytes must count by their text; one more was not refused: %v", err)
	}
}

// Additions racing for a topic's last places are counted one after another: of 16 at
// once for a topic of 95 entries, 5 are stored and the topic holds 100. The count was
// taken in the statement that locked the topic, whose snapshot predates its wait for
// the lock, so every racing addition saw 95 and all 16 were stored.
func TestRacingAdditionsKeepATopicsBounds(t *testing.T) {
	pool, store, topic := oneTopic(t)
	ctx, now := context.Background(), topic.CreatedAt
	if _, err := pool.Exec(ctx, `INSERT INTO topic_entries (tenant_id, topic_entry_id, topic_id, sort_order, content_type, content, created_at, updated_at)
		SELECT 't', 'topicentry_' || lpad(i::text, 26, '0'), $1, i, 'text', 'x', $2, $2 FROM generate_series(1, 95) i`, topic.ID, now); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var stored, refused atomic.Int32
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := domain.Entry{ID: fmt.Sprintf("topicentry_9%025d", i), TopicID: topic.ID, Content: domain.Content{Type: "text", Text: "y"},
				CreatedAt: now, UpdatedAt: now}
			switch err := store.AddEntry(ctx, "t", e, domain.EntryCreated(e)); {
			case err == nil:
				stored.Add(1)
			case errors.Is(err, domain.ErrTooManyEntries):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM topic_entries WHERE topic_id = $1", topic.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != domain.MaxEntriesPerTopic || stored.Load() != 5 || refused.Load() != 11 {
		t.Fatalf("16 racing additions to a topic of 95 entries: %d stored, %d refused, the topic holds %d; want 5, 11 and %d",
			stored.Load(), refused.Load(), n, domain.MaxEntriesPerTopic)
	}
}

// oneTopic gives a test a fresh database holding one topic of tenant "t", its store and
// the topic.
func oneTopic(t *testing.T) (*pgxpool.Pool, *adapters.Store, domain.Topic) {
	t.Helper()
	pool := pgtest.NewPool(t, outbox.Migrations, migrations.Set)
	store := adapters.NewStore(pool, outbox.Writer{})
	now := time.Now().UTC()
	topic := domain.Topic{ID: "topic_00000000000000000000000001", TenantID: "t", Title: "t", CreatedAt: now, UpdatedAt: now}
	if err := store.CreateTopic(context.Background(), topic, domain.TopicCreated(topic)); err != nil {
		t.Fatal(err)
	}
	return pool, store, topic
}
