package ids

import (
	"regexp"
	"sort"
	"testing"
)

func TestNewShapeAndOrder(t *testing.T) {
	re := regexp.MustCompile(`^account_[a-z0-9]{26}$`)
	var got []string
	for i := 0; i < 1000; i++ {
		id := New("account")
		if !re.MatchString(id) {
			t.Fatalf("id %q does not match the spec's account ID pattern", id)
		}
		if !Valid("account", id) {
			t.Fatalf("Valid(%q) = false", id)
		}
		got = append(got, id)
	}
	if !sort.StringsAreSorted(got) {
		t.Fatal("IDs made in sequence by one process are not in creation order")
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

func TestFallbackIsV7(t *testing.T) {
	u := fallbackV7()
	if u.Version() != 7 {
		t.Fatalf("version = %d", u.Version())
	}
}
