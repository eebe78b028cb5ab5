package domain

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/events"
)

func TestRetryPolicyNext(t *testing.T) {
	p := RetryPolicy{Schedule: DefaultSchedule, Jitter: 0.2, RetryAfterMin: time.Second, RetryAfterMax: time.Hour}
	var total time.Duration
	for step, want := range DefaultSchedule {
		lo, ok1 := p.Next(step, 0, 0)
		hi, ok2 := p.Next(step, 0, 0.999999)
		mid, _ := p.Next(step, 0, 0.5)
		if !ok1 || !ok2 || mid != want || lo < want*8/10 || hi > want*12/10 || hi < want*119/100 {
			t.Errorf("step %d: %s..%s around %s", step, lo, hi, mid)
		}
		total += want
	}
	if total < 27*time.Hour || total > 28*time.Hour {
		t.Errorf("default schedule spans %s, want about a day", total)
	}
	if _, ok := p.Next(len(DefaultSchedule), 0, 0.5); ok {
		t.Error("a retry after the last step")
	}
	if _, ok := p.Next(-1, 0, 0.5); ok {
		t.Error("a negative step")
	}
	for ra, want := range map[time.Duration]time.Duration{
		30 * time.Second:        30 * time.Second,
		10 * time.Millisecond:   time.Second, // raised to the minimum
		48 * time.Hour:          time.Hour,   // capped
		time.Hour + time.Minute: time.Hour,
	} {
		if got, ok := p.Next(0, ra, 0.9); !ok || got != want {
			t.Errorf("Retry-After %s: %s, want %s", ra, got, want)
		}
	}
	// Retry-After never extends the number of attempts.
	if _, ok := p.Next(len(DefaultSchedule), time.Minute, 0.5); ok {
		t.Error("Retry-After after the last step")
	}
}

func TestSubscriptionApply(t *testing.T) {
	now := time.Now()
	url := "https://a.example.com"
	s := Subscription{URL: url, Events: []string{events.TypeFormSubmitted}, Active: true, UpdatedAt: now.Add(-time.Hour)}
	if s.Apply(Patch{URL: &url, SetEvents: true, Events: []string{events.TypeFormSubmitted}}, now) {
		t.Fatal("an idempotent patch reports a change")
	}
	if !s.Apply(Patch{SetEvents: true, Events: nil}, now) || s.Events != nil || !s.UpdatedAt.Equal(now) {
		t.Fatalf("events null: %+v", s)
	}
	reason := ReasonGone
	s.Active, s.DisabledReason, s.DisabledAt = false, &reason, &now
	on := true
	if !s.Apply(Patch{Active: &on}, now) || !s.Active || s.DisabledReason != nil || s.DisabledAt != nil {
		t.Fatalf("re-activated: %+v", s)
	}
}

func TestRotateKeepsThePreviousSecretForTheGracePeriod(t *testing.T) {
	now := time.Now()
	s := Subscription{Secret: "whsec_old"}
	s.Rotate("whsec_new", now)
	if s.Secret != "whsec_new" || *s.PreviousSecret != "whsec_old" || !s.PreviousSecretUntil.Equal(now.Add(24*time.Hour)) {
		t.Fatalf("rotated: %+v", s)
	}
	s.Rotate("whsec_newer", now)
	if *s.PreviousSecret != "whsec_new" {
		t.Fatalf("second rotation keeps %s", *s.PreviousSecret)
	}
}

func TestNewBody(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC)
	e := events.Envelope{ID: "evt_1", Type: events.TypeFormEnriched, OccurredAt: at,
		Payload: json.RawMessage(`{"type":"form.enriched", "personId":"person_1"}`)}
	b, err := NewBody(e)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"timestamp":"2026-01-02T03:04:05.678Z","eventId":"evt_1","payload":{"type":"form.enriched","personId":"person_1"}}` {
		t.Fatalf("body %s", b)
	}
	for _, p := range []string{`[]`, `"x"`, `{}`, `{"type":5}`, `{"type":"form.submitted"}`, `null`} {
		e.Payload = json.RawMessage(p)
		if _, err := NewBody(e); !errors.Is(err, ErrBadPayload) {
			t.Errorf("payload %s: %v", p, err)
		}
		if _, err := NewTestBody(e); !errors.Is(err, ErrBadPayload) {
			t.Errorf("test event, payload %s: %v", p, err)
		}
	}
}

// A test event's body says so in a field of its own, signed with the rest; a real
// event's body has no such field.
func TestNewTestBodyIsMarked(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC)
	e := events.Envelope{ID: "evt_1", Type: events.TypeFormEnriched, OccurredAt: at,
		Payload: json.RawMessage(`{"type":"form.enriched"}`)}
	b, err := NewTestBody(e)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"timestamp":"2026-01-02T03:04:05.678Z","eventId":"evt_1","test":true,"payload":{"type":"form.enriched"}}` {
		t.Fatalf("test event body %s; want \"test\":true after eventId", b)
	}
	if b, _ := NewBody(e); strings.Contains(string(b), `"test"`) {
		t.Fatalf("a real event's body %s carries the test marker", b)
	}
}
