package adapters_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/services/topics/internal/adapters"
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
}
