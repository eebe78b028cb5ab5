package sessions

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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
	store     *Store
	validator *request.Validator
	cursors   *pagination.Codec
	// computed is poked after a session is recorded, to wake the local worker.
	computed func()
}

func (h *handlers) register(r fiber.Router) {
	r.Post("/pages/:page_id/audience_sessions", h.record)
	r.Get("/pages/:page_id/audience_sessions", h.list)
	r.Get("/pages/:page_id/audience_sessions/:audience_session_id", h.get)
}

// --- shapes of the API

type formSubmissionIn struct {
	Email              request.Nullable[string]         `json:"email" validate:"omitnil,max=320,email"`
	Phone              request.Nullable[string]         `json:"phone" validate:"omitnil,max=40"`
	LinkedinProfileURL request.Nullable[string]         `json:"linkedinProfileUrl" validate:"omitnil,max=2048"`
	Name               request.Nullable[string]         `json:"name" validate:"omitnil,min=1,max=200"`
	Fields             request.Nullable[map[string]any] `json:"fields" validate:"omitnil,max=100"`
}

type sessionCreate struct {
	AnalyticsSessionID       string                      `json:"analyticsSessionId" validate:"required,max=255"`
	AudienceID               request.Nullable[string]    `json:"audienceId" validate:"omitnil,min=1,max=255"`
	PageTitle                request.Nullable[string]    `json:"pageTitle" validate:"omitnil,max=1000"`
	PageURL                  request.Nullable[string]    `json:"pageUrl" validate:"omitnil,max=2048,httpurl"`
	SessionStartedAt         *time.Time                  `json:"sessionStartedAt" validate:"required"`
	SessionEndedAt           request.Nullable[time.Time] `json:"sessionEndedAt"`
	HasConversion            *bool                       `json:"hasConversion"`
	MaxScrollDepthPercentage request.Nullable[float64]   `json:"maxScrollDepthPercentage" validate:"omitnil,min=0,max=100"`
	QuestionsAskedCount      *int64                      `json:"questionsAskedCount" validate:"omitnil,min=0,max=9007199254740991"`
	TotalClicksCount         *int64                      `json:"totalClicksCount" validate:"omitnil,min=0,max=9007199254740991"`
	UtmCampaign              request.Nullable[string]    `json:"utmCampaign" validate:"omitnil,max=500"`
	UtmContent               request.Nullable[string]    `json:"utmContent" validate:"omitnil,max=500"`
	UtmMedium                request.Nullable[string]    `json:"utmMedium" validate:"omitnil,max=500"`
	UtmSource                request.Nullable[string]    `json:"utmSource" validate:"omitnil,max=500"`
	UtmTerm                  request.Nullable[string]    `json:"utmTerm" validate:"omitnil,max=500"`
	FormSubmission           *formSubmissionIn           `json:"formSubmission"`
}

// check applies the rules the tags cannot express, as body issues.
func (in *sessionCreate) check() []apierror.Issue {
	var out []apierror.Issue
	fail := func(code, msg string, path ...any) {
		out = append(out, apierror.Issue{Code: code, Message: msg, Path: path})
	}
	if e := in.SessionEndedAt.Ptr(); e != nil && in.SessionStartedAt != nil && e.Before(*in.SessionStartedAt) {
		fail("custom", "sessionEndedAt must not be before sessionStartedAt", "sessionEndedAt")
	}
	for _, f := range []struct {
		name string
		t    *time.Time
	}{{"sessionStartedAt", in.SessionStartedAt}, {"sessionEndedAt", in.SessionEndedAt.Ptr()}} {
		if f.t != nil && !inTimeRange(*f.t) {
			fail("invalid_date", "Invalid date: "+f.name+" must be from "+minTime.Format(time.RFC3339)+" to "+
				maxTime.Format(time.RFC3339)+" (in UTC)", f.name)
		}
	}
	if f := in.FormSubmission; f != nil {
		if d := depth(f.Fields.Ptr()); d > MaxFieldsDepth {
			fail("too_big", "formSubmission.fields may nest objects and arrays at most "+strconv.Itoa(MaxFieldsDepth)+" levels deep",
				"formSubmission", "fields")
		} else if n := jsonSize(f.Fields.Ptr()); n > MaxFieldsBytes {
			fail("too_big", "formSubmission.fields may be at most "+strconv.Itoa(MaxFieldsBytes)+" bytes as JSON, got "+
				strconv.Itoa(n), "formSubmission", "fields")
		}
		if f.Email.Ptr() == nil && f.Phone.Ptr() == nil && f.LinkedinProfileURL.Ptr() == nil {
			fail("custom", "A form submission needs at least one identifier: email, phone or linkedinProfileUrl", "formSubmission")
		}
		if p := f.Phone.Ptr(); p != nil && !ValidPhone(*p) {
			fail("invalid_string", "Invalid phone number: 7 to 15 digits, optionally with +, spaces, dashes, dots and parentheses",
				"formSubmission", "phone")
		}
		if u := f.LinkedinProfileURL.Ptr(); u != nil && !ValidLinkedIn(*u) {
			fail("invalid_string", "Invalid LinkedIn profile URL: expected https://www.linkedin.com/in/<profile>",
				"formSubmission", "linkedinProfileUrl")
		}
	}
	return out
}

// The range of a client-sent session timestamp: a visit recorded by this API happened
// after 1970, and a later year than 9999 has no four-digit RFC 3339 form (an offset such
// as 9999-12-31T23:59:59-23:59 would turn into year 10000 in UTC).
var (
	minTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

func inTimeRange(t time.Time) bool { return !t.Before(minTime) && !t.After(maxTime) }

// MaxFieldsDepth bounds how deeply formSubmission.fields may nest objects and arrays
// (the top-level object is level 1), so the payload stays decodable by every consumer.
const MaxFieldsDepth = 8

// MaxFieldsBytes bounds formSubmission.fields, measured as compact JSON in UTF-8, as a
// client measures it. form.submitted carries the fields, with '<', '>' and '&' escaped
// (six bytes each), so the bound keeps that event well under the producer's limit of
// KAFKA_MAX_MESSAGE_BYTES (default 1,000,000) even in the worst case (about 400 kB).
const MaxFieldsBytes = 64 << 10

// jsonSize is the length of v as compact JSON without HTML escaping.
func jsonSize(v any) int {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return 0 // decoded from JSON, so it encodes; the outbox measures the event anyway
	}
	return b.Len() - 1 // Encode ends with a newline
}

// depth is the nesting depth of a decoded JSON value (a scalar is 0).
func depth(v any) int {
	d := 0
	switch x := v.(type) {
	case *map[string]any:
		if x != nil {
			return depth(*x)
		}
	case map[string]any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
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
		StartedAt: timestamp.Truncate(*in.SessionStartedAt), EndedAt: truncPtr(in.SessionEndedAt.Ptr()),
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
	if err := h.validator.Body(c, &in); err != nil {
		return err
	}
	if issues := in.check(); len(issues) > 0 {
		return apierror.Validation(apierror.FieldBody, issues...)
	}
	s, err := in.session(tenant.From(c), c.Params("page_id"), timestamp.Truncate(time.Now()))
	if err != nil {
		return apierror.Internal(err)
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
	f := Filter{Start: q.Time("startDate"), End: q.Time("endDate"), AudienceID: q.String("audienceId")}
	if f.Start != nil && f.End != nil && f.End.Before(*f.Start) {
		q.Fail("endDate", "custom", "endDate must not be before startDate")
	}
	if len(f.AudienceID) > 255 {
		q.Fail("audienceId", "too_big", "String must contain at most 255 character(s)")
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
