package ids

import (
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/gofrs/uuid/v5"
)

func TestNewShapeAndOrder(t *testing.T) {
	re := regexp.MustCompile(`^account_[a-z0-9]{26}$`)
	var got []string
	for i := 0; i < 100000; i++ {
		id := New("account")
		if !re.MatchString(id) {
			t.Fatalf("id %q does not match the spec's account ID pattern", id)
		}
		got = append(got, id)
	}
	if !Valid("account", got[0]) {
		t.Fatalf("Valid(%q) = false", got[0])
	}
	if !sort.StringsAreSorted(got) {
		t.Fatal("IDs made in sequence by one process are not in creation order")
	}
}

func TestGeneratorIsV7AndMonotonicAcrossOverflow(t *testing.T) {
	fixed := time.UnixMilli(1_700_000_000_000)
	g := &generator{now: func() time.Time { return fixed }, rand: func(b []byte) {
		for i := range b {
			b[i] = 0xff // the highest random start: the counter overflows at once
		}
	}}
	prev := g.next()
	for i := 0; i < 5; i++ {
		u := g.next()
		id := uuid.UUID(u)
		if id.Version() != 7 || id.Variant() != uuid.VariantRFC9562 {
			t.Fatalf("version %d variant %d", id.Version(), id.Variant())
		}
		if string(u[:]) <= string(prev[:]) {
			t.Fatalf("%x does not follow %x", u, prev)
		}
		prev = u
	}
	// A clock that steps back never makes an ID sort before an earlier one.
	back := fixed.Add(-time.Second)
	g.now = func() time.Time { return back }
	if u := g.next(); string(u[:]) <= string(prev[:]) {
		t.Fatal("clock step back broke the order")
	}
}

func TestValid(t *testing.T) {
	good := New("topic")
	for _, tc := range []struct {
		prefix, id string
		want       bool
	}{
		{"topic", good, true},
		{"page", good, false},
		{"topic", good + "x", false},
		{"topic", "topic_" + "zzzzzzzzzzzzzzzzzzzzzzzzzz", false}, // first char must be 0-7
		{"topic", "topic_01H455VB4PEX5VSKNK084SN02Q", false},      // uppercase
		{"topic", "", false},
		{"topic", "topic_", false},
	} {
		if got := Valid(tc.prefix, tc.id); got != tc.want {
			t.Errorf("Valid(%q, %q) = %v, want %v", tc.prefix, tc.id, got, tc.want)
		}
	}
}
