package domain

import (
	"errors"
	"strconv"
)

// After is a keyset position: the sortOrder and ID of the last item seen.
type After struct {
	SortOrder int64
	ID        string
}

// Keys renders a position for a cursor.
func (a After) Keys() []string { return []string{strconv.FormatInt(a.SortOrder, 10), a.ID} }

// ParseAfter reads a position from cursor keys; nil keys mean the first page.
func ParseAfter(keys []string) (*After, error) {
	if keys == nil {
		return nil, nil
	}
	if len(keys) != 2 {
		return nil, errors.New("malformed position")
	}
	n, err := strconv.ParseInt(keys[0], 10, 64)
	if err != nil {
		return nil, errors.New("malformed position")
	}
	return &After{SortOrder: n, ID: keys[1]}, nil
}
