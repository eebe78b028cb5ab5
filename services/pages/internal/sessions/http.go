package sessions

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/pagination"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/libs/timestamp"
)

// ID prefixes of this package's TypeIDs.
const (
	sessionPrefix = "session"
	formPrefix    = "formsub"
)

// handlers serve the session routes.
type handlers struct {
	store   *Store
	cursors *pagination.Codec
	// computed is poked after a session is recorded, to wake the local worker.
	computed func()
}

func (h *handlers) register(r fiber.Router) {
	r.Post("/pages/:page_id/audience_sessions", h.record)
	r.Get("/pages/:page_id/audience_sessions", h.list)
	r.Get("/pages/:page_id/audience_sessions/:audience_session_id", h.get)
}

// --- shapes of the API

// The body of a recorded session. The OpenAPI document (SessionCreate) states its rules
// and has judged it before the handler runs: required fields, types, lengths, bounds,
// date-times, the URL, email and phone patterns, unknown fields. Session.Check applies
// the rules the document can only state in words.

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

type sessionView struct {
	AnalyticsSessionID           string   `json:"analyticsSessionId"`
	AudienceID                   *string  `json:"audienceId"`
	AudienceSessionID            string   `json:"audienceSessionId"`
	PageID                       string   `json:"pageId"`
	PageTitle                    *string  `json:"pageTitle"`
	PageURL                      *string  `json:"pageUrl"`
	ComputationStatus            string   `json:"computationStatus"`
	FormSubmissionID             *string  `json:"formSubmissionId"`
	FormSubmissionEmail          *string  `json:"formSubmissionEmail"`
	FormSubmissionPhone          *string  `json:"formSubmissionPhone"`
	FormSubmissionIdentifier     *string  `json:"formSubmissionIdentifier"`
	FormSubmissionIdentifierType *string  `json:"formSubmissionIdentifierType"`
	HasConversion                bool     `json:"hasConversion"`
	HasFormSubmit                bool     `json:"hasFormSubmit"`
	IsBounce                     bool     `json:"isBounce"`
	MaxScrollDepthPercentage     *float64 `json:"maxScrollDepthPercentage"`
	QuestionsAskedCount          int64    `json:"questionsAskedCount"`
	TotalClicksCount             int64    `json:"totalClicksCount"`
	TimeSpentSeconds             *float64 `json:"timeSpentSeconds"`
	SessionStartedAt             string   `json:"sessionStartedAt"`
	SessionEndedAt               *string  `json:"sessionEndedAt"`
	UtmCampaign                  *string  `json:"utmCampaign"`
	UtmContent                   *string  `json:"utmContent"`
	UtmMedium                    *string  `json:"utmMedium"`
	UtmSource                    *string  `json:"utmSource"`
	UtmTerm                      *string  `json:"utmTerm"`
}

func view(s Session) sessionView {
	v := sessionView{AnalyticsSessionID: s.AnalyticsSessionID, AudienceID: s.AudienceID, AudienceSessionID: s.ID,
		PageID: s.PageID, PageTitle: s.PageTitle, PageURL: s.PageURL, ComputationStatus: s.ComputationStatus,
		HasConversion: s.HasConversion, IsBounce: s.IsBounce, MaxScrollDepthPercentage: s.MaxScrollDepth,
		QuestionsAskedCount: s.QuestionsAsked, TotalClicksCount: s.TotalClicks, TimeSpentSeconds: s.TimeSpentSeconds,
		SessionStartedAt: timestamp.Format(s.StartedAt), SessionEndedAt: timestamp.FormatPtr(s.EndedAt),
		UtmCampaign: s.UTM.Campaign, UtmContent: s.UTM.Content, UtmMedium: s.UTM.Medium, UtmSource: s.UTM.Source,
		UtmTerm: s.UTM.Term}
	if f := s.Form; f != nil {
		v.HasFormSubmit = true
		v.FormSubmissionID, v.FormSubmissionEmail, v.FormSubmissionPhone = &f.ID, f.Email, f.Phone
		v.FormSubmissionIdentifier, v.FormSubmissionIdentifierType = &f.Identifier, &f.IdentifierType
	}
	return v
}

// --- handlers

func truncPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := timestamp.Truncate(*t)
	return &v
}

// session maps a checked request to a new session recorded at now. Its request hash is
// the SHA-256 of the decoded request, so replays compare by content, not by bytes.
func (in *sessionCreate) session(tenantID, pageID string, now time.Time) (Session, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return Session{}, fmt.Errorf("hash session request: %w", err)
	}
	hash := sha256.Sum256(raw)
	s := Session{TenantID: tenantID, ID: ids.New(sessionPrefix), PageID: pageID,
		AudienceID: in.AudienceID.Ptr(), AnalyticsSessionID: in.AnalyticsSessionID, RequestHash: hash[:],
		PageTitle: in.PageTitle.Ptr(), PageURL: in.PageURL.Ptr(),
		StartedAt: timestamp.Truncate(in.SessionStartedAt), EndedAt: truncPtr(in.SessionEndedAt.Ptr()),
		HasConversion: request.Value(in.HasConversion), MaxScrollDepth: in.MaxScrollDepthPercentage.Ptr(),
		QuestionsAsked: request.Value(in.QuestionsAskedCount), TotalClicks: request.Value(in.TotalClicksCount),
		UTM: UTM{Campaign: in.UtmCampaign.Ptr(), Content: in.UtmContent.Ptr(), Medium: in.UtmMedium.Ptr(),
			Source: in.UtmSource.Ptr(), Term: in.UtmTerm.Ptr()},
		CreatedAt: now}
	if f := in.FormSubmission; f != nil {
		form := &FormSubmission{ID: ids.New(formPrefix), Email: f.Email.Ptr(), Phone: f.Phone.Ptr(),
			LinkedInURL: f.LinkedinProfileURL.Ptr(), Name: f.Name.Ptr(), Fields: request.Value(f.Fields.Ptr()), SubmittedAt: now}
		form.Identifier, form.IdentifierType, _ = Identify(*form)
		s.Form = form
		s.HasConversion = true // a form submission is a conversion
	}
	return s, nil
}

func (h *handlers) record(c *fiber.Ctx) error {
	var in sessionCreate
	if err := request.Decode(c, &in); err != nil {
		return err
	}
	s, err := in.session(tenant.From(c), c.Params("page_id"), timestamp.Truncate(time.Now()))
	if err != nil {
		return apierror.Internal(err)
	}
	if problems := s.Check(); len(problems) > 0 {
		issues := make([]apierror.Issue, len(problems))
		for i, p := range problems {
			issues[i] = apierror.Issue{Code: p.Code, Message: p.Message, Path: p.Path}
		}
		return apierror.Validation(apierror.FieldBody, issues...)
	}
	out, replayed, err := h.store.Record(c.UserContext(), s)
	if err != nil {
		return mapError(err)
	}
	if replayed {
		return c.JSON(view(out))
	}
	h.computed()
	return c.Status(fiber.StatusCreated).JSON(view(out))
}

func (h *handlers) get(c *fiber.Ctx) error {
	s, err := h.store.Get(c.UserContext(), tenant.From(c), c.Params("page_id"), c.Params("audience_session_id"))
	if err != nil {
		return mapError(err)
	}
	return c.JSON(view(s))
}

func (h *handlers) list(c *fiber.Ctx) error {
	pageID := c.Params("page_id")
	q := request.NewQuery(c)
	// The document judged the parameters (date-times, the audienceId's length); the rule
	// across two of them is the filter's.
	f := Filter{Start: q.Time("startDate"), End: q.Time("endDate"), AudienceID: q.String("audienceId")}
	if err := f.Check(); err != nil {
		q.Fail("endDate", "custom", err.Error())
	}
	scope := pagination.Scope(tenant.From(c), "audience_sessions", pageID, f.AudienceID, fmtTime(f.Start), fmtTime(f.End))
	p := h.cursors.Parse(q, scope)
	after, err := ParseAfter(p.After)
	if err != nil {
		q.Fail("cursor", "invalid_cursor", "Invalid cursor: "+err.Error())
	}
	if err := q.Err(); err != nil {
		return err
	}
	sessions, total, err := h.store.List(c.UserContext(), tenant.From(c), pageID, f, after, p.Limit+1)
	if err != nil {
		return mapError(err)
	}
	byID := make(map[string]Session, len(sessions))
	views := make([]sessionView, len(sessions))
	for i, s := range sessions {
		views[i], byID[s.ID] = view(s), s
	}
	return c.JSON(pagination.Build(h.cursors, p, views, &total, func(v sessionView) []string {
		s := byID[v.AudienceSessionID]
		return After{StartedAt: s.StartedAt, ID: s.ID}.Keys()
	}))
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func mapError(err error) error {
	switch {
	case errors.Is(err, ErrPageNotFound):
		return apierror.NotFound("page not found")
	case errors.Is(err, ErrAudienceNotFound):
		return apierror.NotFound("audience not found under this page")
	case errors.Is(err, ErrSessionNotFound):
		return apierror.NotFound("audience session not found")
	case errors.Is(err, ErrReplayConflict):
		return apierror.Conflict("this page already has a session with this analyticsSessionId, recorded with a different body")
	}
	return apierror.Internal(err)
}
