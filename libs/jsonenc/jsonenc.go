// Package jsonenc encodes the API's JSON answers: as encoding/json does, but without
// escaping '<', '>' and '&' for HTML (each would take 6 bytes instead of 1 in an
// application/json answer no browser renders as HTML).
package jsonenc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Encoded is a value that carries its own encoding, made as Marshal would make it (a list
// page, encoded while its items were measured against the page's byte budget).
type Encoded interface {
	// EncodedJSON returns the encoding, or nil when the value has none.
	EncodedJSON() []byte
}

// Marshal returns the JSON encoding of v as the API writes it.
func Marshal(v any) ([]byte, error) {
	if e, ok := v.(Encoded); ok {
		if b := e.EncodedJSON(); b != nil {
			return b, nil
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("jsonenc: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
