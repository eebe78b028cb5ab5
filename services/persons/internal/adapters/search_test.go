package adapters_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/services/persons/internal/adapters"
	"github.com/customerapi/platform/services/persons/internal/domain"
	"github.com/customerapi/platform/services/persons/migrations"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A search over 100,000 persons uses the trigram index, not a scan of the table, and
// answers quickly.
func TestSearchUsesTheTrigramIndex(t *testing.T) {
	pool := pgtest.NewPool(t, migrations.Set)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fill(t, pool, "acme", 100000, 5000, "i")
	// Whatever the planner estimates, a page never reads the tenant: a query with few
	// matches finds them through the trigram index, one with many walks the primary key
	// and soon has its page.
	for q, trigrams := range map[string]bool{"user4242@": true, "Company1234.example": true, "person 99999": true,
		"example": false, "person": false} {
		for _, after := range []string{"", fmt.Sprintf("person_%026d", 50000)} {
			p := explainSearch(t, pool, adapters.SearchSQL, "acme", adapters.LikePattern(q), after, 21, domain.CountCap+1,
				adapters.LikePattern(q))
			if p.pageRows > 100 || trigrams && !slices.Contains(p.matchIndexes, "persons_search") {
				t.Errorf("query %q after %q: the page read %.0f rows, the matches were found through %v",
					q, after, p.pageRows, p.matchIndexes)
			}
		}
	}
	store := adapters.NewStore(pool, outbox.Writer{})
	// Queries of 1 or 2 characters have no trigram: rare ones use persons_search_short
	// (the full-table walk took 300 ms and more at a million persons), common ones walk
	// the table, which soon finds a page and the capped count.
	var quiz []string
	for i := 0; i < 3; i++ {
		p, err := store.CreatePerson(ctx, domain.Person{ID: fmt.Sprintf("person_zz%d", i), TenantID: "acme", Name: "Zoë Quiz",
			CreatedAt: time.Now(), UpdatedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		quiz = append(quiz, p.ID)
	}
	for _, q := range []string{"q", "Zq", "ë", "Ë", "k"} {
		text := explain(t, pool, adapters.ShortSearchSQL, "acme", adapters.LikePattern(q), "", 21, []string{domain.SearchKey(q)})
		if !strings.Contains(text, "persons_search_short") {
			t.Fatalf("short query %q does not use persons_search_short:\n%s", q, text)
		}
	}
	for q, want := range map[string][]string{"q": quiz, "QU": quiz, "ë": quiz, "zo": quiz, "k": nil, "zq": nil} {
		began := time.Now()
		got, total, err := store.SearchPersons(ctx, "acme", q, "", 21)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range got {
			ids = append(ids, p.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(want) || total == nil || *total != int64(len(want)) {
			t.Fatalf("short query %q: %v, total %v", q, ids, total)
		}
		t.Logf("short query %q took %v", q, time.Since(began))
	}
	// A rare short query pages through the index like any other.
	if got, total, err := store.SearchPersons(ctx, "acme", "q", quiz[0], 2); err != nil || len(got) != 2 || got[0].ID != quiz[1] ||
		total == nil || *total != 3 {
		t.Fatalf("second page of %q: %v, total %v, %v", "q", got, total, err)
	}
	// The capped count of a short query is planned on the gram alone, which is its
	// match: with the LIKE that says the same again, the planner multiplied the two
	// selectivities, expected a tenth of the matches of "r9" (11% of the tenant, just
	// above the cap) and counted them with parallel workers, 53 ms against 7 ms.
	var matches float64
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM persons WHERE tenant_id = 'acme' AND search_text LIKE '%r9%'").Scan(&matches); err != nil {
		t.Fatal(err)
	}
	if est := estimatedRows(t, pool, adapters.ShortCountSQL, "acme", []string{"r9"}, domain.CountCap+1); est < min(matches, domain.CountCap+1)/2 {
		t.Errorf("the capped count of %q is planned for %.0f rows of its %.0f matches: a second condition skews the estimate", "r9", est, matches)
	}
	for _, q := range []string{"e", "@", "r9"} {
		got, total, err := store.SearchPersons(ctx, "acme", q, "", 21)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 21 || total != nil && *total <= 10000 {
			t.Fatalf("common short query %q: %d items, total %v", q, len(got), total)
		}
	}

	began := time.Now()
	got, total, err := store.SearchPersons(ctx, "acme", "USER4242@", "", 21)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "Person 4242" || total == nil || *total != 1 {
		t.Fatalf("got %v, total %v", got, total)
	}
	t.Logf("search took %v", time.Since(began))
	// Common matches: more than the count cap gives a null totalCount.
	got, total, err = store.SearchPersons(ctx, "acme", "example", "", 21)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 21 || total != nil {
		t.Fatalf("broad search: %d items, total %v", len(got), total)
	}
	_, total, err = store.SearchPersons(ctx, "acme", "company12.example", "", 21)
	if err != nil {
		t.Fatal(err)
	}
	if total == nil || *total != 20 {
		t.Fatalf("company12.example: total %v", total)
	}
}

// estimatedRows is the planner's estimate of the rows under sql's top node: for a
// count(*) over a subquery, the rows it counts.
func estimatedRows(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) float64 {
	t.Helper()
	var raw []byte
	if err := pool.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+sql,
		append([]any{pgx.QueryExecModeExec}, args...)...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var plans []struct {
		Plan struct {
			Plans []struct {
				Rows float64 `json:"Plan Rows"`
			} `json:"Plans"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 || len(plans[0].Plan.Plans) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	return plans[0].Plan.Plans[0].Rows // under the count's aggregate: the capped rows
}

// searchPlan is what a search statement read, from EXPLAIN ANALYZE.
type searchPlan struct {
	matchIndexes []string // the indexes (or "seq scan") of the CTE that collects the matches
	pageRows     float64  // the rows of persons read outside the CTEs and InitPlans
}

// explainSearch runs sql under EXPLAIN ANALYZE and sums up what it read.
func explainSearch(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) searchPlan {
	t.Helper()
	type node struct {
		Type         string  `json:"Node Type"`
		Relationship string  `json:"Parent Relationship"`
		Subplan      string  `json:"Subplan Name"`
		Index        string  `json:"Index Name"`
		Relation     string  `json:"Relation Name"`
		Rows         float64 `json:"Actual Rows"`
		Removed      float64 `json:"Rows Removed by Filter"`
		Loops        float64 `json:"Actual Loops"`
		Plans        []node  `json:"Plans"`
	}
	var raw []byte
	if err := pool.QueryRow(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+sql,
		append([]any{pgx.QueryExecModeExec}, args...)...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var plans []struct{ Plan node }
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	var p searchPlan
	var walk func(n node, inMatches bool)
	walk = func(n node, inMatches bool) {
		if n.Loops == 0 {
			return
		}
		if n.Relationship == "InitPlan" {
			if n.Subplan != "CTE matches" {
				return
			}
			inMatches = true
		}
		switch {
		case inMatches && n.Index != "":
			p.matchIndexes = append(p.matchIndexes, n.Index)
		case inMatches && n.Type == "Seq Scan":
			p.matchIndexes = append(p.matchIndexes, "seq scan")
		case !inMatches && n.Relation == "persons":
			p.pageRows += (n.Rows + n.Removed) * n.Loops
		}
		for _, c := range n.Plans {
			walk(c, inMatches)
		}
	}
	walk(plans[0].Plan, false)
	return p
}

// explain returns the plan of sql with args.
func explain(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return strings.Join(plan, "\n")
}

// A short query the statistics call common may be rare (a character or pair missing
// from ANALYZE's sample is estimated at half the rarest sampled one's share: 50,000
// matches at 10,000,000 persons for a query with none). Its search must still give the
// right page and count without reading the tenant: the walk of the primary key is
// bounded, and a walk that does not fill the page leaves it to persons_search_short.
func TestShortQueryEstimatedCommonNeverReadsTheTenant(t *testing.T) {
	pool := pgtest.NewPool(t, migrations.Set)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fill(t, pool, "acme", 100000, 5000, "i")
	var quiz []string
	for i := 0; i < 3; i++ {
		p, err := adapters.NewStore(pool, outbox.Writer{}).CreatePerson(ctx, domain.Person{ID: fmt.Sprintf("person_zz%d", i),
			TenantID: "acme", Name: "Zoë Quiz", CreatedAt: time.Now(), UpdatedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		quiz = append(quiz, p.ID)
	}
	log := &pgtest.StatementLog{}
	store := adapters.NewStore(pgtest.Traced(t, pool, log), outbox.Writer{})
	store.SetShortCountSkip(-1) // every short query estimated common
	for _, tc := range []struct {
		q     string
		want  []string // nil: a full page of 21, total null
		total int64
	}{
		{"zq", []string{}, 0},
		{"q", quiz, 3},
		{"ë", quiz, 3},
		{"e", nil, -1},
		{"9", nil, -1},
	} {
		got, total, err := store.SearchPersons(ctx, "acme", tc.q, "", 21)
		if err != nil {
			t.Fatalf("query %q: %v", tc.q, err)
		}
		ids := []string{}
		for _, p := range got {
			ids = append(ids, p.ID)
		}
		switch {
		case tc.want == nil && (len(got) != 21 || total != nil):
			t.Errorf("common query %q: want a full page and a null total, got %d persons, total %v", tc.q, len(got), total)
		case tc.want != nil && (fmt.Sprint(ids) != fmt.Sprint(tc.want) || total == nil || *total != tc.total):
			t.Errorf("rare query %q estimated common: want %v and total %d, got %v and total %v", tc.q, tc.want, tc.total, ids, total)
		}
		for _, run := range log.Take() {
			if strings.HasPrefix(run.SQL, "EXPLAIN") {
				continue // the estimate itself
			}
			if p := explainSearch(t, pool, run.SQL, run.Args...); p.pageRows > adapters.WalkBound+100 {
				t.Errorf("query %q estimated common: a statement read %.0f persons (at most %d may be read): %s",
					tc.q, p.pageRows, adapters.WalkBound+100, strings.Join(strings.Fields(run.SQL), " "))
			}
		}
	}
}

// The trigram index looks up the longest stretch of the query without a trigram common
// to most persons, if there is a common one and the stretch holds a word's trigram.
func TestNarrowKey(t *testing.T) {
	c, r := true, false
	for _, tc := range []struct {
		name, key string
		common    []bool
		want      string
	}{
		{"no common trigram: the whole key", "user4242@", []bool{r, r, r, r, r, r, r}, "user4242@"},
		{"the common head left out", "user4242@", []bool{c, c, r, r, r, r, r}, "er4242@"},
		{"every trigram common: the whole key", "company", []bool{c, c, c, c, c}, "company"},
		{"the first of two equal runs", "abcdefgh", []bool{r, r, c, c, r, r}, "abcd"},
		{"the longer run", "abcdefgh", []bool{r, c, r, r, r, c}, "cdefg"},
		{"a run without a word's trigram does not count", "ab@c.d@ef", []bool{c, r, r, r, r, r, c}, "ab@c.d@ef"},
		{"a run of one window", "xyzab", []bool{c, r, c}, "yza"},
		{"statistics of another length: the whole key", "abcdef", []bool{c, r}, "abcdef"},
	} {
		if got := adapters.NarrowKey(tc.key, tc.common); got != tc.want {
			t.Errorf("%s: narrowKey(%q, %v) = %q, want %q", tc.name, tc.key, tc.common, got, tc.want)
		}
	}
}

// Over persons who all share trigrams (every email holds "user" and "company"), a search
// looks up only the query's rarer part in the trigram index and checks the whole query on
// what it finds: the same matches, fewer index entries read.
func TestSearchLooksUpTheRarerPartOfTheQuery(t *testing.T) {
	pool := pgtest.NewPool(t, migrations.Set)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store := adapters.NewStore(pool, outbox.Writer{})
	store.ReadSamplesEachTime()
	// A Store with the default keeps what it read: the statistics below are new to it
	// only after samplesTTL (a minute), so searches do not read pg_stats each time.
	cached := adapters.NewStore(pool, outbox.Writer{})
	if got, err := cached.IndexPattern(ctx, "user4242@"); err != nil || got != "%user4242@%" {
		t.Fatalf("without statistics the index must look up the whole query: got %q, %v", got, err)
	}
	if got, err := store.IndexPattern(ctx, "user4242@"); err != nil || got != "%user4242@%" {
		t.Fatalf("without statistics the index must look up the whole query: got %q, %v", got, err)
	}
	// One person analysed: statistics without a histogram.
	if _, err := store.CreatePerson(ctx, domain.Person{ID: "person_one", TenantID: "acme", Name: "Only One",
		CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE persons"); err != nil {
		t.Fatal(err)
	}
	if got, err := store.IndexPattern(ctx, "only one"); err != nil || got != "%only one%" {
		t.Fatalf("with statistics but no histogram the index must look up the whole query: got %q, %v", got, err)
	}
	if _, err := pool.Exec(ctx, "DELETE FROM persons"); err != nil {
		t.Fatal(err)
	}
	fill(t, pool, "acme", 100000, 5000, "i")
	if got, err := cached.IndexPattern(ctx, "user4242@"); err != nil || got != "%user4242@%" {
		t.Errorf("a Store must keep the sampled search texts it read for a minute: got %q, %v", got, err)
	}
	for _, tc := range []struct {
		query, lookup string
		matches       int64
	}{
		{"USER4242@", "%er4242@%", 1},
		{"company12.example", "%ny12.e%", 20}, // ".ex" of ".example" is common too
		{"example", "%example%", -1},          // every person: nothing rarer to look up
		{"Person 4242", "%n 4242%", 11},       // persons 4242 and 42420–42429
		{"user_4%", `%user\_4\%%`, 0},         // LIKE's wildcards stay literal
		{"zzzz", "%zzzz%", 0},                 // no common trigram
	} {
		lookup, err := store.IndexPattern(ctx, domain.SearchKey(tc.query))
		if err != nil {
			t.Fatal(err)
		}
		if lookup != tc.lookup {
			t.Errorf("query %q: the index looks up %q, want %q", tc.query, lookup, tc.lookup)
		}
		_, total, err := store.SearchPersons(ctx, "acme", tc.query, "", 21)
		switch {
		case err != nil:
			t.Fatalf("query %q: %v", tc.query, err)
		case tc.matches < 0 && total != nil:
			t.Errorf("query %q: want more matches than the cap (total null), got %d", tc.query, *total)
		case tc.matches >= 0 && (total == nil || *total != tc.matches):
			t.Errorf("query %q: want %d matches, got %v", tc.query, tc.matches, total)
		}
	}
	plan := explain(t, pool, adapters.SearchSQL, "acme", adapters.LikePattern("user4242@"), "", 21, domain.CountCap+1, "%er4242@%")
	// The matches are collected first (CTE matches, before CTE counted in the plan).
	collect, _, _ := strings.Cut(plan, "CTE counted")
	if !strings.Contains(collect, `Index Cond: (search_text ~~ '%er4242@%'::text)`) || strings.Contains(collect, `Index Cond: (search_text ~~ '%user4242@%'`) {
		t.Errorf("the matches must be collected by looking up the narrower pattern only:\n%s", plan)
	}
}
