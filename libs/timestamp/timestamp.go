// Package timestamp renders and parses the API's timestamps: UTC RFC 3339 with
// millisecond precision and a trailing Z.
package timestamp

import (
	"strings"
	"time"
)

// Layout is the API's timestamp layout.
const Layout = "2006-01-02T15:04:05.000Z"

// Format renders t in the API's layout.
func Format(t time.Time) string { return t.UTC().Format(Layout) }

// FormatPtr renders t, or returns nil for a nil t (a nullable timestamp).
func FormatPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := Format(*t)
	return &s
}

// Parse reads an RFC 3339 date-time (any offset, optional fraction). A bare date
// (YYYY-MM-DD) is accepted as midnight UTC.
func Parse(s string) (time.Time, error) {
	if len(s) == len("2006-01-02") && !strings.Contains(s, "T") {
		return time.Parse("2006-01-02", s)
	}
	return time.Parse(time.RFC3339Nano, s)
}

// Truncate drops precision below a millisecond, so a stored value equals what the API
// shows; PostgreSQL keeps microseconds.
func Truncate(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// Clock tells a use case the time; nil is the system clock. A test sets its own.
type Clock func() time.Time

// Now is the clock's time truncated to the API's millisecond precision (Truncate).
func (c Clock) Now() time.Time {
	if c == nil {
		return Truncate(time.Now())
	}
	return Truncate(c())
}
