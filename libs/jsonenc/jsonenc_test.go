package jsonenc

import (
	"encoding/json"
	"testing"
)

// An answer writes '<', '>' and '&' as themselves, and Size agrees with Marshal.
func TestMarshalDoesNotEscapeHTML(t *testing.T) {
	v := map[string]any{"content": "<b>&</b>", "n": 1}
	b, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"content":"<b>&</b>","n":1}`; string(b) != want {
		t.Fatalf("Marshal = %s, want %s: '<', '>' and '&' take one byte each in an answer", b, want)
	}
	n, err := Size(v)
	if err != nil || n != len(b) {
		t.Fatalf("Size = %d (%v), want %d: the size must be the encoded length", n, err, len(b))
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil || back["content"] != "<b>&</b>" {
		t.Fatalf("the answer must decode to the same value: %v %v", back, err)
	}
}

func TestMarshalReportsUnencodableValues(t *testing.T) {
	if _, err := Marshal(func() {}); err == nil {
		t.Fatal("a value encoding/json cannot encode must be an error")
	}
	if _, err := Size(make(chan int)); err == nil {
		t.Fatal("a value encoding/json cannot encode must be an error for Size too")
	}
}
