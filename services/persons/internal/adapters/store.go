// Package adapters stores the persons context in PostgreSQL: persons with a trigram
// search index, accounts linked to persons by domain, logs with idempotent ingestion, and
// the form enrichment with its events written to the outbox in the same transaction.
package adapters

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/persons/internal/domain"
)

// Store is the persons repository.
type Store struct {
	pool   *pgxpool.Pool
	out    outbox.Writer
	search *Search
}

// NewStore returns a Store on pool that writes its events through out.
func NewStore(pool *pgxpool.Pool, out outbox.Writer) *Store {
	return &Store{pool: pool, out: out,
		search: &Search{pool: pool, shortCountSkip: ShortCountSkip, samples: &searchSamples{ttl: samplesTTL}}}
}

const personCols = "person_id, tenant_id, name, email, domain, slug, phone_number, linkedin_profile_url, created_at, updated_at"

// scanPerson scans personCols, then the extra columns of the row into extra.
func scanPerson(r pgx.Row, extra ...any) (domain.Person, error) {
	var p domain.Person
	err := r.Scan(append([]any{&p.ID, &p.TenantID, &p.Name, &p.Email, &p.Domain, &p.Slug, &p.PhoneNumber,
		&p.LinkedinProfileURL, &p.CreatedAt, &p.UpdatedAt}, extra...)...)
	return p, err
}

func collectPersons(rows pgx.Rows, err error) ([]domain.Person, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Person, error) { return scanPerson(r) })
}

// --- persons

// insertPerson stores p under the first free slug from its name: the base, then the base
// with a random suffix. It sets p.Slug.
func insertPerson(ctx context.Context, tx postgres.Conn, p *domain.Person) error {
	base := domain.SlugBase(p.Name)
	email, phone, linkedin := p.Keys()
	for attempt := 0; attempt < 8; attempt++ {
		slug := base
		if attempt > 0 {
			slug = base + "-" + randomSuffix()
		}
		tag, err := tx.Exec(ctx, `INSERT INTO persons (`+personCols+`, email_key, phone_key, linkedin_key, search_text)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (tenant_id, slug) DO NOTHING`,
			p.ID, p.TenantID, p.Name, p.Email, p.Domain, slug, p.PhoneNumber, p.LinkedinProfileURL, p.CreatedAt, p.UpdatedAt,
			email, phone, linkedin, p.SearchText())
		if err != nil {
			return fmt.Errorf("insert person: %w", err)
		}
		if tag.RowsAffected() == 1 {
			p.Slug = slug
			return nil
		}
	}
	return domain.ErrSlugsExhausted
}

func randomSuffix() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CreatePerson stores a new person and returns it with its slug (each attempt is one
// statement in its own transaction).
func (s *Store) CreatePerson(ctx context.Context, p domain.Person) (domain.Person, error) {
	err := insertPerson(ctx, s.pool, &p)
	return p, err
}

// GetPerson returns one person.
func (s *Store) GetPerson(ctx context.Context, tenantID, id string) (domain.Person, error) {
	p, err := scanPerson(s.pool.QueryRow(ctx, "SELECT "+personCols+" FROM persons WHERE tenant_id = $1 AND person_id = $2", tenantID, id))
	if postgres.IsNoRows(err) {
		return domain.Person{}, domain.ErrPersonNotFound
	}
	if err != nil {
		return domain.Person{}, fmt.Errorf("get person: %w", err)
	}
	return p, nil
}

// UpdatePerson locks a person, lets change change it, and stores the result and its
// event, if any, when change reports a change.
func (s *Store) UpdatePerson(ctx context.Context, tenantID, id string, change domain.Change[domain.Person]) (domain.Person, error) {
	var out domain.Person
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		p, err := scanPerson(tx.QueryRow(ctx, "SELECT "+personCols+" FROM persons WHERE tenant_id = $1 AND person_id = $2 FOR UPDATE", tenantID, id))
		if postgres.IsNoRows(err) {
			return domain.ErrPersonNotFound
		}
		if err != nil {
			return fmt.Errorf("load person: %w", err)
		}
		evt, changed, err := change(&p)
		out = p
		if err != nil || !changed {
			return err
		}
		if err := updatePerson(ctx, tx, p); err != nil {
			return err
		}
		return emit(ctx, s.out, tx, tenantID, evt)
	})
	return out, err
}

// emit stores evt, unless it is the zero Event, in the outbox in tx.
func emit(ctx context.Context, out outbox.Writer, tx pgx.Tx, tenantID string, evt domain.Event) error {
	if evt.Type == "" {
		return nil
	}
	return out.Emit(ctx, tx, events.TopicPersons, tenantID, evt.Type, evt.Subject, evt.Payload)
}

func updatePerson(ctx context.Context, tx pgx.Tx, p domain.Person) error {
	email, phone, linkedin := p.Keys()
	_, err := tx.Exec(ctx, `UPDATE persons SET name = $3, email = $4, domain = $5, phone_number = $6,
		linkedin_profile_url = $7, updated_at = $8, email_key = $9, phone_key = $10, linkedin_key = $11, search_text = $12
		WHERE tenant_id = $1 AND person_id = $2`,
		p.TenantID, p.ID, p.Name, p.Email, p.Domain, p.PhoneNumber, p.LinkedinProfileURL, p.UpdatedAt, email, phone, linkedin,
		p.SearchText())
	if err != nil {
		return fmt.Errorf("update person: %w", err)
	}
	return nil
}

// SearchPersons returns a page of the persons matching query (Search.Persons).
func (s *Store) SearchPersons(ctx context.Context, tenantID, query, after string, limit int) ([]domain.Person, *int64, error) {
	return s.search.Persons(ctx, tenantID, query, after, limit)
}

// DeletePerson removes a person and its logs.
func (s *Store) DeletePerson(ctx context.Context, tenantID, id string) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM persons WHERE tenant_id = $1 AND person_id = $2", tenantID, id)
	if err != nil {
		return fmt.Errorf("delete person: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.ErrPersonNotFound
	}
	return nil
}

// --- accounts

const accountCols = `a.account_id, a.tenant_id, a.domain, a.name, a.created_at, a.updated_at,
	GREATEST(a.last_log_at, (SELECT max(GREATEST(p.updated_at, p.last_log_at)) FROM persons p
		WHERE p.tenant_id = a.tenant_id AND p.domain = a.domain))`

func scanAccount(r pgx.Row, extra ...any) (domain.Account, error) {
	var a domain.Account
	dst := append([]any{&a.ID, &a.TenantID, &a.Domain, &a.Name, &a.CreatedAt, &a.UpdatedAt, &a.LatestActivityAt}, extra...)
	err := r.Scan(dst...)
	return a, err
}

// CreateAccount stores a new account and returns it with its linked persons.
func (s *Store) CreateAccount(ctx context.Context, a domain.Account) (domain.Account, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO accounts (tenant_id, account_id, domain, name, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, domain) DO NOTHING`,
		a.TenantID, a.ID, a.Domain, a.Name, a.CreatedAt, a.UpdatedAt)
	if err != nil {
		return domain.Account{}, fmt.Errorf("insert account: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.Account{}, domain.ErrDomainTaken
	}
	return s.GetAccount(ctx, a.TenantID, a.ID)
}

// GetAccount returns an account with up to domain.MaxLinkedPersons linked persons.
func (s *Store) GetAccount(ctx context.Context, tenantID, id string) (domain.Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, "SELECT "+accountCols+" FROM accounts a WHERE a.tenant_id = $1 AND a.account_id = $2",
		tenantID, id))
	if postgres.IsNoRows(err) {
		return domain.Account{}, domain.ErrAccountNotFound
	}
	if err != nil {
		return domain.Account{}, fmt.Errorf("get account: %w", err)
	}
	a.LinkedPersons, err = collectPersons(s.pool.Query(ctx, "SELECT "+personCols+` FROM persons
		WHERE tenant_id = $1 AND domain = $2 ORDER BY person_id LIMIT $3`, tenantID, a.Domain, domain.MaxLinkedPersons))
	if err != nil {
		return domain.Account{}, fmt.Errorf("linked persons: %w", err)
	}
	return a, nil
}

// ListAccounts returns up to limit accounts after the given ID in creation order, each
// with its linked-person count, and the number of accounts matching. With emptyOnly,
// only accounts without linked persons.
func (s *Store) ListAccounts(ctx context.Context, tenantID string, emptyOnly bool, after string, limit int) ([]domain.Account, int64, error) {
	filter := ""
	if emptyOnly {
		filter = " AND NOT EXISTS (SELECT 1 FROM persons p WHERE p.tenant_id = a.tenant_id AND p.domain = a.domain)"
	}
	b := &pgx.Batch{}
	b.Queue("SELECT "+accountCols+`, (SELECT count(*) FROM persons p WHERE p.tenant_id = a.tenant_id AND p.domain = a.domain)
		FROM accounts a WHERE a.tenant_id = $1 AND a.account_id > $2`+filter+` ORDER BY a.account_id LIMIT $3`, tenantID, after, limit)
	b.Queue("SELECT count(*) FROM accounts a WHERE a.tenant_id = $1"+filter, tenantID)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, 0, fmt.Errorf("list accounts: %w", err)
	}
	accounts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Account, error) {
		var n int64
		a, err := scanAccount(r, &n)
		a.LinkedPersonsCount = n
		return a, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("list accounts: %w", err)
	}
	var total int64
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count accounts: %w", err)
	}
	return accounts, total, nil
}

// --- logs

// logTables names the tables of one owner's logs and of the owner.
type logTables struct {
	table, idCol, ownerCol, ownerTable string
	notFound                           error
}

// tablesOf is where the logs of owner o live.
func tablesOf(o domain.LogOwner) logTables {
	if o == domain.AccountLogs {
		return logTables{"account_logs", "account_log_id", "account_id", "accounts", o.NotFound()}
	}
	return logTables{"person_logs", "person_log_id", "person_id", "persons", o.NotFound()}
}

func (k logTables) cols() string {
	return k.idCol + ", " + k.ownerCol + ", source, type, payload, idempotency_key, created_at, updated_at, deleted_at"
}

func scanLog(r pgx.Row, extra ...any) (domain.Log, error) {
	var l domain.Log
	var payload json.RawMessage
	err := r.Scan(append([]any{&l.ID, &l.OwnerID, &l.Source, &l.Type, &payload, &l.IdempotencyKey, &l.CreatedAt,
		&l.UpdatedAt, &l.DeletedAt}, extra...)...)
	l.Payload = payload
	return l, err
}

// CreateLog stores a log entry for its owner. With an idempotency key already used for
// the owner it stores nothing and returns the first entry (created false), or
// ErrIdempotencyReuse when the bodies differ. Concurrent identical requests make one
// entry: the unique index makes the later inserts wait for the first and then skip.
// A new entry is one statement (one round trip, its own transaction): the insert, and
// the owner's newest-log time, which feeds the account's latestActivityAt.
func (s *Store) CreateLog(ctx context.Context, o domain.LogOwner, tenantID string, l domain.Log) (domain.Log, bool, error) {
	k := tablesOf(o)
	out, err := scanLog(s.pool.QueryRow(ctx, `WITH ins AS (
			INSERT INTO `+k.table+` (tenant_id, `+k.cols()+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, NULL)
			ON CONFLICT (tenant_id, `+k.ownerCol+`, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
			RETURNING `+k.cols()+`),
		touch AS (UPDATE `+k.ownerTable+` SET last_log_at = GREATEST(last_log_at, $8)
			WHERE tenant_id = $1 AND `+k.ownerCol+` = $3 AND EXISTS (SELECT 1 FROM ins))
		SELECT * FROM ins`,
		tenantID, l.ID, l.OwnerID, l.Source, l.Type, json.RawMessage(l.Payload), l.IdempotencyKey, l.CreatedAt))
	switch {
	case err == nil:
		return out, true, nil
	case postgres.IsCode(err, postgres.ForeignKeyViolation):
		return domain.Log{}, false, k.notFound
	case isDataException(err):
		return domain.Log{}, false, fmt.Errorf("%w: %w", domain.ErrInvalidPayload, err)
	case !postgres.IsNoRows(err):
		return domain.Log{}, false, fmt.Errorf("insert log: %w", err)
	}
	// The key was used: return the first entry if the body is the same.
	var same bool
	first, err := scanLog(s.pool.QueryRow(ctx, "SELECT "+k.cols()+", source = $4 AND type = $5 AND payload = $6::jsonb FROM "+k.table+
		" WHERE tenant_id = $1 AND "+k.ownerCol+" = $2 AND idempotency_key = $3",
		tenantID, l.OwnerID, l.IdempotencyKey, l.Source, l.Type, json.RawMessage(l.Payload)), &same)
	if postgres.IsNoRows(err) {
		return domain.Log{}, false, k.notFound // the owner was deleted meanwhile
	}
	if err != nil {
		return domain.Log{}, false, fmt.Errorf("load idempotent log: %w", err)
	}
	if !same {
		return domain.Log{}, false, domain.ErrIdempotencyReuse
	}
	return first, false, nil
}

// isDataException reports a PostgreSQL data exception (SQLSTATE class 22): a value the
// database refuses, such as a jsonb number beyond numeric's range.
func isDataException(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22")
}

// ownerExists reports whether the owner of a kind of log exists.
func (s *Store) ownerExists(ctx context.Context, k logTables, tenantID, ownerID string) error {
	var ok bool
	err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+k.ownerTable+" WHERE tenant_id = $1 AND "+k.ownerCol+" = $2)",
		tenantID, ownerID).Scan(&ok)
	if err != nil {
		return fmt.Errorf("look up owner: %w", err)
	}
	if !ok {
		return k.notFound
	}
	return nil
}

// GetLog returns one log entry of an owner, deleted or not.
func (s *Store) GetLog(ctx context.Context, o domain.LogOwner, tenantID, ownerID, id string) (domain.Log, error) {
	k := tablesOf(o)
	l, err := scanLog(s.pool.QueryRow(ctx, "SELECT "+k.cols()+" FROM "+k.table+" WHERE tenant_id = $1 AND "+k.ownerCol+
		" = $2 AND "+k.idCol+" = $3", tenantID, ownerID, id))
	if postgres.IsNoRows(err) {
		if err := s.ownerExists(ctx, k, tenantID, ownerID); err != nil {
			return domain.Log{}, err
		}
		return domain.Log{}, domain.ErrLogNotFound
	}
	if err != nil {
		return domain.Log{}, fmt.Errorf("get log: %w", err)
	}
	return l, nil
}

// ListLogs returns up to limit entries of an owner, newest first, before the given ID
// ("" for the first page), and the number of entries matching. Soft-deleted entries are
// included only with includeDeleted.
func (s *Store) ListLogs(ctx context.Context, o domain.LogOwner, tenantID, ownerID string, includeDeleted bool, before string, limit int) ([]domain.Log, int64, error) {
	k := tablesOf(o)
	if err := s.ownerExists(ctx, k, tenantID, ownerID); err != nil {
		return nil, 0, err
	}
	filter := " AND deleted_at IS NULL"
	if includeDeleted {
		filter = ""
	}
	where := " WHERE tenant_id = $1 AND " + k.ownerCol + " = $2" + filter
	b := &pgx.Batch{}
	if before == "" {
		b.Queue("SELECT "+k.cols()+" FROM "+k.table+where+" ORDER BY "+k.idCol+" DESC LIMIT $3", tenantID, ownerID, limit)
	} else {
		b.Queue("SELECT "+k.cols()+" FROM "+k.table+where+" AND "+k.idCol+" < $3 ORDER BY "+k.idCol+" DESC LIMIT $4",
			tenantID, ownerID, before, limit)
	}
	b.Queue("SELECT count(*) FROM "+k.table+where, tenantID, ownerID)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, 0, fmt.Errorf("list logs: %w", err)
	}
	logs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Log, error) { return scanLog(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("list logs: %w", err)
	}
	var total int64
	if err := br.QueryRow().Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count logs: %w", err)
	}
	return logs, total, nil
}

// DeleteLog soft-deletes an entry: it keeps reading, with deletedAt set. Deleting a
// deleted entry changes nothing.
func (s *Store) DeleteLog(ctx context.Context, o domain.LogOwner, tenantID, ownerID, id string, now time.Time) error {
	k := tablesOf(o)
	var found bool
	err := s.pool.QueryRow(ctx, "WITH d AS (UPDATE "+k.table+" SET deleted_at = $4, updated_at = $4 WHERE tenant_id = $1 AND "+
		k.ownerCol+" = $2 AND "+k.idCol+" = $3 AND deleted_at IS NULL RETURNING 1) "+
		"SELECT EXISTS (SELECT 1 FROM d) OR EXISTS (SELECT 1 FROM "+k.table+" WHERE tenant_id = $1 AND "+k.ownerCol+
		" = $2 AND "+k.idCol+" = $3)", tenantID, ownerID, id, now).Scan(&found)
	if err != nil {
		return fmt.Errorf("delete log: %w", err)
	}
	if !found {
		if err := s.ownerExists(ctx, k, tenantID, ownerID); err != nil {
			return err
		}
		return domain.ErrLogNotFound
	}
	return nil
}
