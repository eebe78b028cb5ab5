package sessions

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/pages/internal/domain/session"
)

// The body of a recorded session. The OpenAPI document (SessionCreate) states its rules
// and has judged it before the handler runs: required fields, types, lengths, bounds,
// date-times, the URL, email and phone patterns, unknown fields. session.Session.Check
// applies the rules the document can only state in words.

type formSubmissionIn struct {
	Email              request.Nullable[string]         `json:"email"`
	Phone              request.Nullable[string]         `json:"phone"`
	LinkedinProfileURL request.Nullable[string]         `json:"linkedinProfileUrl"`
	Name               request.Nullable[string]         `json:"name"`
	Fields             request.Nullable[map[string]any] `json:"fields"`
}

type sessionCreate struct {
	AnalyticsSessionID       string                      `json:"analyticsSessionId"`
	AudienceID               request.Nullable[string]    `json:"audienceId"`
	PageTitle                request.Nullable[string]    `json:"pageTitle"`
	PageURL                  request.Nullable[string]    `json:"pageUrl"`
	SessionStartedAt         time.Time                   `json:"sessionStartedAt"`
	SessionEndedAt           request.Nullable[time.Time] `json:"sessionEndedAt"`
	HasConversion            *bool                       `json:"hasConversion"`
	MaxScrollDepthPercentage request.Nullable[float64]   `json:"maxScrollDepthPercentage"`
	QuestionsAskedCount      *int64                      `json:"questionsAskedCount"`
	TotalClicksCount         *int64                      `json:"totalClicksCount"`
	UtmCampaign              request.Nullable[string]    `json:"utmCampaign"`
	UtmContent               request.Nullable[string]    `json:"utmContent"`
	UtmMedium                request.Nullable[string]    `json:"utmMedium"`
	UtmSource                request.Nullable[string]    `json:"utmSource"`
	UtmTerm                  request.Nullable[string]    `json:"utmTerm"`
	FormSubmission           *formSubmissionIn           `json:"formSubmission"`
}

func truncPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := timestamp.Truncate(*t)
	return &v
}

// domain maps a decoded request to a session to record (app.Service.Record gives it its
// IDs and times). Its request hash is the SHA-256 of the decoded request, so replays
// compare by content, not by bytes.
func (in *sessionCreate) domain(tenantID, pageID string) (session.Session, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return session.Session{}, fmt.Errorf("hash session request: %w", err)
	}
	hash := sha256.Sum256(raw)
	s := session.Session{TenantID: tenantID, PageID: pageID,
		AudienceID: in.AudienceID.Ptr(), AnalyticsSessionID: in.AnalyticsSessionID, RequestHash: hash[:],
		PageTitle: in.PageTitle.Ptr(), PageURL: in.PageURL.Ptr(),
		StartedAt: timestamp.Truncate(in.SessionStartedAt), EndedAt: truncPtr(in.SessionEndedAt.Ptr()),
		HasConversion: request.Value(in.HasConversion), MaxScrollDepth: in.MaxScrollDepthPercentage.Ptr(),
		QuestionsAsked: request.Value(in.QuestionsAskedCount), TotalClicks: request.Value(in.TotalClicksCount),
		UTM: session.UTM{Campaign: in.UtmCampaign.Ptr(), Content: in.UtmContent.Ptr(), Medium: in.UtmMedium.Ptr(),
			Source: in.UtmSource.Ptr(), Term: in.UtmTerm.Ptr()}}
	if f := in.FormSubmission; f != nil {
		s.Form = &session.FormSubmission{Email: f.Email.Ptr(), Phone: f.Phone.Ptr(),
			LinkedInURL: f.LinkedinProfileURL.Ptr(), Name: f.Name.Ptr(), Fields: request.Value(f.Fields.Ptr())}
	}
	return s, nil
}

func viewSession(s session.Session) apitypes.Session {
	v := apitypes.Session{AnalyticsSessionId: s.AnalyticsSessionID, AudienceId: s.AudienceID, AudienceSessionId: s.ID,
		PageId: &s.PageID, PageTitle: s.PageTitle, PageUrl: s.PageURL,
		ComputationStatus: apitypes.SessionComputationStatus(s.ComputationStatus), HasConversion: s.HasConversion,
		IsBounce: s.IsBounce, MaxScrollDepthPercentage: s.MaxScrollDepth, QuestionsAskedCount: int(s.QuestionsAsked),
		TotalClicksCount: int(s.TotalClicks), TimeSpentSeconds: s.TimeSpentSeconds,
		SessionStartedAt: timestamp.Format(s.StartedAt), SessionEndedAt: timestamp.FormatPtr(s.EndedAt),
		UtmCampaign: s.UTM.Campaign, UtmContent: s.UTM.Content, UtmMedium: s.UTM.Medium, UtmSource: s.UTM.Source,
		UtmTerm: s.UTM.Term}
	if f := s.Form; f != nil {
		kind := apitypes.SessionFormSubmissionIdentifierType(f.IdentifierType)
		v.HasFormSubmit = true
		v.FormSubmissionId, v.FormSubmissionEmail, v.FormSubmissionPhone = &f.ID, f.Email, f.Phone
		v.FormSubmissionIdentifier, v.FormSubmissionIdentifierType = &f.Identifier, &kind
	}
	return v
}
