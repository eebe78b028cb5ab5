package domain

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/customerapi/platform/libs/jsonenc"
)

// A content's size is exactly what the API's encoder writes for its type and text, for
// every kind of character: the rule that bounds a topic's answer counts what is sent.
func TestContentSizeIsTheEncodedSize(t *testing.T) {
	pieces := []string{"a", "é", "語", "😀", "<", "&", "\"", "\\", "\n", "\t", "\b", "\f", "\x01", "\x1f", "\x7f",
		"\u2028", "\u2029", "\ufffd", "\xff", "\xe2\x82", " "}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []string{"", strings.Repeat("<", 20000), strings.Repeat("\x01", 20000)}
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		cases = append(cases, b.String())
	}
	for _, text := range cases {
		c := Content{Type: "markdown", Text: text}
		typ, _ := jsonenc.Marshal(c.Type)
		txt, _ := jsonenc.Marshal(c.Text)
		if got, want := c.Size(), len(typ)+len(txt); got != want {
			t.Fatalf("Size of %q = %d, want %d (the encoder's length): MaxTopicBytes must count what an answer holds", text, got, want)
		}
	}
}
