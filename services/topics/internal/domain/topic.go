// Package domain holds the topics context's types and rules, free of transport and
// storage concerns.
package domain

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/customerapi/platform/libs/errkind"
)

// MaxEntriesPerTopic is how many entries a topic holds (a rule about state, which the
// document states in words; the bounds of the fields are the document's own).
const MaxEntriesPerTopic = 100

// MaxTopicBytes bounds a topic's entries as the API writes them (their types and texts,
// JSON-escaped): a topic is answered whole, with every entry, so this bounds its answer.
// 100 entries of 20,000 ASCII characters take 2 MB, of control characters (each written
// as \u00XX) 12 MB: a write that would take the topic past this is refused. It is 64 KiB
// under 4 MiB, so that the whole answer, with each entry's IDs, times and field names
// (about 250 bytes an entry), the topic's own fields (a title and a purpose of at most
// 2,200 characters) and a list page's envelope, stays within 4 MiB.
const MaxTopicBytes = 4<<20 - 64<<10

// Errors of the topics, each of its kind (libs/errkind), whose message is the answer's
// detail.
var (
	ErrTopicNotFound  = errkind.NotFound.New("topic not found")
	ErrEntryNotFound  = errkind.NotFound.New("topic entry not found")
	ErrTooManyEntries = errkind.Conflict.New("the topic already has the maximum of 100 entries")
	ErrTopicTooLarge  = errkind.Conflict.New(fmt.Sprintf(
		"the topic's entries would take more than %d bytes in an answer (their text, JSON-escaped)", MaxTopicBytes))
	ErrDefaultConflict = errkind.Conflict.New("another request changed the default topic at the same time; retry")
)

// Topic is a knowledge topic with its entries.
type Topic struct {
	ID        string
	TenantID  string
	Title     string
	Purpose   *string
	SortOrder int64
	IsDefault bool
	CreatedAt time.Time
	UpdatedAt time.Time
	Entries   []Entry
}

// Content is the body of an entry.
type Content struct {
	Type string
	Text string
}

// Size is how many bytes the content takes in an answer: its type and text as JSON
// strings (what MaxTopicBytes counts).
func (c Content) Size() int { return jsonStringSize(c.Type) + jsonStringSize(c.Text) }

// jsonStringSize is the length of s encoded as a JSON string by the API's encoder
// (encoding/json without HTML escaping), quotes included, without encoding it.
func jsonStringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
			n += 2
		case r < 0x20 || r == '\u2028' || r == '\u2029' || (r == utf8.RuneError && size == 1):
			n += 6 // \u00XX, \u2028, \u2029, and \ufffd for a byte that is not UTF-8
		default:
			n += size
		}
	}
	return n
}

// Entry is one content entry of a topic.
type Entry struct {
	ID        string
	TopicID   string
	SortOrder int64
	Content   Content
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TopicPatch is a partial update; nil fields stay as they are.
type TopicPatch struct {
	Title      *string
	SetPurpose bool
	Purpose    *string // with SetPurpose: nil clears
	SortOrder  *int64
	IsDefault  *bool
}

// Apply changes t by p and reports whether anything changed.
func (t *Topic) Apply(p TopicPatch, now time.Time) bool {
	changed := false
	if p.Title != nil && *p.Title != t.Title {
		t.Title, changed = *p.Title, true
	}
	if p.SetPurpose && !equalPtr(p.Purpose, t.Purpose) {
		t.Purpose, changed = p.Purpose, true
	}
	if p.SortOrder != nil && *p.SortOrder != t.SortOrder {
		t.SortOrder, changed = *p.SortOrder, true
	}
	if p.IsDefault != nil && *p.IsDefault != t.IsDefault {
		t.IsDefault, changed = *p.IsDefault, true
	}
	if changed {
		t.UpdatedAt = now
	}
	return changed
}

// EntryPatch is a partial update of an entry.
type EntryPatch struct {
	Content   *Content
	SortOrder *int64
}

// Apply changes e by p and reports whether anything changed.
func (e *Entry) Apply(p EntryPatch, now time.Time) bool {
	changed := false
	if p.Content != nil && *p.Content != e.Content {
		e.Content, changed = *p.Content, true
	}
	if p.SortOrder != nil && *p.SortOrder != e.SortOrder {
		e.SortOrder, changed = *p.SortOrder, true
	}
	if changed {
		e.UpdatedAt = now
	}
	return changed
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
