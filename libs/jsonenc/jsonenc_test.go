package jsonenc

import (
	"encoding/json"
	"testing"
)

// An answer writes '<', '>' and '&' as themselves.
func TestMarshalDoesNotEscapeHTML(t *testing.T) {
	v := map[string]any{"content": "<b>&</b>", "n": 1}
	b, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"content":"<b>&</b>","n":1}`; string(b) != want {
		t.Fatalf("Marshal = %s, want %s: '<', '>' and '&' take one byte each in an answer", b, want)
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
}

type encoded []byte

func (e encoded) EncodedJSON() []byte { return e }

// A value that carries its encoding is written as it is; without one it is encoded.
func TestMarshalWritesAnEncodedValueAsItIs(t *testing.T) {
	if b, err := Marshal(encoded(`{"made":"before"}`)); err != nil || string(b) != `{"made":"before"}` {
		t.Fatalf("Marshal = %s, %v: a value's own encoding must be written as it is", b, err)
	}
	if b, err := Marshal(encoded(nil)); err != nil || string(b) != "null" {
		t.Fatalf("Marshal = %s, %v: a value without its encoding must be encoded", b, err)
	}
}
