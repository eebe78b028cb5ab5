package ports

import (
	"reflect"
	"strings"
	"testing"

	"github.com/customerapi/platform/libs/events"
)

// The events rule of both bodies names exactly the public event types.
func TestEventsRuleListsThePublicTypes(t *testing.T) {
	want := "oneof=" + strings.Join(events.PublicTypes, " ")
	for _, v := range []any{subscriptionCreate{}, subscriptionUpdate{}} {
		f, _ := reflect.TypeOf(v).FieldByName("Events")
		if tag := f.Tag.Get("validate"); !strings.HasSuffix(tag, want) {
			t.Errorf("%T events rule %q, want it to end in %q", v, tag, want)
		}
	}
}
