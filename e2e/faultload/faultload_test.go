package faultload

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
)

func TestMissingCountsEachAcknowledgedSubmissionsTwoEvents(t *testing.T) {
	acked := map[string]bool{"a@x": true, "b@x": true, "c@x": true}
	ds := []Delivery{
		{EventID: "1", Payload: map[string]any{"type": "form.submitted", "email": "a@x", "formSubmissionId": "fa"}},
		{EventID: "1", Payload: map[string]any{"type": "form.submitted", "email": "a@x", "formSubmissionId": "fa"}}, // a redelivery
		{EventID: "2", Payload: map[string]any{"type": "form.enriched", "formSubmissionId": "fa"}},
		{EventID: "3", Payload: map[string]any{"type": "form.submitted", "email": "b@x", "formSubmissionId": "fb"}},
		// Not acknowledged: it does not make up for anything.
		{EventID: "4", Payload: map[string]any{"type": "form.submitted", "email": "z@x", "formSubmissionId": "fz"}},
		{EventID: "5", Payload: map[string]any{"type": "form.enriched", "formSubmissionId": "fz"}},
	}
	noSub, noEnr, state := Missing(acked, ds)
	if noSub != 1 || noEnr != 1 {
		t.Fatalf("Missing = %d without form.submitted, %d without form.enriched (%s); want 1 and 1", noSub, noEnr, state)
	}
	if !strings.HasPrefix(state, "5 distinct events received") {
		t.Fatalf("state %q", state)
	}
	ds = append(ds,
		Delivery{EventID: "6", Payload: map[string]any{"type": "form.enriched", "formSubmissionId": "fb"}},
		Delivery{EventID: "7", Payload: map[string]any{"type": "form.submitted", "email": "c@x", "formSubmissionId": "fc"}},
		Delivery{EventID: "8", Payload: map[string]any{"type": "form.enriched", "formSubmissionId": "fc"}})
	if noSub, noEnr, state = Missing(acked, ds); noSub != 0 || noEnr != 0 {
		t.Fatalf("all delivered: Missing = %d, %d (%s)", noSub, noEnr, state)
	}
}

// A fake gateway that acknowledges, then answers 503 for a while, then a 500 once: the
// writers record each, time the failures and CheckAnswers refuses the 500.
func TestWritersRecordEveryAnswer(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			AudienceID     string `json:"audienceId"`
			FormSubmission struct {
				Email string `json:"email"`
			} `json:"formSubmission"`
		}
		if r.Method != "POST" || r.URL.Path != "/v0/pages/p1/audience_sessions" ||
			json.NewDecoder(r.Body).Decode(&body) != nil || body.AudienceID != "a1" || body.FormSubmission.Email == "" {
			http.Error(w, "unexpected request", 400)
			return
		}
		switch i := n.Add(1); {
		case i <= 3:
			w.WriteHeader(201)
		case i <= 6:
			w.WriteHeader(503)
		case i == 7:
			w.WriteHeader(500)
		default:
			w.WriteHeader(201)
		}
	}))
	defer srv.Close()
	c := &apitest.Client{T: t, Base: srv.URL}
	w := Start(c, "p1", "a1", 2)
	deadline := time.Now().Add(10 * time.Second)
	for n.Load() < 10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	w.Stop()
	w.Stop() // a second Stop is harmless
	r := w.Result()
	if r.Writes < 10 || r.Statuses[503] != 3 || r.Statuses[500] != 1 || r.Failed != 4 || len(r.Bad) != 1 ||
		len(r.Acked) != r.Statuses[201] || r.Writes != r.Statuses[201]+4 {
		t.Fatalf("result %+v", r)
	}
	if r.FirstFailure.IsZero() || r.LastFailure.Before(r.FirstFailure) {
		t.Fatalf("failures from %v to %v", r.FirstFailure, r.LastFailure)
	}
	rec := &recorder{}
	CheckAnswers(rec, r, 1)
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "never a 500") || rec.fatal != "" {
		t.Fatalf("CheckAnswers: errors %q, fatal %q", rec.errors, rec.fatal)
	}
	rec = &recorder{}
	CheckAnswers(rec, Result{Acked: map[string]bool{"a": true}}, 20)
	if !strings.Contains(rec.fatal, "proves nothing") {
		t.Fatalf("CheckAnswers with 1 acknowledged of 20 needed: fatal %q", rec.fatal)
	}
}

func TestListenUsesTheReceiverHost(t *testing.T) {
	t.Setenv(ReceiverHostEnv, "127.0.0.2")
	l, err := Listen()
	if err != nil {
		t.Skipf("127.0.0.2 is not usable here: %v", err)
	}
	defer l.Close()
	if !strings.HasPrefix(l.Addr().String(), "127.0.0.2:") {
		t.Fatalf("listening on %s", l.Addr())
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
	fatal  string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = sprintf(format, args...) }

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
