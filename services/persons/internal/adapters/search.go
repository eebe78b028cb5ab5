package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/services/persons/internal/domain"
)

// Search finds persons whose search text holds a query, with one of five statements
// chosen by the query's length and by how common it is (the planner's estimate of a
// short query, the column's sampled texts for a long one).
type Search struct {
	pool *pgxpool.Pool
	// shortCountSkip is ShortCountSkip; tests lower it to reach the walk's path without
	// millions of persons.
	shortCountSkip float64
	// samples are the column's sampled search texts, for indexPattern.
	samples *searchSamples
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
func (s *Search) planShort(ctx context.Context, tenantID string, grams []string) (float64, bool, error) {
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
// characters once case-folded), so that Persons weighs persons_search_short.
func ShortQuery(q string) bool {
	n := utf8.RuneCountInString(domain.SearchKey(q))
	return n >= 1 && n <= 2
}

const listAllSQL = "SELECT " + personCols + ` FROM persons
	WHERE tenant_id = $1 AND person_id > $2 ORDER BY person_id LIMIT $3`

// Persons returns up to limit persons whose name, email or domain contains query
// (all when query is empty), in creation order after the given ID, and the number of
// matches when it is at most domain.CountCap (else nil). A query of 3 characters or more
// is one statement (SearchSQL); otherwise the page and the capped count run at once, on
// two connections, so the answer takes as long as the slower of them.
func (s *Search) Persons(ctx context.Context, tenantID, query, after string, limit int) ([]domain.Person, *int64, error) {
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

// searchTrigrams runs SearchSQL: the page and the capped count in one statement. Only a
// page past the last match, which carries no count, needs a second query.
func (s *Search) searchTrigrams(ctx context.Context, tenantID, key, after string, limit int) ([]domain.Person, *int64, error) {
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

// samplesTTL is how long a Search keeps the sampled search texts: they change only when
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
// search through it (searches that find the sample stale at once each read it).
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
func (s *Search) indexPattern(ctx context.Context, key string) (string, error) {
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
