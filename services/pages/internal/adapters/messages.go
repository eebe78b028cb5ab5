package adapters

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

const changeCols = "id, message_id, field, previous_value, new_value, applied_version_id IS NOT NULL, created_at"

func scanChange(r pgx.Row) (domain.ContextChange, error) {
	var c domain.ContextChange
	err := r.Scan(&c.ID, &c.MessageID, &c.Field, &c.PreviousValue, &c.NewValue, &c.Applied, &c.CreatedAt)
	return c, err
}

func collectChanges(rows pgx.Rows, err error) ([]domain.ContextChange, error) {
	if err != nil {
		return nil, fmt.Errorf("load changes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.ContextChange, error) { return scanChange(r) })
	if err != nil {
		return nil, fmt.Errorf("load changes: %w", err)
	}
	return out, nil
}

func pendingChanges(ctx context.Context, q postgres.Conn, tenantID, audienceID string) ([]domain.ContextChange, error) {
	return collectChanges(q.Query(ctx, "SELECT "+changeCols+` FROM audience_changes
		WHERE tenant_id = $1 AND audience_id = $2 AND applied_version_id IS NULL ORDER BY id`, tenantID, audienceID))
}

// pageContextOf reads the context text of a page.
func pageContextOf(ctx context.Context, q postgres.Conn, tenantID, pageID string) (string, error) {
	var c string
	err := q.QueryRow(ctx, "SELECT page_context FROM pages WHERE tenant_id = $1 AND id = $2", tenantID, pageID).Scan(&c)
	return c, wrapErr(err, "load page context")
}

// newestMessagesSQL reads an audience's newest messages whose text holds at most $3 bytes
// as the answer writes it, at least one, oldest first, each with the count of all the
// audience's messages. The text is counted JSON-escaped (to_json: a control character
// takes 6 bytes, as the encoder writes it), the content once and each change's previous
// and new values twice, since a change not yet applied is listed again in the pending
// changes.
const newestMessagesSQL = `WITH sizes AS (
		SELECT message_id, 2 * sum(octet_length(to_json(previous_value)::text) + octet_length(to_json(new_value)::text)) AS bytes
		FROM audience_changes WHERE tenant_id = $1 AND audience_id = $2 GROUP BY message_id),
	ranked AS (
		SELECT m.id, m.audience_id, m.content, m.has_snapshot, m.is_interrupted, m.created_at,
			count(*) OVER () AS total, row_number() OVER w AS n,
			sum(octet_length(to_json(m.content)::text) + coalesce(s.bytes, 0)) OVER w AS upto
		FROM audience_messages m LEFT JOIN sizes s ON s.message_id = m.id
		WHERE m.tenant_id = $1 AND m.audience_id = $2
		WINDOW w AS (ORDER BY m.id DESC))
	SELECT id, audience_id, content, has_snapshot, is_interrupted, created_at, total FROM ranked
	WHERE n = 1 OR upto <= $3 ORDER BY id`

// Messages reads an audience's conversation, its newest messages within
// domain.MaxMessagesReadBytes with their changes (oldest first) and how many older ones
// are left out, the pending changes of the messages read and the page context.
func (s *Store) Messages(ctx context.Context, tenantID, pageID, audienceID string) (domain.Messages, error) {
	var out domain.Messages
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		a, err := s.getAudience(ctx, tx, tenantID, pageID, audienceID, "")
		if err != nil {
			return err
		}
		pageContext, err := pageContextOf(ctx, tx, tenantID, pageID)
		if err != nil {
			return err
		}
		out.Context = domain.ContextOf(&a, pageContext)
		var conv domain.Conversation
		err = tx.QueryRow(ctx, `SELECT id, audience_id, published_message_id, created_at, updated_at FROM audience_conversations
			WHERE tenant_id = $1 AND audience_id = $2`, tenantID, audienceID).
			Scan(&conv.ID, &conv.AudienceID, &conv.PublishedMessageID, &conv.CreatedAt, &conv.UpdatedAt)
		switch {
		case err == nil:
			out.Conversation = &conv
		case !postgres.IsNoRows(err):
			return fmt.Errorf("load conversation: %w", err)
		}
		rows, err := tx.Query(ctx, newestMessagesSQL, tenantID, audienceID, domain.MaxMessagesReadBytes)
		if err != nil {
			return fmt.Errorf("load messages: %w", err)
		}
		total := 0
		out.Messages, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Message, error) {
			var m domain.Message
			err := r.Scan(&m.ID, &m.AudienceID, &m.Content, &m.HasSnapshot, &m.IsInterrupted, &m.CreatedAt, &total)
			return m, err
		})
		if err != nil {
			return fmt.Errorf("load messages: %w", err)
		}
		out.Omitted = total - len(out.Messages)
		ids := make([]string, len(out.Messages))
		for i, m := range out.Messages {
			ids[i] = m.ID
		}
		changes, err := collectChanges(tx.Query(ctx, "SELECT "+changeCols+` FROM audience_changes
			WHERE tenant_id = $1 AND audience_id = $2 AND message_id = ANY($3) ORDER BY message_id, position`, tenantID, audienceID, ids))
		if err != nil {
			return err
		}
		index := make(map[string]int, len(out.Messages))
		for i := range out.Messages {
			index[out.Messages[i].ID] = i
			out.Messages[i].Changes = []domain.ContextChange{}
		}
		out.PendingChanges = []domain.ContextChange{}
		for _, c := range changes {
			if i, ok := index[c.MessageID]; ok {
				out.Messages[i].Changes = append(out.Messages[i].Changes, c)
			}
			if !c.Applied {
				out.PendingChanges = append(out.PendingChanges, c)
			}
		}
		return nil
	})
	return out, err
}

// AddMessage stores a message of an unarchived audience with its changes, whose previous
// values are taken from the audience's current context (domain.ContextOf), creating the
// conversation on the first message.
func (s *Store) AddMessage(ctx context.Context, tenantID, pageID string, m domain.Message, conversationID string) (domain.Message, error) {
	var out domain.Message
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		a, err := s.getAudience(ctx, tx, tenantID, pageID, m.AudienceID, " FOR UPDATE OF a")
		if err != nil {
			return err
		}
		if a.ArchivedAt != nil {
			return domain.ErrAudienceArchived
		}
		var held int // counted under the audience's row lock: two adds cannot both pass
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM audience_messages WHERE tenant_id = $1 AND audience_id = $2",
			tenantID, a.ID).Scan(&held); err != nil {
			return fmt.Errorf("count messages: %w", err)
		}
		if held >= domain.MaxMessagesPerAudience {
			return domain.ErrTooManyMessages
		}
		pageContext, err := pageContextOf(ctx, tx, tenantID, pageID)
		if err != nil {
			return err
		}
		cur := domain.ContextOf(&a, pageContext)
		// A pending change of the same field is the value the next version would show.
		pending, err := pendingChanges(ctx, tx, tenantID, a.ID)
		if err != nil {
			return err
		}
		latest := map[string]string{}
		for _, c := range pending {
			latest[c.Field] = c.NewValue
		}
		if _, err := tx.Exec(ctx, `INSERT INTO audience_conversations (tenant_id, id, audience_id, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $4) ON CONFLICT (tenant_id, audience_id) DO UPDATE SET updated_at = $4`,
			tenantID, conversationID, a.ID, m.CreatedAt); err != nil {
			return fmt.Errorf("upsert conversation: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO audience_messages (tenant_id, id, audience_id, content, created_at)
			VALUES ($1, $2, $3, $4, $5)`, tenantID, m.ID, a.ID, m.Content, m.CreatedAt); err != nil {
			return fmt.Errorf("insert message: %w", err)
		}
		for i := range m.Changes {
			c := &m.Changes[i]
			c.PreviousValue = cur.Value(c.Field)
			if v, ok := latest[c.Field]; ok {
				c.PreviousValue = v
			}
			latest[c.Field] = c.NewValue
			if _, err := tx.Exec(ctx, `INSERT INTO audience_changes (tenant_id, id, audience_id, message_id, position, field,
				previous_value, new_value, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				tenantID, c.ID, a.ID, m.ID, i, c.Field, c.PreviousValue, c.NewValue, c.CreatedAt); err != nil {
				return fmt.Errorf("insert change: %w", err)
			}
		}
		out = m
		return nil
	})
	return out, err
}
