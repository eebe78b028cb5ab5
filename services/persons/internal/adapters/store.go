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
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/persons/internal/domain"
)

// Store is the persons repository.
type Store struct {
	pool *pgxpool.Pool
	out  outbox.Writer
	// shortCountSkip is ShortCountSkip; tests lower it to reach the walk's path without
	// millions of persons.
	shortCountSkip float64
	// samples are the column's sampled search texts, for indexPattern.
	samples *searchSamples
}

// NewStore returns a Store on pool that writes its events through out.
func NewStore(pool *pgxpool.Pool, out outbox.Writer) *Store {
	return &Store{pool: pool, out: out, shortCountSkip: ShortCountSkip, samples: &searchSamples{ttl: samplesTTL}}
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

// execer runs statements: the pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// insertPerson stores p under the first free slug from its name: the base, then the base
// with a random suffix. It sets p.Slug.
func insertPerson(ctx context.Context, tx execer, p *domain.Person) error {
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

// UpdatePerson locks a person, lets fn change it, and stores the result when fn reports
// a change.
func (s *Store) UpdatePerson(ctx context.Context, tenantID, id string, fn func(*domain.Person) bool) (domain.Person, error) {
	var out domain.Person
	err := postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		p, err := scanPerson(tx.QueryRow(ctx, "SELECT "+personCols+" FROM persons WHERE tenant_id = $1 AND person_id = $2 FOR UPDATE", tenantID, id))
		if postgres.IsNoRows(err) {
			return domain.ErrPersonNotFound
		}
		if err != nil {
			return fmt.Errorf("load person: %w", err)
		}
		if fn(&p) {
			if err := updatePerson(ctx, tx, p); err != nil {
				return err
			}
		}
		out = p
		return nil
	})
	return out, err
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

// LikePattern makes the LIKE pattern matching q anywhere, case-insensitively (search_text
// is lower case), with LIKE's wildcards in q taken literally.
func LikePattern(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(domain.SearchKey(q)) + "%"
}

// SearchSQL is the page of a person search with a query of 3 characters or more, and its
// capped count, in one statement: $1 tenant, $2 pattern, $3 the ID after which to
// continue ("" for the first page), $4 the row limit, $5 domain.CountCap + 1. It first
// collects the IDs of up to $5 matches (through the trigram index, or a scan that stops
// at $5 when matches are common); every row carries their number. Up to the cap, the page
// is taken from those IDs; beyond it, matches are common enough that walking the primary
// key fills a page soon. The branch not taken is never executed. The planner is not left
// to choose: LIKE estimates are rough, and with ORDER BY ... LIMIT it would at times walk
// the primary key for a query with twenty matches, reading the whole tenant to find them.
//
// $6 is the pattern the trigram index looks up: $2, or the part of the query that leaves
// out trigrams nearly every person has (indexPattern). Every match of $2 matches $6; the
// full pattern is then checked on what the index found, as an expression the index cannot
// take (search_text joined to the empty string), so that the planner does not look its
// trigrams up again. When $6 is $2 the check folds away and the planner sees the plain
// condition (with it, the extra condition's selectivity made the planner prefer the
// index for "example", which every person holds: 16 ms at 10,000,000 persons against 8).
const SearchSQL = `WITH matches AS MATERIALIZED (
	SELECT person_id FROM persons WHERE tenant_id = $1 AND search_text LIKE $6 AND ($6 = $2 OR (search_text || '') LIKE $2)
	LIMIT $5),
counted AS MATERIALIZED (SELECT count(*) AS n FROM matches)
SELECT * FROM (
	(SELECT ` + personCols + `, (SELECT n FROM counted) FROM persons
	WHERE tenant_id = $1 AND (SELECT n FROM counted) < $5
	AND person_id IN (SELECT person_id FROM matches WHERE person_id > $3 ORDER BY person_id LIMIT $4))
	UNION ALL
	(SELECT ` + personCols + `, (SELECT n FROM counted) FROM persons
	WHERE tenant_id = $1 AND search_text LIKE $2 AND person_id > $3 AND (SELECT n FROM counted) >= $5
	ORDER BY person_id LIMIT $4)
) page ORDER BY person_id`

// walkSearchSQL is the page of a search that walks the primary key, for a common query
// of 1 or 2 characters: $1 tenant, $2 pattern, $3 after, $4 limit.
const walkSearchSQL = "SELECT " + personCols + ` FROM persons
	WHERE tenant_id = $1 AND search_text LIKE $2 AND person_id > $3 ORDER BY person_id LIMIT $4`

// boundedWalkSQL is the page of a short query the statistics call common, from the next
// WalkBound persons of the tenant in order: $1 tenant, $2 pattern, $3 after, $4 limit,
// $5 the bound. It reads at most $5 persons, matches or not.
const boundedWalkSQL = "SELECT " + personCols + ` FROM (SELECT ` + personCols + `, search_text FROM persons
	WHERE tenant_id = $1 AND person_id > $3 ORDER BY person_id LIMIT $5) w
	WHERE search_text LIKE $2 ORDER BY person_id LIMIT $4`

// WalkBound is how many persons the walk of a short query estimated common reads before
// it leaves the page to persons_search_short: a query in one person of 250 still fills
// a page of 20 within it, and reading it costs about 3 ms.
const WalkBound = 5000

// searchCountSQL is the capped count of a search's matches: $1 tenant, $2 pattern, $3
// the cap plus one.
const searchCountSQL = `SELECT count(*) FROM (SELECT 1 FROM persons WHERE tenant_id = $1 AND search_text LIKE $2 LIMIT $3) s`

// ShortSearchSQL is the page of a rare query of 1 or 2 characters, which has no trigram,
// through persons_search_short: $1 to $4 as in walkSearchSQL, $5 the query as the one
// element persons_search_short looks up.
const ShortSearchSQL = "SELECT " + personCols + ` FROM persons
	WHERE tenant_id = $1 AND persons_short_grams(search_text) @> $5::text[] AND search_text LIKE $2 AND person_id > $3
	ORDER BY person_id LIMIT $4`

// ShortCountSQL is the capped count of a query of 1 or 2 characters through
// persons_search_short: $1 tenant, $2 the query as the one element to look up, $3 the
// cap. The element is the match ("ab" occurs in a text exactly when its pairs hold "ab"),
// so no LIKE says it again: with one, the planner took the two conditions for
// independent, expected a tenth of the matches and, for a query just above the cap,
// counted them with parallel workers (53 against 7 ms at 100,000 persons). The page
// keeps its LIKE, which its walk of the primary key tests before the costly function.
const ShortCountSQL = `SELECT count(*) FROM (SELECT 1 FROM persons WHERE tenant_id = $1
	AND persons_short_grams(search_text) @> $2::text[] LIMIT $3) s`

// ShortCountSkip is the estimated number of matches of a 1- or 2-character query above
// which its count is skipped (totalCount null): the statistics of persons_search_short
// are exact enough that far beyond domain.CountCap.
const ShortCountSkip = 4 * domain.CountCap

// planShort asks the planner how many persons of the tenant hold one of grams (for a 1-
// or 2-character query, exactly its matches) and whether it would find them through
// persons_search_short; the statement is planned for these very values.
func (s *Store) planShort(ctx context.Context, tenantID string, grams []string) (float64, bool, error) {
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	var raw []byte
	err := s.pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT 1 FROM persons
		WHERE tenant_id = $1 AND persons_short_grams(search_text) @> $2::text[]`,
		pgx.QueryExecModeExec, tenantID, grams).Scan(&raw)
	if err == nil {
		err = json.Unmarshal(raw, &plan)
	}
	if err == nil && len(plan) != 1 {
		err = fmt.Errorf("%d plans", len(plan))
	}
	if err != nil {
		return 0, false, fmt.Errorf("plan search: %w", err)
	}
	return plan[0].Plan.Rows, strings.Contains(string(raw), `"Index Name": "persons_search_short"`), nil
}

// ShortQuery reports whether a search query is too short for trigrams (1 or 2
// characters once case-folded), so that SearchPersons weighs persons_search_short.
func ShortQuery(q string) bool {
	n := utf8.RuneCountInString(domain.SearchKey(q))
	return n >= 1 && n <= 2
}

const listAllSQL = "SELECT " + personCols + ` FROM persons
	WHERE tenant_id = $1 AND person_id > $2 ORDER BY person_id LIMIT $3`

// SearchPersons returns up to limit persons whose name, email or domain contains query
// (all when query is empty), in creation order after the given ID, and the number of
// matches when it is at most domain.CountCap (else nil). A query of 3 characters or more
// is one statement (SearchSQL); otherwise the page and the capped count run at once, on
// two connections, so the answer takes as long as the slower of them.
func (s *Store) SearchPersons(ctx context.Context, tenantID, query, after string, limit int) ([]domain.Person, *int64, error) {
	if query != "" && !ShortQuery(query) {
		return s.searchTrigrams(ctx, tenantID, domain.SearchKey(query), after, limit)
	}
	pageSQL, countSQL := listAllSQL, `SELECT count(*) FROM (SELECT 1 FROM persons WHERE tenant_id = $1 LIMIT $2) s`
	pageArgs, countArgs := []any{tenantID, after, limit}, []any{tenantID, domain.CountCap + 1}
	if query != "" {
		// A query of 1 or 2 characters has no trigram. A rare character or pair is found
		// through persons_search_short. A common one is not: the primary key walk with the
		// LIKE alone soon fills a page (the pair condition is left out,
		// persons_short_grams row by row is costly), and counting is skipped when the
		// statistics put the matches far beyond the cap and the walk bears them out.
		pattern := LikePattern(query)
		pageSQL, countSQL = walkSearchSQL, searchCountSQL
		pageArgs, countArgs = []any{tenantID, pattern, after, limit}, []any{tenantID, pattern, domain.CountCap + 1}
		grams := []string{domain.SearchKey(query)}
		est, indexed, err := s.planShort(ctx, tenantID, grams)
		if err != nil {
			return nil, nil, err
		}
		if est > s.shortCountSkip {
			// The statistics say the query is common, and a page is near: walk a bounded
			// stretch of the primary key. They can be wrong: a character or pair missing
			// from ANALYZE's sample is estimated at half the share of the rarest one in
			// it (at 10,000,000 persons, 50,000 matches for a query with none), and an
			// unbounded walk for a rare query reads the whole tenant (2.3 s at 10,000,000
			// persons). A walk that does not fill the page leaves it to the index below.
			persons, err := collectPersons(s.pool.Query(ctx, boundedWalkSQL, pgx.QueryExecModeExec,
				tenantID, pattern, after, limit, WalkBound))
			if err != nil {
				return nil, nil, fmt.Errorf("search persons: %w", err)
			}
			if len(persons) == limit {
				return persons, nil, nil
			}
		}
		if indexed {
			pageSQL, countSQL = ShortSearchSQL, ShortCountSQL
			pageArgs, countArgs = []any{tenantID, pattern, after, limit, grams}, []any{tenantID, grams, domain.CountCap + 1}
		}
	}
	// The count runs beside the page on another connection (a first page that holds
	// every match is its own count; the count then finishes unread: cancelling it would
	// cost the pool its connection). Both run as unnamed
	// statements, planned for the actual pattern every time: a cached generic plan would
	// pick the trigram index even for a pattern too short to use it (a full index scan).
	type counted struct {
		n   int64
		err error
	}
	count := make(chan counted, 1)
	if countSQL == "" {
		count <- counted{n: domain.CountCap + 1}
	} else {
		go func() {
			var c counted
			c.err = s.pool.QueryRow(ctx, countSQL, append([]any{pgx.QueryExecModeExec}, countArgs...)...).Scan(&c.n)
			count <- c
		}()
	}
	persons, err := collectPersons(s.pool.Query(ctx, pageSQL, append([]any{pgx.QueryExecModeExec}, pageArgs...)...))
	if err != nil {
		return nil, nil, fmt.Errorf("search persons: %w", err)
	}
	if after == "" && len(persons) < limit {
		n := int64(len(persons))
		return persons, &n, nil
	}
	c := <-count
	if c.err != nil {
		return nil, nil, fmt.Errorf("count persons: %w", c.err)
	}
	if c.n > domain.CountCap {
		return persons, nil, nil
	}
	return persons, &c.n, nil
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

// searchTrigrams runs SearchSQL: the page and the capped count in one statement. Only a
// page past the last match, which carries no count, needs a second query.
func (s *Store) searchTrigrams(ctx context.Context, tenantID, key, after string, limit int) ([]domain.Person, *int64, error) {
	var n int64
	lookup, err := s.indexPattern(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	pattern := LikePattern(key)
	rows, err := s.pool.Query(ctx, SearchSQL, pgx.QueryExecModeExec, tenantID, pattern, after, limit, domain.CountCap+1, lookup)
	if err != nil {
		return nil, nil, fmt.Errorf("search persons: %w", err)
	}
	persons, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Person, error) { return scanPerson(r, &n) })
	if err != nil {
		return nil, nil, fmt.Errorf("search persons: %w", err)
	}
	if len(persons) == 0 {
		if after == "" {
			return persons, new(int64), nil
		}
		err := s.pool.QueryRow(ctx, searchCountSQL, pgx.QueryExecModeExec, tenantID, pattern, domain.CountCap+1).Scan(&n)
		if err != nil {
			return nil, nil, fmt.Errorf("count persons: %w", err)
		}
	}
	if n > domain.CountCap {
		return persons, nil, nil
	}
	return persons, &n, nil
}

// searchSamplesSQL reads the search texts ANALYZE sampled for the column's histogram
// (about a hundred). No row when there is no histogram (no statistics yet, or too few
// persons for one).
const searchSamplesSQL = `SELECT histogram_bounds::text::text[] FROM pg_stats
	WHERE schemaname = current_schema() AND tablename = 'persons' AND attname = 'search_text'
		AND histogram_bounds IS NOT NULL`

// samplesTTL is how long a Store keeps the sampled search texts: they change only when
// ANALYZE runs, and a stale sample makes a search slower, never different.
const samplesTTL = time.Minute

// searchSamples holds the sampled search texts and when they were read.
type searchSamples struct {
	mu     sync.Mutex
	texts  []string
	readAt time.Time
	ttl    time.Duration
}

// get returns the sampled search texts, read again from pool when older than the TTL.
// The lock is not held during the read: a slow read delays its own search, not every
// search of the Store (searches that find the sample stale at once each read it).
func (c *searchSamples) get(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	c.mu.Lock()
	texts, fresh := c.texts, !c.readAt.IsZero() && time.Since(c.readAt) < c.ttl
	c.mu.Unlock()
	if fresh {
		return texts, nil
	}
	err := pool.QueryRow(ctx, searchSamplesSQL).Scan(&texts)
	if errors.Is(err, pgx.ErrNoRows) {
		texts, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("search persons: trigram statistics: %w", err)
	}
	c.mu.Lock()
	c.texts, c.readAt = texts, time.Now()
	c.mu.Unlock()
	return texts, nil
}

// indexPattern is the LIKE pattern the trigram index looks up for the search key: the
// key's longest stretch without a trigram that more than half of the persons have (by
// the column's sampled search texts, kept for samplesTTL). The index reads every entry
// of each trigram it looks up; at 10,000,000 persons a query for one person's email spent
// 66 of its 77 ms on the three trigrams of "user" that every generated email has
// (docs/benchmarks.md). The whole pattern is checked on what the narrower one finds, so
// the matches are the same.
func (s *Store) indexPattern(ctx context.Context, key string) (string, error) {
	runes := []rune(key)
	if len(runes) < 4 {
		return LikePattern(key), nil
	}
	texts, err := s.samples.get(ctx, s.pool)
	if err != nil || len(texts) == 0 {
		return LikePattern(key), err
	}
	common := make([]bool, len(runes)-2)
	for i := range common {
		window, n := string(runes[i:i+3]), 0
		for _, t := range texts {
			if strings.Contains(t, window) {
				n++
			}
		}
		common[i] = 2*n > len(texts)
	}
	return LikePattern(narrowKey(key, common)), nil
}

// narrowKey is the part of key that the trigram index should look up, given for each of
// its 3-character windows whether it is common: the longest run of windows that are not,
// among the runs that hold a window of three ASCII letters or digits (pg_trgm takes its
// trigrams from words; a run without one would give the index nothing to look up). The
// whole key when no window is common, or when no run qualifies.
func narrowKey(key string, common []bool) string {
	runes := []rune(key)
	if len(common) != len(runes)-2 || !slices.Contains(common, true) {
		return key
	}
	word := func(i int) bool {
		for _, r := range runes[i : i+3] {
			if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || 'A' <= r && r <= 'Z') {
				return false
			}
		}
		return true
	}
	bestFrom, bestLen := -1, 0
	for i := 0; i < len(common); {
		if common[i] {
			i++
			continue
		}
		j, words := i, false
		for ; j < len(common) && !common[j]; j++ {
			words = words || word(j)
		}
		if words && j-i > bestLen {
			bestFrom, bestLen = i, j-i
		}
		i = j
	}
	if bestFrom < 0 {
		return key
	}
	return string(runes[bestFrom : bestFrom+bestLen+2])
}
