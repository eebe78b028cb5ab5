package pagination

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/jsonenc"
	"github.com/customerapi/platform/libs/request"
)

func codec(t *testing.T, secret string) *Codec {
	t.Helper()
	c, err := NewCodec([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// parse runs Codec.Parse against a real Fiber request with the given query string.
func parse(t *testing.T, c *Codec, scope, rawQuery string) (Params, []apierror.Issue) {
	t.Helper()
	app := fiber.New()
	var p Params
	var issues []apierror.Issue
	app.Get("/", func(ctx *fiber.Ctx) error {
		q := request.NewQuery(ctx)
		CheckLimit(q)
		p = c.Parse(q, scope)
		issues = q.Issues()
		return nil
	})
	if _, err := app.Test(httptest.NewRequest("GET", "/?"+rawQuery, nil)); err != nil {
		t.Fatal(err)
	}
	return p, issues
}

// The admin API's limit rules (CheckLimit); /v0 lists have the same rules from the
// OpenAPI document, which e2e's document-driven negative test exercises.
func TestLimitRules(t *testing.T) {
	c := codec(t, "0123456789abcdef")
	for _, tc := range []struct {
		query string
		limit int
		code  string
	}{
		{"", 20, ""},
		{"limit=1", 1, ""},
		{"limit=100", 100, ""},
		{"limit=0", 0, "too_small"},
		{"limit=-5", 0, "too_small"},
		{"limit=101", 0, "too_big"},
		{"limit=abc", 0, "invalid_type"},
		{"limit=", 0, "invalid_type"},
		{"limit=1.5", 0, "invalid_type"},
		{"limit=5&limit=6", 0, "invalid_type"},
	} {
		p, issues := parse(t, c, "s", tc.query)
		if tc.code == "" {
			if len(issues) != 0 || p.Limit != tc.limit {
				t.Errorf("%q: limit=%d issues=%+v", tc.query, p.Limit, issues)
			}
			continue
		}
		if len(issues) != 1 || issues[0].Code != tc.code || issues[0].Path[0] != "limit" {
			t.Errorf("%q: issues=%+v, want one %s on limit", tc.query, issues, tc.code)
		}
	}
}

// Parse alone never passes SQL a limit outside 1..MaxLimit, whatever reached it.
func TestParseBoundsTheLimit(t *testing.T) {
	c := codec(t, "0123456789abcdef")
	app := fiber.New()
	var got []int
	app.Get("/", func(ctx *fiber.Ctx) error {
		got = append(got, c.Parse(request.NewQuery(ctx), "s").Limit)
		return nil
	})
	for _, tc := range []struct {
		query string
		limit int
	}{{"limit=0", 1}, {"limit=-5", 1}, {"limit=101", MaxLimit}, {"limit=abc", DefaultLimit}, {"limit=7", 7}} {
		got = nil
		if _, err := app.Test(httptest.NewRequest("GET", "/?"+tc.query, nil)); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != tc.limit {
			t.Errorf("%q: Parse gave limit %v, want %d (the limit passed to SQL stays within 1..%d)", tc.query, got, tc.limit, MaxLimit)
		}
	}
}

func TestCursorRoundTripAndRefusals(t *testing.T) {
	c := codec(t, "0123456789abcdef")
	scope := Scope("topics", "tenant-a")
	cur := c.Encode(scope, []string{"5", "topic_01"})

	p, issues := parse(t, c, scope, "cursor="+cur)
	if len(issues) != 0 || len(p.After) != 2 || p.After[0] != "5" || p.After[1] != "topic_01" {
		t.Fatalf("round trip: %+v %+v", p, issues)
	}

	body, sig, _ := strings.Cut(cur, ".")
	tampered := body[:len(body)-2] + "AA." + sig
	for name, tc := range map[string]struct{ scope, cursor string }{
		"tampered body":      {scope, tampered},
		"tampered signature": {scope, body + "." + strings.Repeat("A", len(sig))},
		"no signature":       {scope, body},
		"garbage":            {scope, "%%%"},
		"other tenant":       {Scope("topics", "tenant-b"), cur},
		"other list":         {Scope("entries", "tenant-a"), cur},
		"other secret":       {scope, codec(t, "fedcba9876543210").Encode(scope, []string{"1"})},
	} {
		_, issues := parse(t, c, tc.scope, "cursor="+tc.cursor)
		if len(issues) != 1 || issues[0].Code != "invalid_cursor" {
			t.Errorf("%s: issues = %+v, want invalid_cursor", name, issues)
		}
	}
}

func TestBuild(t *testing.T) {
	c := codec(t, "0123456789abcdef")
	p := Params{Limit: 2, scope: "s"}
	key := func(s string) []string { return []string{s} }

	page := Build(c, p, []string{"a", "b", "c"}, Count(3), key)
	if len(page.Items) != 2 || !page.HasMore || page.NextCursor == nil {
		t.Fatalf("page = %+v", page)
	}
	next, issues := parse(t, c, "s", "cursor="+*page.NextCursor)
	if len(issues) != 0 || next.After[0] != "b" {
		t.Fatalf("cursor continues after %v (%+v)", next.After, issues)
	}

	last := Build(c, p, []string{"c"}, Count(3), key)
	if last.HasMore || last.NextCursor != nil || len(last.Items) != 1 {
		t.Fatalf("last page = %+v", last)
	}
	empty := Build[string](c, p, nil, Count(0), key)
	if empty.Items == nil || empty.HasMore || empty.NextCursor != nil {
		t.Fatalf("empty page = %+v", empty)
	}
}

func TestNewCodecRejectsShortSecret(t *testing.T) {
	if _, err := NewCodec([]byte("short")); err == nil {
		t.Fatal("want error")
	}
}

// A page stops before the item that would take its items past MaxPageBytes (always
// keeping one), says hasMore and continues right after its last item.
func TestBuildStopsAtTheByteBudget(t *testing.T) {
	c := codec(t, "0123456789abcdef")
	p := Params{Limit: 100, scope: "s"}
	key := func(s string) []string { return []string{s[:1]} }
	item := func(id string, size int) string { return id + strings.Repeat("<", size) }
	// Three items of 400 KiB: two fit in 1 MiB, the third would not.
	rows := []string{item("a", 400<<10), item("b", 400<<10), item("c", 400<<10)}
	page := Build(c, p, rows, Count(3), key)
	if len(page.Items) != 2 || !page.HasMore || page.NextCursor == nil {
		t.Fatalf("a page of three 400 KiB items must stop after two (the budget is %d bytes), with hasMore and a cursor; got %d items, hasMore %v",
			MaxPageBytes, len(page.Items), page.HasMore)
	}
	next, issues := parse(t, c, "s", "cursor="+*page.NextCursor)
	if len(issues) != 0 || next.After[0] != "b" {
		t.Fatalf("the cursor of a page cut by its budget must continue after its last item (b); got %v (%+v)", next.After, issues)
	}
	// One item over the budget alone is still a page of one.
	huge := Build(c, p, []string{item("x", 2<<20), item("y", 1)}, Count(2), key)
	if len(huge.Items) != 1 || !huge.HasMore || huge.NextCursor == nil {
		t.Fatalf("an item larger than the budget must make a page of one with hasMore; got %d items, hasMore %v", len(huge.Items), huge.HasMore)
	}
	// Without a further row, a page cut by the budget still says hasMore.
	if cut := Build(c, p, rows[:3], Count(3), key); !cut.HasMore {
		t.Fatal("a page cut by its budget must say hasMore even when the rows fetched end there")
	}
	// Small items: the limit alone decides.
	small := Build(c, Params{Limit: 2, scope: "s"}, []string{"a", "b"}, Count(2), key)
	if len(small.Items) != 2 || small.HasMore {
		t.Fatalf("a page within its budget and limit must hold every row and no cursor; got %+v", small)
	}
}

// The encoding a page keeps from Build is the page's own JSON, as an answer writes it
// (jsonenc: no HTML escaping): the items kept, the count, hasMore and the cursor.
func TestBuildKeepsThePagesOwnEncoding(t *testing.T) {
	c := codec(t, "0123456789abcdef")
	key := func(s string) []string { return []string{s[:1]} }
	big := "b" + strings.Repeat("<", 600<<10)
	for name, page := range map[string]Page[string]{
		"cut by the limit":  Build(c, Params{Limit: 2, scope: "s"}, []string{"a<&>", "b\u2028", "c"}, Count(3), key),
		"cut by the budget": Build(c, Params{Limit: 100, scope: "s"}, []string{big, big, big}, nil, key),
		"last":              Build(c, Params{Limit: 2, scope: "s"}, []string{"c"}, Count(3), key),
		"empty":             Build[string](c, Params{Limit: 2, scope: "s"}, nil, Count(0), key),
	} {
		got := page.EncodedJSON()
		page.encoded = nil
		want, err := jsonenc.Marshal(page)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the kept encoding differs from the page's JSON:\n got %.200s\nwant %.200s", name, got, want)
		}
	}
	unencodable := Build(c, Params{Limit: 2, scope: "s"}, []any{func() {}}, nil, func(any) []string { return []string{"x"} })
	if unencodable.EncodedJSON() != nil {
		t.Fatal("a page whose item cannot be encoded must keep no encoding, so that encoding it reports the error")
	}
}

func TestMapRendersEveryRowInOrder(t *testing.T) {
	if got := Map([]int{1, 2, 3}, func(n int) string { return strings.Repeat("x", n) }); strings.Join(got, ",") != "x,xx,xxx" {
		t.Fatalf("Map = %v, want every row rendered in order", got)
	}
	if got := Map([]int(nil), func(int) string { return "" }); got == nil || len(got) != 0 {
		t.Fatalf("Map of no rows = %#v, want [] (an answer's items are never null)", got)
	}
}
