package session

import "time"

// Metrics are the settings of a session's derived-metrics computation.
type Metrics struct {
	// BounceThreshold: a session without any interaction that lasted less than this
	// (or has no end) is a bounce.
	BounceThreshold time.Duration
	// MaxDuration: a session longer than this cannot be measured (a tab left open, a
	// clock gone wrong); its computation fails.
	MaxDuration time.Duration
}

// DefaultMetrics are the documented defaults.
var DefaultMetrics = Metrics{BounceThreshold: 10 * time.Second, MaxDuration: 24 * time.Hour}

// Computation is the outcome of computing a session's metrics.
type Computation struct {
	Status           string
	Error            *string
	IsBounce         bool
	TimeSpentSeconds *float64
	HasConversion    bool
}

// Computed counts the sessions one computation run finished, by outcome.
type Computed struct{ Completed, Failed int }

// Total is the number of sessions finished.
func (c Computed) Total() int { return c.Completed + c.Failed }

// Compute derives a session's metrics: the time spent is the span from start to end
// (unknown without an end); a bounce is a session with no interaction at all (no click,
// question, form submission or conversion) that ended within the bounce threshold or
// never reported an end. A form submission counts as a conversion.
func (m Metrics) Compute(s Session) Computation {
	r := Computation{Status: ComputationCompleted, HasConversion: s.HasConversion || s.Form != nil}
	if s.EndedAt != nil {
		d := s.EndedAt.Sub(s.StartedAt)
		if d < 0 || d > m.MaxDuration {
			msg := "the session lasted longer than " + m.MaxDuration.String() + "; its time spent cannot be measured"
			if d < 0 {
				msg = "the session ended before it started"
			}
			return Computation{Status: ComputationFailed, Error: &msg, HasConversion: r.HasConversion}
		}
		secs := d.Seconds()
		r.TimeSpentSeconds = &secs
	}
	interacted := s.TotalClicks > 0 || s.QuestionsAsked > 0 || r.HasConversion
	short := s.EndedAt == nil || s.EndedAt.Sub(s.StartedAt) < m.BounceThreshold
	r.IsBounce = !interacted && short
	return r
}
