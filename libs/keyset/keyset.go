// Package keyset holds the positions of keyset pagination, as a cursor's keys carry them
// (libs/pagination signs and scopes the cursor): the last item seen, by its ID alone or
// by a number (a sort order, a time in microseconds) and its ID. Pure: domains use it.
package keyset

import (
	"errors"
	"strconv"
	"time"
)

// ErrMalformed reports cursor keys that are not a position of the expected shape.
var ErrMalformed = errors.New("malformed position")

// Position is the last item seen of a list ordered by a number, then by ID.
type Position struct {
	Key int64
	ID  string
}

// At is the position of an item ordered by a time (kept to the microsecond).
func At(t time.Time, id string) Position { return Position{Key: t.UnixMicro(), ID: id} }

// Time reads Key as a time in microseconds (Positions made by At).
func (p Position) Time() time.Time { return time.UnixMicro(p.Key).UTC() }

// Keys renders the position for a cursor.
func (p Position) Keys() []string { return []string{strconv.FormatInt(p.Key, 10), p.ID} }

// Parse reads a position from cursor keys; nil keys mean the first page (nil, nil).
func Parse(keys []string) (*Position, error) {
	if keys == nil {
		return nil, nil
	}
	if len(keys) != 2 || keys[1] == "" {
		return nil, ErrMalformed
	}
	n, err := strconv.ParseInt(keys[0], 10, 64)
	if err != nil {
		return nil, ErrMalformed
	}
	return &Position{Key: n, ID: keys[1]}, nil
}

// ParseID reads the position of a list ordered by ID alone; nil keys mean the first page
// ("", nil).
func ParseID(keys []string) (string, error) {
	if keys == nil {
		return "", nil
	}
	if len(keys) != 1 || keys[0] == "" {
		return "", ErrMalformed
	}
	return keys[0], nil
}
