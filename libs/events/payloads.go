package events

// FormSubmitted is the payload of a form.submitted event (FormSubmittedEventPayload in
// the OpenAPI document): written by the pages service, read by persons and webhooks.
// Type comes first, as the webhooks intake requires.
type FormSubmitted struct {
	Type               string  `json:"type"`
	PageID             string  `json:"pageId"`
	AudienceID         *string `json:"audienceId"`
	AudienceSessionID  string  `json:"audienceSessionId"`
	FormSubmissionID   string  `json:"formSubmissionId"`
	Identifier         string  `json:"identifier"`
	IdentifierType     string  `json:"identifierType"`
	Email              *string `json:"email"`
	Phone              *string `json:"phone"`
	LinkedinProfileURL *string `json:"linkedinProfileUrl"`
	// LinkedinURL is an older spelling of linkedinProfileUrl that readers still accept;
	// writers leave it out.
	LinkedinURL *string        `json:"linkedinUrl,omitempty"`
	Name        *string        `json:"name"`
	Fields      map[string]any `json:"fields"`
	SubmittedAt string         `json:"submittedAt"`
}
