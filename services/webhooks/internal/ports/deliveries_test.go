package ports

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// A retry the attempts limit refuses is the spec's 409 CONFLICT, and its message says why.
func TestRetryPastTheAttemptsLimitIsAConflict(t *testing.T) {
	e := apierror.From(fmt.Errorf("retry delivery: %w", domain.ErrRetryLimit))
	if e == nil || e.Status != http.StatusConflict || e.Code != apierror.CodeConflict {
		t.Fatalf("a retry past the attempts limit maps to %v, want 409 CONFLICT", e)
	}
	if !strings.Contains(e.Detail, strconv.Itoa(domain.RetryAttemptsLimit)+" attempts") || !strings.Contains(e.Detail, "retr") {
		t.Errorf("the 409's message %q must say the delivery reached the limit of %d attempts for a retry", e.Detail, domain.RetryAttemptsLimit)
	}
}

// A delivery's answer says how many attempts were made, so that a client knows when the
// attempts listed (the latest) are not all of them.
func TestDeliveryAnswerCountsEveryAttempt(t *testing.T) {
	d := domain.Delivery{ID: "delivery_1", Status: domain.StatusFailed, AttemptsCount: 60,
		Attempts: make([]domain.Attempt, domain.ListedAttempts)}
	b, err := json.Marshal(viewDelivery(d))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Attempts      []json.RawMessage `json:"attempts"`
		AttemptsCount *int              `json:"attemptsCount"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.AttemptsCount == nil || *got.AttemptsCount != 60 || len(got.Attempts) != domain.ListedAttempts {
		t.Errorf("the answer lists %d attempts with attemptsCount %v, want %d listed and attemptsCount 60 (every attempt made)",
			len(got.Attempts), got.AttemptsCount, domain.ListedAttempts)
	}
}
