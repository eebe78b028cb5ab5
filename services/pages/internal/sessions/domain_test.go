package sessions

import (
	"testing"
	"time"

	"github.com/customerapi/platform/libs/config"
)

func TestIdentify(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		f          FormSubmission
		ident, typ string
		ok         bool
	}{
		{FormSubmission{Email: s(" Ann@Example.COM "), Phone: s("+1 555 010 9999")}, "ann@example.com", IdentifierEmail, true},
		{FormSubmission{LinkedInURL: s("http://uk.linkedin.com/in/Ann-Lee/details?x=1"), Phone: s("555 0109")}, "https://www.linkedin.com/in/ann-lee", IdentifierLinkedIn, true},
		{FormSubmission{Phone: s("+1 (555) 010-9999")}, "+15550109999", IdentifierTel, true},
		{FormSubmission{Name: s("Ann")}, "", "", false},
	} {
		ident, typ, ok := Identify(tc.f)
		if ident != tc.ident || typ != tc.typ || ok != tc.ok {
			t.Errorf("%+v: got %q %q %v", tc.f, ident, typ, ok)
		}
	}
}

func TestValidators(t *testing.T) {
	for p, want := range map[string]bool{"+1 (555) 010-9999": true, "5550109": true, "555": false, "+1+2345678": false,
		"call me": false, "1234567890123456": false, "020.7946.0958": true} {
		if ValidPhone(p) != want {
			t.Errorf("ValidPhone(%q) != %v", p, want)
		}
	}
	for u, want := range map[string]bool{"https://www.linkedin.com/in/ann": true, "https://linkedin.com/in/ann/": true,
		"https://www.linkedin.com/company/acme": false, "https://evil-linkedin.com/in/ann": false,
		"ftp://linkedin.com/in/ann": false, "linkedin.com/in/ann": false, "https://www.linkedin.com/in/": false} {
		if ValidLinkedIn(u) != want {
			t.Errorf("ValidLinkedIn(%q) != %v", u, want)
		}
	}
}

func TestCompute(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := func(d time.Duration) *time.Time { e := at.Add(d); return &e }
	m := Metrics{BounceThreshold: 10 * time.Second, MaxDuration: time.Hour}
	for name, tc := range map[string]struct {
		s      Session
		status string
		bounce bool
		spent  float64 // -1: unknown
	}{
		"bounce":          {Session{StartedAt: at, EndedAt: end(9 * time.Second)}, StatusCompleted, true, 9},
		"at threshold":    {Session{StartedAt: at, EndedAt: end(10 * time.Second)}, StatusCompleted, false, 10},
		"no end":          {Session{StartedAt: at}, StatusCompleted, true, -1},
		"question":        {Session{StartedAt: at, QuestionsAsked: 1}, StatusCompleted, false, -1},
		"form":            {Session{StartedAt: at, Form: &FormSubmission{}}, StatusCompleted, false, -1},
		"too long":        {Session{StartedAt: at, EndedAt: end(2 * time.Hour)}, StatusFailed, false, -1},
		"ends before":     {Session{StartedAt: at, EndedAt: end(-time.Second)}, StatusFailed, false, -1},
		"exactly maximum": {Session{StartedAt: at, EndedAt: end(time.Hour)}, StatusCompleted, false, 3600},
	} {
		r := m.Compute(tc.s)
		spent := -1.0
		if r.TimeSpentSeconds != nil {
			spent = *r.TimeSpentSeconds
		}
		if r.Status != tc.status || r.IsBounce != tc.bounce || spent != tc.spent || (r.Status == StatusFailed) != (r.Error != nil) {
			t.Errorf("%s: %+v (spent %v)", name, r, spent)
		}
	}
}

func TestSettingsFromEnv(t *testing.T) {
	env := config.FromMap(nil)
	if s := SettingsFromEnv(env); env.Err() != nil || s.Metrics != DefaultMetrics || s.Idle != 2*time.Second {
		t.Fatalf("defaults = %+v, %v", s, env.Err())
	}
	for name, vars := range map[string]map[string]string{
		"zero threshold":      {"SESSION_BOUNCE_THRESHOLD": "0s"},
		"max below threshold": {"SESSION_BOUNCE_THRESHOLD": "1m", "SESSION_MAX_DURATION": "30s"},
		"no interval":         {"SESSION_COMPUTE_INTERVAL": "0s"},
		"not a duration":      {"SESSION_COMPUTE_INTERVAL": "soon"},
	} {
		env := config.FromMap(vars)
		SettingsFromEnv(env)
		if env.Err() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
