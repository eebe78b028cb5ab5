package ports

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/consumer"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/services/persons/internal/app"
	"github.com/customerapi/platform/services/persons/internal/domain"
)

// Enrichment consumes form.submitted and has each submission enriched in the
// consumer's transaction.
type Enrichment struct {
	App *app.Service
	// Steps binds the enrichment's storage steps to the consumer's transaction.
	Steps func(tx pgx.Tx) domain.Enrichments
}

// Handle is the consumer handler of form.submitted. A payload that cannot be read, or has
// no form submission ID to report on, can never succeed: it is dead-lettered.
func (e *Enrichment) Handle(ctx context.Context, tx pgx.Tx, evt events.Envelope) error {
	f, err := domain.ParseFormSubmitted(evt.Payload)
	if err != nil {
		return consumer.Permanent(err)
	}
	if !storable(f.FormSubmissionID) || !storable(evt.TenantID) {
		return consumer.Permanent(errMissingSubmission)
	}
	return e.App.EnrichForm(ctx, e.Steps(tx), evt.TenantID, evt.ID, f)
}

// storable reports whether s is a non-empty text PostgreSQL can store.
func storable(s string) bool {
	return s != "" && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

var errMissingSubmission = errors.New("form.submitted without a usable formSubmissionId or tenant")
