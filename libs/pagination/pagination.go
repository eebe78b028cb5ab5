// Package pagination implements the API's keyset pagination: the limit rules, opaque
// tamper-evident cursors bound to the list that made them, and the list envelope.
package pagination

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/customerapi/platform/libs/request"
)

// Limit rules of the API.
const (
	DefaultLimit = 20
	MaxLimit     = 100
	// MaxPageBytes is the byte budget of a page's encoded items: a page ends before the
	// item that would take it past this, so a list answer stays near 1 MiB (one item
	// larger than that alone still makes a page).
	MaxPageBytes = 1 << 20
)

// Page is the list envelope of every collection response.
type Page[T any] struct {
	Items      []T     `json:"items"`
	TotalCount *int64  `json:"totalCount"`
	HasMore    bool    `json:"hasMore"`
	NextCursor *string `json:"nextCursor"`
	// encoded is the page as jsonenc.Marshal writes it, made by Build (nil otherwise).
	encoded []byte
}

// EncodedJSON is the page's JSON made by Build, for jsonenc.Marshal, or nil.
func (p Page[T]) EncodedJSON() []byte { return p.encoded }

// Codec signs and verifies cursors with a server-side secret.
type Codec struct {
	key []byte
}

// NewCodec returns a Codec keyed with secret (at least 16 bytes).
func NewCodec(secret []byte) (*Codec, error) {
	if len(secret) < 16 {
		return nil, errors.New("pagination: cursor secret must be at least 16 bytes")
	}
	return &Codec{key: append([]byte(nil), secret...)}, nil
}

// SecretOrRandom returns secret (CURSOR_SECRET), or when it is unset a random secret of
// this process: cursors then break across replicas and restarts, which is fine for one
// local process and why production sets it.
func SecretOrRandom(secret []byte) []byte {
	if secret != nil {
		return secret
	}
	random := make([]byte, 32)
	_, _ = rand.Read(random)
	return random
}

// Scope names one list query: the list, the tenant and every filter that shapes it.
// A cursor made for one scope is refused by any other.
func Scope(parts ...string) string { return strings.Join(parts, "\x1f") }

// Params is a parsed page request.
type Params struct {
	// Limit is the page size (1..MaxLimit).
	Limit int
	// After holds the keyset values of the last item of the previous page; nil on the
	// first page.
	After []string
	scope string
}

type payload struct {
	V int      `json:"v"`
	S string   `json:"s"` // scope digest
	K []string `json:"k"` // keyset values
}

// Parse reads `limit` and `cursor` from q for the list identified by scope, recording any
// problem with the cursor on q (so callers report all query issues together). The rules
// of `limit` are the OpenAPI document's, which judged every /v0 request before its
// handler; Parse only keeps the value it passes on to SQL within 1..MaxLimit. A list the
// document does not describe (the gateway's admin API) calls CheckLimit first.
func (c *Codec) Parse(q *request.Query, scope string) Params {
	p := Params{Limit: DefaultLimit, scope: scope}
	if raw, ok := q.Raw("limit"); ok {
		if n, err := strconv.Atoi(raw); err == nil {
			p.Limit = min(max(n, 1), MaxLimit)
		}
	}
	if raw, ok := q.Raw("cursor"); ok {
		after, err := c.decode(raw, scope)
		if err != nil {
			q.Fail("cursor", "invalid_cursor", "Invalid cursor: "+err.Error())
		} else {
			p.After = after
		}
	}
	return p
}

// CheckLimit records on q a `limit` that is not an integer from 1 to MaxLimit: the rule
// for lists outside the OpenAPI document, which states it for every /v0 list.
func CheckLimit(q *request.Query) {
	raw, ok := q.Raw("limit")
	if !ok {
		return
	}
	n, err := strconv.Atoi(raw)
	switch {
	case err != nil:
		q.Fail("limit", "invalid_type", "Expected an integer from 1 to 100, received '"+truncate(raw)+"'")
	case n < 1:
		q.Fail("limit", "too_small", "Number must be greater than or equal to 1")
	case n > MaxLimit:
		q.Fail("limit", "too_big", "Number must be less than or equal to 100")
	}
}

func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

func (c *Codec) digest(scope string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte("scope\x00" + scope))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:12])
}

func (c *Codec) sign(body string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte("cursor\x00" + body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// Encode makes the cursor that continues after an item with the given keyset values.
func (c *Codec) Encode(scope string, keys []string) string {
	b, _ := json.Marshal(payload{V: 1, S: c.digest(scope), K: keys})
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + c.sign(body)
}

func (c *Codec) decode(cursor, scope string) ([]string, error) {
	body, sig, ok := strings.Cut(cursor, ".")
	if !ok || body == "" || sig == "" {
		return nil, errors.New("malformed")
	}
	if !hmac.Equal([]byte(sig), []byte(c.sign(body))) {
		return nil, errors.New("signature does not match")
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, errors.New("malformed")
	}
	var p payload
	if err := json.Unmarshal(raw, &p); err != nil || p.V != 1 {
		return nil, errors.New("malformed")
	}
	if p.S != c.digest(scope) {
		return nil, errors.New("it belongs to another list or filter set")
	}
	return p.K, nil
}

// Build makes the envelope from rows fetched with LIMIT Limit+1: it keeps at most Limit
// items, and no more than fit in MaxPageBytes (at least one); when a further row exists
// or the budget cut the page, it sets hasMore and the cursor after the last item kept.
// keys gives the keyset values of an item. The items are encoded once, to measure them,
// and the page keeps that encoding for jsonenc.Marshal (EncodedJSON), so an answer costs
// one encoding as before the budget.
func Build[T any](c *Codec, p Params, rows []T, total *int64, keys func(T) []string) Page[T] {
	page := Page[T]{Items: rows, TotalCount: total}
	if page.Items == nil {
		page.Items = []T{}
	}
	var buf bytes.Buffer
	buf.WriteString(`{"items":[`)
	n, ok := encodeFitting(&buf, rows[:min(len(rows), p.Limit)])
	if n < len(rows) {
		page.Items = rows[:n]
		page.HasMore = true
		cur := c.Encode(p.scope, keys(page.Items[n-1]))
		page.NextCursor = &cur
	}
	if ok {
		page.encoded = finish(&buf, page.TotalCount, page.HasMore, page.NextCursor)
	}
	return page
}

// encodeFitting writes the first rows that fit in MaxPageBytes (at least one) to buf as
// the elements of a JSON array, and returns how many it wrote; ok is false when the
// encoder refused one (then encoding the page itself reports the error). The rows are
// encoded as one slice first, which costs no more than the answer's own encoding did
// before the budget; only a page over the budget is encoded again item by item.
func encodeFitting[T any](buf *bytes.Buffer, rows []T) (n int, ok bool) {
	if len(rows) == 0 {
		return 0, true
	}
	start := buf.Len()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false) // as jsonenc.Marshal writes answers
	if err := enc.Encode(rows); err != nil {
		return len(rows), false
	}
	// "[…]\n": within the budget, keep the elements without the brackets.
	if size := buf.Len() - start - 3; size <= MaxPageBytes {
		b := buf.Bytes()
		copy(b[start:], b[start+1:buf.Len()-2])
		buf.Truncate(buf.Len() - 3)
		return len(rows), true
	}
	buf.Truncate(start)
	for i, r := range rows {
		mark := buf.Len()
		if err := enc.Encode(r); err != nil {
			return len(rows), false
		}
		buf.Bytes()[buf.Len()-1] = ',' // Encode ends with a newline
		if i > 0 && buf.Len()-start > MaxPageBytes {
			buf.Truncate(mark)
			return i, true
		}
	}
	return len(rows), true
}

// finish closes the items of buf and writes the rest of the envelope, in Page's field
// order.
func finish(buf *bytes.Buffer, total *int64, hasMore bool, next *string) []byte {
	if b := buf.Bytes(); b[len(b)-1] == ',' { // the items written one by one
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteString(`],"totalCount":`)
	if total == nil {
		buf.WriteString("null")
	} else {
		buf.WriteString(strconv.FormatInt(*total, 10))
	}
	buf.WriteString(`,"hasMore":` + strconv.FormatBool(hasMore) + `,"nextCursor":`)
	if next == nil {
		buf.WriteString("null")
	} else {
		q, _ := json.Marshal(*next) // a cursor is base64url: nothing to escape
		buf.Write(q)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// Map renders each row with view: an answer's items from the domain's rows ([] for none).
func Map[T, V any](rows []T, view func(T) V) []V {
	out := make([]V, len(rows))
	for i, r := range rows {
		out[i] = view(r)
	}
	return out
}

// Count is a helper returning a pointer to n, for Page.TotalCount.
func Count(n int64) *int64 { return &n }
