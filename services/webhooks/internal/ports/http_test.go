package ports

import (
	"fmt"
	"testing"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/events"
)

// The document judges the events of both bodies (WebhookEventType): its enumeration is
// exactly the public event types, those the service delivers.
func TestDocumentListsThePublicEventTypes(t *testing.T) {
	s, err := apitest.StrictSchema("WebhookEventType")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(s.Enum), fmt.Sprint(events.PublicTypes); got != want {
		t.Errorf("WebhookEventType enumerates %s, want %s", got, want)
	}
}
