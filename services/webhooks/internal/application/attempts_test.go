package application_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/services/webhooks/internal/application"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// A delivery's answers carry its latest 20 attempts and attemptsCount, whatever the
// attempts made, and manual retries stop at 50 attempts with a 409: retrying again and
// again must not let a tenant make its answers as large as it likes.
func TestDeliveryAttemptsAreBoundedInAnswersAndRetries(t *testing.T) {
	// 30 attempts in a cycle, a millisecond apart.
	schedule := strings.TrimSuffix(strings.Repeat("1ms,", 29), ",")
	s := start(t, map[string]string{"WEBHOOK_RETRY_SCHEDULE": schedule, "WEBHOOK_RETRY_JITTER_PERCENT": "0"}, application.Options{})
	c := client(t, s, "acme")
	rc := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int { return 503 })
	subID, _ := subscribe(t, c, rc.URL, nil)
	publish(t, s.Broker, event(t, "acme", events.TypeFormEnriched, "form_1"))

	var deliveryID string
	// failedWith waits for the delivery to fail with n attempts made, and checks its answers.
	failedWith := func(n int) {
		t.Helper()
		testwait.Eventually(t, 30*time.Second, fmt.Sprintf("the delivery to fail after %d attempts", n), func() bool {
			ds := deliveries(t, c, subID)
			if len(ds) == 0 || ds[0].Status != "failed" {
				return false
			}
			deliveryID = ds[0].DeliveryId
			return true
		})
		one := getDelivery(t, c, subID, deliveryID)
		listed := deliveries(t, c, subID)[0]
		for what, d := range map[string]apitypes.WebhookDelivery{"GET delivery": one, "GET deliveries": listed} {
			attempts := d.Attempts
			if len(attempts) != domain.ListedAttempts || d.AttemptsCount != n {
				t.Fatalf("%s: %d attempts listed, attemptsCount %v; want the latest %d and attemptsCount %d (every attempt made)",
					what, len(attempts), d.AttemptsCount, domain.ListedAttempts, n)
			}
			// The latest, oldest first: the last listed is the last the receiver got.
			first, _ := time.Parse(time.RFC3339, attempts[0].AttemptedAt)
			last, _ := time.Parse(time.RFC3339, attempts[len(attempts)-1].AttemptedAt)
			if got := rc.all(); last.Before(got[len(got)-1].at.Add(-time.Second)) || first.After(last) {
				t.Fatalf("%s: listed attempts run from %s to %s, want the latest, oldest first", what, first, last)
			}
		}
	}
	failedWith(30)
	retry := "/v0/webhook_subscriptions/" + subID + "/deliveries/" + deliveryID + "/retry"
	mustStatus(t, c.Do("POST", retry, nil), 202) // 30 attempts: below the limit
	failedWith(60)

	env := mustStatus(t, c.Do("POST", retry, nil), 409)
	if env["code"] != "CONFLICT" || !strings.Contains(env["detail"].(string), fmt.Sprintf("%d attempts", domain.RetryAttemptsLimit)) {
		t.Fatalf("a retry past %d attempts answered %v, want a 409 CONFLICT saying the limit was reached", domain.RetryAttemptsLimit, env)
	}
	time.Sleep(100 * time.Millisecond)
	if n := rc.count(); n != 60 {
		t.Fatalf("the receiver got %d requests after a refused retry, want 60", n)
	}
}
