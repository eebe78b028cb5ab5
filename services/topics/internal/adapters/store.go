// Package adapters stores the topics context in PostgreSQL; every change writes the event
// the use case chose to the outbox in the same transaction.
package adapters

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/keyset"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/topics/internal/domain"
)

// Store is the topics repository.
type Store struct {
	pool *pgxpool.Pool
	out  outbox.Writer
	// creates share transactions when they arrive together (group commit).
	creates *postgres.Coalescer
}

// NewStore returns a Store on pool that writes its events through out.
func NewStore(pool *pgxpool.Pool, out outbox.Writer) *Store {
	return &Store{pool: pool, out: out, creates: postgres.NewCoalescer(pool, 4, 64)}
}

// emit stores evt in the outbox within tx.
func (s *Store) emit(ctx context.Context, tx pgx.Tx, tenantID string, evt domain.Event) error {
	return s.out.Emit(ctx, tx, events.TopicTopics, tenantID, evt.Type, evt.Subject, evt.Payload)
}

const topicCols = "topic_id, tenant_id, title, purpose, sort_order, is_default, created_at, updated_at"

func scanTopic(r pgx.Row) (domain.Topic, error) {
	var t domain.Topic
	err := r.Scan(&t.ID, &t.TenantID, &t.Title, &t.Purpose, &t.SortOrder, &t.IsDefault, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

const entryCols = "topic_entry_id, topic_id, sort_order, content_type, content, created_at, updated_at"

func scanEntry(r pgx.Row) (domain.Entry, error) {
	var e domain.Entry
	err := r.Scan(&e.ID, &e.TopicID, &e.SortOrder, &e.Content.Type, &e.Content.Text, &e.CreatedAt, &e.UpdatedAt)
	return e, err
}

const (
	lockDefaultSQL  = "SELECT pg_advisory_xact_lock(hashtextextended('topics-default:' || $1, 0))"
	clearDefaultSQL = "UPDATE topics SET is_default = false WHERE tenant_id = $1 AND is_default AND topic_id <> $2"
)

// clearDefault makes no other topic of the tenant the default. A transaction-scoped
// advisory lock per tenant serialises concurrent default changes.
func clearDefault(ctx context.Context, tx pgx.Tx, tenantID, except string) error {
	if _, err := tx.Exec(ctx, lockDefaultSQL, tenantID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, clearDefaultSQL, tenantID, except)
	return err
}

// queueClearDefault is clearDefault as part of a batch.
func queueClearDefault(b *pgx.Batch, tenantID, except string) {
	b.Queue(lockDefaultSQL, tenantID)
	b.Queue(clearDefaultSQL, tenantID, except)
}

// CreateTopic stores a new topic and its event in one round trip: a batch outside a
// transaction runs as one implicit transaction.
func (s *Store) CreateTopic(ctx context.Context, t domain.Topic, evt domain.Event) error {
	b := &pgx.Batch{}
	if t.IsDefault {
		queueClearDefault(b, t.TenantID, t.ID)
	}
	b.Queue("INSERT INTO topics ("+topicCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
		t.ID, t.TenantID, t.Title, t.Purpose, t.SortOrder, t.IsDefault, t.CreatedAt, t.UpdatedAt)
	e, err := events.New(t.TenantID, evt.Type, evt.Subject, evt.Payload)
	if err != nil {
		return err
	}
	if err := s.out.Queue(ctx, b, events.TopicTopics, e); err != nil {
		return err
	}
	if err := s.creates.Exec(ctx, b); err != nil {
		return fmt.Errorf("insert topic: %w", mapUniqueDefault(err))
	}
	return nil
}

// UpdateTopic locks the topic, lets change change it, and stores the result and its
// event when change reports a change. It returns the topic with its entries.
func (s *Store) UpdateTopic(ctx context.Context, tenantID, id string, change domain.Change[domain.Topic]) (domain.Topic, error) {
	var out domain.Topic
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		t, err := scanTopic(tx.QueryRow(ctx, "SELECT "+topicCols+" FROM topics WHERE tenant_id = $1 AND topic_id = $2 FOR UPDATE", tenantID, id))
		if postgres.IsNoRows(err) {
			return domain.ErrTopicNotFound
		}
		if err != nil {
			return fmt.Errorf("load topic: %w", err)
		}
		if evt, changed, err := change(&t); err != nil {
			return err
		} else if changed {
			if t.IsDefault {
				if err := clearDefault(ctx, tx, tenantID, t.ID); err != nil {
					return fmt.Errorf("clear default: %w", err)
				}
			}
			_, err := tx.Exec(ctx, `UPDATE topics SET title = $3, purpose = $4, sort_order = $5, is_default = $6, updated_at = $7
				WHERE tenant_id = $1 AND topic_id = $2`, tenantID, id, t.Title, t.Purpose, t.SortOrder, t.IsDefault, t.UpdatedAt)
			if err != nil {
				return fmt.Errorf("update topic: %w", err)
			}
			if err := s.emit(ctx, tx, tenantID, evt); err != nil {
				return err
			}
		}
		if t.Entries, err = entriesOf(ctx, tx, tenantID, []string{t.ID}); err != nil {
			return err
		}
		out = t
		return nil
	})
	return out, mapUniqueDefault(err)
}

// mapUniqueDefault turns a lost race on the one-default index into a domain error.
func mapUniqueDefault(err error) error {
	if postgres.IsCode(err, postgres.UniqueViolation) && postgres.ConstraintOf(err) == "topics_one_default" {
		return domain.ErrDefaultConflict
	}
	return err
}

// DeleteTopic removes a topic and its entries.
func (s *Store) DeleteTopic(ctx context.Context, tenantID, id string, evt domain.Event) error {
	return postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM topics WHERE tenant_id = $1 AND topic_id = $2", tenantID, id)
		if err != nil {
			return fmt.Errorf("delete topic: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return domain.ErrTopicNotFound
		}
		return s.emit(ctx, tx, tenantID, evt)
	})
}

// entriesOf returns the entries of the given topics in list order. With one topic, the
// result is that topic's entries.
func entriesOf(ctx context.Context, q postgres.Conn, tenantID string, topicIDs []string) ([]domain.Entry, error) {
	rows, err := q.Query(ctx, "SELECT "+entryCols+` FROM topic_entries
		WHERE tenant_id = $1 AND topic_id = ANY($2) ORDER BY topic_id, sort_order, topic_entry_id`, tenantID, topicIDs)
	if err != nil {
		return nil, fmt.Errorf("load entries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Entry, error) { return scanEntry(r) })
	if err != nil {
		return nil, fmt.Errorf("load entries: %w", err)
	}
	return out, nil
}

// GetTopic returns a topic with its entries (one round trip).
func (s *Store) GetTopic(ctx context.Context, tenantID, id string) (domain.Topic, error) {
	b := &pgx.Batch{}
	b.Queue("SELECT "+topicCols+" FROM topics WHERE tenant_id = $1 AND topic_id = $2", tenantID, id)
	b.Queue("SELECT "+entryCols+` FROM topic_entries WHERE tenant_id = $1 AND topic_id = $2
		ORDER BY sort_order, topic_entry_id`, tenantID, id)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	t, err := scanTopic(br.QueryRow())
	if postgres.IsNoRows(err) {
		return domain.Topic{}, domain.ErrTopicNotFound
	}
	if err != nil {
		return domain.Topic{}, fmt.Errorf("get topic: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return domain.Topic{}, fmt.Errorf("get entries: %w", err)
	}
	if t.Entries, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Entry, error) { return scanEntry(r) }); err != nil {
		return domain.Topic{}, fmt.Errorf("get entries: %w", err)
	}
	return t, nil
}

// topicsWithinBudgetSQL reads the next $2 topics in list order (after the position its
// %s adds) and keeps those whose predecessors' entries hold at most $3 bytes, and at
// least two: a page holds no more (pagination.Build cuts it at that budget of encoded
// JSON, and the entries are counted as written: entriesSizeSQL), and the last one kept
// tells Build that the page was cut; its last column says whether the topic may be in
// the page (its entries are loaded only then). Without it, limit+1 topics of 2 MB of
// entries were all loaded.
const topicsWithinBudgetSQL = "SELECT " + topicCols + `, n = 1 OR before <= $3 FROM (
	SELECT t.*, row_number() OVER w AS n, sum(b.bytes) OVER w - b.bytes AS before
	FROM (SELECT * FROM topics WHERE tenant_id = $1 %s ORDER BY sort_order, topic_id LIMIT $2) t
	CROSS JOIN LATERAL (SELECT ` + entriesSizeSQL + ` AS bytes FROM topic_entries
		WHERE tenant_id = t.tenant_id AND topic_id = t.topic_id) b
	WINDOW w AS (ORDER BY t.sort_order, t.topic_id)) page
	WHERE n <= 2 OR before <= $3 ORDER BY sort_order, topic_id`

// ListTopics returns up to limit topics after the position, each with its entries (of
// as many topics as a page can hold: see topicsWithinBudgetSQL), and the tenant's topic
// count.
func (s *Store) ListTopics(ctx context.Context, tenantID string, after *keyset.Position, limit int) ([]domain.Topic, int64, error) {
	b := &pgx.Batch{}
	if after == nil {
		b.Queue(fmt.Sprintf(topicsWithinBudgetSQL, ""), tenantID, limit, pagination.MaxPageBytes)
	} else {
		b.Queue(fmt.Sprintf(topicsWithinBudgetSQL, "AND (sort_order, topic_id) > ($4, $5)"),
			tenantID, limit, pagination.MaxPageBytes, after.Key, after.ID)
	}
	b.Queue("SELECT count(*) FROM topics WHERE tenant_id = $1", tenantID)
	br := s.pool.SendBatch(ctx, b)
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, 0, fmt.Errorf("list topics: %w", err)
	}
	// whole: the topic may be in the page. The one after the page's budget only tells Build
	// that the page was cut, so its entries, which no answer holds, are not loaded.
	var whole []string
	topics, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Topic, error) {
		var t domain.Topic
		var inPage bool
		err := r.Scan(&t.ID, &t.TenantID, &t.Title, &t.Purpose, &t.SortOrder, &t.IsDefault, &t.CreatedAt, &t.UpdatedAt, &inPage)
		if inPage {
			whole = append(whole, t.ID)
		}
		return t, err
	})
	if err != nil {
		br.Close()
		return nil, 0, fmt.Errorf("list topics: %w", err)
	}
	var total int64
	if err := br.QueryRow().Scan(&total); err != nil {
		br.Close()
		return nil, 0, fmt.Errorf("count topics: %w", err)
	}
	if err := br.Close(); err != nil {
		return nil, 0, fmt.Errorf("list topics: %w", err)
	}
	if len(topics) == 0 {
		return topics, total, nil
	}
	index := make(map[string]int, len(topics))
	for i, t := range topics {
		index[t.ID] = i
		topics[i].Entries = []domain.Entry{}
	}
	entries, err := entriesOf(ctx, s.pool, tenantID, whole)
	if err != nil {
		return nil, 0, err
	}
	for _, e := range entries {
		i := index[e.TopicID]
		topics[i].Entries = append(topics[i].Entries, e)
	}
	return topics, total, nil
}

// AddEntry stores a new entry under a topic, within the per-topic limit.
func (s *Store) AddEntry(ctx context.Context, tenantID string, e domain.Entry, evt domain.Event) error {
	return postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// Lock the topic, then count: concurrent additions count one after another. The
		// count is a statement of its own, after the lock: a statement's snapshot is taken
		// before it waits for a lock, so counted in the locking statement, an addition
		// committed meanwhile went unseen (the 100-entry and size bounds were passed).
		n, size, err := s.lockAndMeasure(ctx, tx, tenantID, e.TopicID, "")
		if err != nil {
			return err
		}
		if n >= domain.MaxEntriesPerTopic {
			return domain.ErrTooManyEntries
		}
		if size+e.Content.Size() > domain.MaxTopicBytes {
			return domain.ErrTopicTooLarge
		}
		_, err = tx.Exec(ctx, "INSERT INTO topic_entries (tenant_id, "+entryCols+", content_bytes) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
			tenantID, e.ID, e.TopicID, e.SortOrder, e.Content.Type, e.Content.Text, e.CreatedAt, e.UpdatedAt, e.Content.Size())
		if err != nil {
			return fmt.Errorf("insert entry: %w", err)
		}
		return s.emit(ctx, tx, tenantID, evt)
	})
}

// UpdateEntry locks an entry of a topic, lets change change it and stores the result
// and its event when change reports a change.
func (s *Store) UpdateEntry(ctx context.Context, tenantID, topicID, entryID string, change domain.Change[domain.Entry]) (domain.Entry, error) {
	var out domain.Entry
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		e, err := scanEntry(tx.QueryRow(ctx, "SELECT "+entryCols+` FROM topic_entries
			WHERE tenant_id = $1 AND topic_id = $2 AND topic_entry_id = $3 FOR UPDATE`, tenantID, topicID, entryID))
		if postgres.IsNoRows(err) {
			return s.missing(ctx, tx, tenantID, topicID)
		}
		if err != nil {
			return fmt.Errorf("load entry: %w", err)
		}
		before := e.Content
		if evt, changed, err := change(&e); err != nil {
			return err
		} else if changed {
			if e.Content != before {
				if err := s.fitsAfterUpdate(ctx, tx, tenantID, e); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, `UPDATE topic_entries SET sort_order = $4, content_type = $5, content = $6, updated_at = $7,
					content_bytes = $8
				WHERE tenant_id = $1 AND topic_id = $2 AND topic_entry_id = $3`,
				tenantID, topicID, entryID, e.SortOrder, e.Content.Type, e.Content.Text, e.UpdatedAt, e.Content.Size())
			if err != nil {
				return fmt.Errorf("update entry: %w", err)
			}
			if err := s.emit(ctx, tx, tenantID, evt); err != nil {
				return err
			}
		}
		out = e
		return nil
	})
	return out, err
}

// entriesSizeSQL adds up what a topic's entries take in an answer (domain.Content.Size);
// rows written before content_bytes existed count by to_json of their type and text.
const entriesSizeSQL = `coalesce(sum(coalesce(content_bytes,
	octet_length(to_json(content_type)::text) + octet_length(to_json(content)::text))), 0)`

// fitsAfterUpdate locks e's topic, so that changes of its entries count one after
// another, and reports ErrTopicTooLarge when e's new content would take the topic's
// entries past domain.MaxTopicBytes.
func (s *Store) fitsAfterUpdate(ctx context.Context, tx pgx.Tx, tenantID string, e domain.Entry) error {
	_, others, err := s.lockAndMeasure(ctx, tx, tenantID, e.TopicID, e.ID)
	if err != nil {
		return err
	}
	if others+e.Content.Size() > domain.MaxTopicBytes {
		return domain.ErrTopicTooLarge
	}
	return nil
}

// lockAndMeasure locks a topic's row, then counts its entries but except (none when
// empty) and adds up their size (entriesSizeSQL), in a statement after the lock, whose
// snapshot sees every change committed by the lock's previous holder.
func (s *Store) lockAndMeasure(ctx context.Context, tx pgx.Tx, tenantID, topicID, except string) (n, size int, err error) {
	var exists bool
	_, err = tx.Exec(ctx, "SELECT 1 FROM topics WHERE tenant_id = $1 AND topic_id = $2 FOR UPDATE", tenantID, topicID)
	if err != nil {
		return 0, 0, fmt.Errorf("lock topic: %w", err)
	}
	err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM topics WHERE tenant_id = $1 AND topic_id = $2),
			count(*), `+entriesSizeSQL+` FROM topic_entries
		WHERE tenant_id = $1 AND topic_id = $2 AND topic_entry_id <> $3`, tenantID, topicID, except).Scan(&exists, &n, &size)
	if err != nil {
		return 0, 0, fmt.Errorf("measure topic: %w", err)
	}
	if !exists {
		return 0, 0, domain.ErrTopicNotFound
	}
	return n, size, nil
}

// missing tells which of topic and entry does not exist.
func (s *Store) missing(ctx context.Context, q postgres.Conn, tenantID, topicID string) error {
	var exists bool
	if err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM topics WHERE tenant_id = $1 AND topic_id = $2)", tenantID, topicID).Scan(&exists); err != nil {
		return fmt.Errorf("look up topic: %w", err)
	}
	if !exists {
		return domain.ErrTopicNotFound
	}
	return domain.ErrEntryNotFound
}

// DeleteEntry removes an entry of a topic.
func (s *Store) DeleteEntry(ctx context.Context, tenantID, topicID, entryID string, evt domain.Event) error {
	return postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM topic_entries WHERE tenant_id = $1 AND topic_id = $2 AND topic_entry_id = $3",
			tenantID, topicID, entryID)
		if err != nil {
			return fmt.Errorf("delete entry: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return s.missing(ctx, tx, tenantID, topicID)
		}
		return s.emit(ctx, tx, tenantID, evt)
	})
}

// GetEntry returns one entry of a topic.
func (s *Store) GetEntry(ctx context.Context, tenantID, topicID, entryID string) (domain.Entry, error) {
	e, err := scanEntry(s.pool.QueryRow(ctx, "SELECT "+entryCols+` FROM topic_entries
		WHERE tenant_id = $1 AND topic_id = $2 AND topic_entry_id = $3`, tenantID, topicID, entryID))
	if postgres.IsNoRows(err) {
		return domain.Entry{}, s.missing(ctx, s.pool, tenantID, topicID)
	}
	if err != nil {
		return domain.Entry{}, fmt.Errorf("get entry: %w", err)
	}
	return e, nil
}

// ListEntries returns up to limit entries of a topic after the position, and the topic's
// entry count.
func (s *Store) ListEntries(ctx context.Context, tenantID, topicID string, after *keyset.Position, limit int) ([]domain.Entry, int64, error) {
	var total int64
	var exists bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM topics WHERE tenant_id = $1 AND topic_id = $2),
		(SELECT count(*) FROM topic_entries WHERE tenant_id = $1 AND topic_id = $2)`, tenantID, topicID).Scan(&exists, &total)
	if err != nil {
		return nil, 0, fmt.Errorf("count entries: %w", err)
	}
	if !exists {
		return nil, 0, domain.ErrTopicNotFound
	}
	var rows pgx.Rows
	if after == nil {
		rows, err = s.pool.Query(ctx, "SELECT "+entryCols+` FROM topic_entries WHERE tenant_id = $1 AND topic_id = $2
			ORDER BY sort_order, topic_entry_id LIMIT $3`, tenantID, topicID, limit)
	} else {
		rows, err = s.pool.Query(ctx, "SELECT "+entryCols+` FROM topic_entries WHERE tenant_id = $1 AND topic_id = $2
			AND (sort_order, topic_entry_id) > ($3, $4) ORDER BY sort_order, topic_entry_id LIMIT $5`,
			tenantID, topicID, after.Key, after.ID, limit)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list entries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Entry, error) { return scanEntry(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("list entries: %w", err)
	}
	return out, total, nil
}
