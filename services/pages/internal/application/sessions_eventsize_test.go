package application_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/libs/service/servicetest"
)

// The observed attack: a form field of 200,000 '<' is a 200 kB body, but form.submitted
// escapes each '<' as \u003c, so its event was 1.2 MB, over what the producer sends; the
// relay retried that batch forever and no later event of any tenant left the service. The
// request must be refused with 400, store nothing, and events recorded after it must flow.
func TestOversizedFormSubmissionIsRefusedAndLaterEventsFlow(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID, audiences := seedPage(t, s.Runtime.Pool, "acme", 1)
	sessions := "/v0/pages/" + pageID + "/audience_sessions"
	// Raw: a JSON encoder of the test's own would escape the '<' and send 1.2 MB, over the
	// body limit, where the attack sends 200 kB.
	attack := apitest.Raw(`{"analyticsSessionId": "attack", "audienceId": "` + audiences[0] + `",
		"sessionStartedAt": "2026-11-20T10:00:00Z",
		"formSubmission": {"email": "a@example.com", "fields": {"message": "` + strings.Repeat("<", 200_000) + `"}}}`)
	refused(t, s, c.Do("POST", sessions, attack), []any{"formSubmission", "fields"})

	recordAndReadEvent(t, s, sessions, audiences[0], "next")
}

// Whatever the request's own bounds allow, a change whose event would exceed the
// producer's limit (KAFKA_MAX_MESSAGE_BYTES, lowered here to 20,000 bytes) is refused as a
// whole by the outbox's write-time check, and later events flow.
func TestSessionWhoseEventExceedsTheKafkaLimitIsRefused(t *testing.T) {
	s := start(t, servicetest.Options{Configure: func(c *service.Config) { c.Kafka.MaxMessageBytes = 20_000 }})
	c := client(t, s, "acme")
	pageID, audiences := seedPage(t, s.Runtime.Pool, "acme", 1)
	sessions := "/v0/pages/" + pageID + "/audience_sessions"
	large := map[string]any{"analyticsSessionId": "large", "audienceId": audiences[0], "sessionStartedAt": "2026-11-20T10:00:00Z",
		"formSubmission": map[string]any{"email": "a@example.com", "fields": map[string]any{"message": strings.Repeat("a", 30_000)}}}
	r := c.Do("POST", sessions, large)
	refused(t, s, r, []any{})
	if d := r.Map()["detail"].(string); !strings.Contains(d, "form.submitted") || !strings.Contains(d, "20000") {
		t.Fatalf("detail %q must name the event and the limit", d)
	}
	recordAndReadEvent(t, s, sessions, audiences[0], "next")
}

// refused checks that an oversized request got 400 VALIDATION_ERROR on the given body
// path and left no session and no outbox row behind.
func refused(t *testing.T, s *servicetest.Service, r *apitest.Response, path []any) {
	t.Helper()
	apitest.ExpectError(t, r, 400, "VALIDATION_ERROR", "an oversized form submission must be refused")
	// The first issue, "field:code:path".
	if issues := apitest.IssueCodes(r); len(issues) == 0 || !strings.HasSuffix(issues[0], ":too_big:"+fmt.Sprint(path)) {
		t.Fatalf("issues = %v, want too_big at %v first", issues, path)
	}
	if n := count(t, s.Runtime.Pool, "SELECT count(*) FROM audience_sessions"); n != 0 {
		t.Fatalf("a refused request stored %d sessions: nothing may be written", n)
	}
	if n := count(t, s.Runtime.Pool, "SELECT count(*) FROM outbox"); n != 0 {
		t.Fatalf("a refused request left %d outbox rows: nothing may be written", n)
	}
}

// recordAndReadEvent records a session with a small form submission and checks that its
// form.submitted is the first event of the audience to reach Kafka.
func recordAndReadEvent(t *testing.T, s *servicetest.Service, sessions, audienceID, analyticsID string) {
	t.Helper()
	c := client(t, s, "acme")
	created := mustStatus(t, c.Do("POST", sessions, map[string]any{"analyticsSessionId": analyticsID, "audienceId": audienceID,
		"sessionStartedAt": "2026-11-20T10:00:00Z", "formSubmission": map[string]any{"email": "b@example.com"}}), 201)
	evts := readPagesEvents(t, s.Broker.Config().Brokers, audienceID, 1)
	var p map[string]any
	if evts[0].Type != events.TypeFormSubmitted || json.Unmarshal(evts[0].Payload, &p) != nil ||
		p["audienceSessionId"] != created["audienceSessionId"] {
		t.Fatalf("first event of the audience = %+v, want the form.submitted of %v", evts[0], created["audienceSessionId"])
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
