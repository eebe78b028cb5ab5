package application_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/services/persons/internal/application"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var contract = apitest.MustLoad()

func start(t *testing.T) *servicetest.Service {
	return servicetest.Start(t, application.Name, application.Migrations, application.Setup, servicetest.Options{})
}

func client(t *testing.T, s *servicetest.Service, tenantID string) *apitest.Client {
	return (&apitest.Client{T: t, Base: s.URL, Contract: contract, Prepare: s.Sign}).With(tenant.Header, tenantID)
}

// The response bodies, as the OpenAPI document describes them (the schemas of the same
// names; clients/go has them too, but the service's module does not depend on it).
// Timestamps stay strings: the tests compare them exactly as they were sent.

// Person is the Person schema.
type Person struct {
	PersonID           string  `json:"personId"`
	Name               string  `json:"name"`
	Email              *string `json:"email"`
	Domain             *string `json:"domain"`
	Slug               string  `json:"slug"`
	PhoneNumber        *string `json:"phoneNumber"`
	LinkedinProfileURL *string `json:"linkedinProfileUrl"`
	CreatedAt          string  `json:"createdAt"`
	UpdatedAt          string  `json:"updatedAt"`
}

// Account is the Account schema.
type Account struct {
	AccountID        string   `json:"accountId"`
	Domain           string   `json:"domain"`
	Name             *string  `json:"name"`
	LatestActivityAt *string  `json:"latestActivityAt"`
	LinkedPersons    []Person `json:"linkedPersons"`
	CreatedAt        string   `json:"createdAt"`
	UpdatedAt        string   `json:"updatedAt"`
}

// AccountListItem is the AccountListItem schema. LinkedPersons is not in it: it is here
// only so that a test can state that a list item does not carry it.
type AccountListItem struct {
	AccountID          string          `json:"accountId"`
	Domain             string          `json:"domain"`
	Name               *string         `json:"name"`
	LatestActivityAt   *string         `json:"latestActivityAt"`
	LinkedPersonsCount int             `json:"linkedPersonsCount"`
	LinkedPersons      json.RawMessage `json:"linkedPersons"`
	CreatedAt          string          `json:"createdAt"`
	UpdatedAt          string          `json:"updatedAt"`
}

// Log is the PersonLog or the AccountLog schema: the same entry, written to a person
// (personLogId, personId) or to an account (accountLogId, accountId).
type Log struct {
	PersonLogID    string         `json:"personLogId"`
	PersonID       string         `json:"personId"`
	AccountLogID   string         `json:"accountLogId"`
	AccountID      string         `json:"accountId"`
	Source         string         `json:"source"`
	Type           string         `json:"type"`
	Payload        map[string]any `json:"payload"` // free-form: any JSON object
	IdempotencyKey *string        `json:"idempotencyKey"`
	CreatedAt      string         `json:"createdAt"`
	UpdatedAt      *string        `json:"updatedAt"`
	DeletedAt      *string        `json:"deletedAt"`
}

// Page is a list envelope (AccountPage, PersonLogPage, AccountLogPage).
type Page[T any] struct {
	Items      []T     `json:"items"`
	HasMore    bool    `json:"hasMore"`
	NextCursor *string `json:"nextCursor"`
	TotalCount int     `json:"totalCount"`
}

// SearchPage is the PersonSearchPage schema: its totalCount is null past 10,000 matches.
type SearchPage struct {
	Items      []Person `json:"items"`
	HasMore    bool     `json:"hasMore"`
	NextCursor *string  `json:"nextCursor"`
	TotalCount *int     `json:"totalCount"`
}

// ids lists the persons of a search page.
func (p SearchPage) ids() []string {
	var out []string
	for _, it := range p.Items {
		out = append(out, it.PersonID)
	}
	return out
}

// total is totalCount, or -1 when it is null.
func (p SearchPage) total() int {
	if p.TotalCount == nil {
		return -1
	}
	return *p.TotalCount
}

// The request bodies the tests send when they mean to send a valid one. A body that is
// wrong on purpose (a bad type, an unknown field, an empty string, an explicit null)
// stays a map.

// personCreate is the PersonCreate schema, and personUpdate PersonUpdate without the
// explicit nulls that clear a field.
type personCreate struct {
	Name               string `json:"name"`
	Email              string `json:"email,omitempty"`
	Domain             string `json:"domain,omitempty"`
	PhoneNumber        string `json:"phoneNumber,omitempty"`
	LinkedinProfileURL string `json:"linkedinProfileUrl,omitempty"`
}

type personUpdate struct {
	Name               string `json:"name,omitempty"`
	Email              string `json:"email,omitempty"`
	Domain             string `json:"domain,omitempty"`
	PhoneNumber        string `json:"phoneNumber,omitempty"`
	LinkedinProfileURL string `json:"linkedinProfileUrl,omitempty"`
}

// accountCreate is the AccountCreate schema.
type accountCreate struct {
	Domain string `json:"domain"`
	Name   string `json:"name,omitempty"`
}

// logCreate is the PersonLogCreate and AccountLogCreate schema.
type logCreate struct {
	Source         string         `json:"source"`
	Type           string         `json:"type"`
	Payload        map[string]any `json:"payload"` // free-form: any JSON object
	IdempotencyKey string         `json:"idempotencyKey,omitempty"`
}

func createPerson(t testing.TB, c *apitest.Client, body personCreate) Person {
	t.Helper()
	return apitest.Decode[Person](t, c.Do("POST", "/v0/persons", body), 201, "creating a person with a valid body must answer 201 with the person")
}

func getPerson(t testing.TB, c *apitest.Client, id string) Person {
	t.Helper()
	return apitest.Decode[Person](t, c.Do("GET", "/v0/persons/"+id, nil), 200, "an existing person must be readable by its ID")
}

// patchPerson sends body (a personUpdate, or a map for explicit nulls) and returns the
// updated person.
func patchPerson(t testing.TB, c *apitest.Client, id string, body any) Person {
	t.Helper()
	return apitest.Decode[Person](t, c.Do("PATCH", "/v0/persons/"+id, body), 200, "a valid patch of an existing person must answer 200 with the person")
}

// searchPersons runs a search with the given query string ("?…", or "" for none).
func searchPersons(t testing.TB, c *apitest.Client, query string) SearchPage {
	t.Helper()
	return apitest.Decode[SearchPage](t, c.Do("GET", "/v0/persons/search"+query, nil), 200, "a valid search must answer 200 with a PersonSearchPage")
}

// searchFor searches for q.
func searchFor(t testing.TB, c *apitest.Client, q string) SearchPage {
	t.Helper()
	return apitest.Decode[SearchPage](t, c.Do("GET", apitest.Query("/v0/persons/search", "query", q), nil), 200,
		fmt.Sprintf("a search for %q must answer 200 with a PersonSearchPage", q))
}

func createAccount(t testing.TB, c *apitest.Client, body accountCreate) Account {
	t.Helper()
	return apitest.Decode[Account](t, c.Do("POST", "/v0/accounts", body), 201, "creating an account of a new domain must answer 201 with the account")
}

func getAccount(t testing.TB, c *apitest.Client, id string) Account {
	t.Helper()
	return apitest.Decode[Account](t, c.Do("GET", "/v0/accounts/"+id, nil), 200, "an existing account must be readable by its ID")
}

func listAccounts(t testing.TB, c *apitest.Client, query string) Page[AccountListItem] {
	t.Helper()
	return apitest.Decode[Page[AccountListItem]](t, c.Do("GET", "/v0/accounts"+query, nil), 200, "listing accounts must answer 200 with an AccountPage")
}

// writeLog writes a log entry to base (…/persons/{id}/logs or …/accounts/{id}/logs)
// that must be new.
func writeLog(t testing.TB, c *apitest.Client, base string, body any) Log {
	t.Helper()
	return apitest.Decode[Log](t, c.Do("POST", base, body), 201, "writing a new log entry to "+base+" must answer 201 with the entry")
}

func listLogs(t testing.TB, c *apitest.Client, base, query string) Page[Log] {
	t.Helper()
	return apitest.Decode[Page[Log]](t, c.Do("GET", base+query, nil), 200, "listing the log entries of "+base+" must answer 200 with a log page")
}

// nextCursor returns the nextCursor of a page that must have one.
func nextCursor(t testing.TB, hasMore bool, cursor *string, what string) string {
	t.Helper()
	if cursor == nil || !hasMore {
		t.Fatalf("%s has more items than its limit, so it must have hasMore true and a nextCursor; got hasMore %v, nextCursor nil",
			what, hasMore)
	}
	return *cursor
}

// waitForClockPast waits until the clock has moved past stamp (a timestamp the service
// wrote, to the millisecond), so that the next write is stamped later than it.
func waitForClockPast(t testing.TB, stamp string) {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		t.Fatalf("timestamps must be RFC 3339; got %q: %v", stamp, err)
	}
	testwait.For(t, time.Second, "the clock to pass "+stamp, func() (bool, string) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		return now.After(at), now.Format(time.RFC3339Nano)
	})
}

// str is the text of a nullable string, "null" for nil (for failure messages).
func str(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// is reports whether a nullable string is set to want.
func is(s *string, want string) bool { return s != nil && *s == want }

// publish writes envelopes to pages.events, keyed by subject, as the pages relay does.
func publish(t *testing.T, b *kafkatest.Broker, evts ...events.Envelope) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr), Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, AllowAutoTopicCreation: true}
	defer w.Close()
	msgs := make([]kafka.Message, len(evts))
	for i, e := range evts {
		v, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		msgs[i] = kafka.Message{Topic: events.TopicPages, Key: []byte(e.Subject), Value: v}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

// formSubmitted makes a form.submitted envelope in the shape the webhooks contract
// documents; extra fields override or add to it. The payload is a map on purpose: the
// tests send the shapes of other producers, nulls and missing fields included.
func formSubmitted(t *testing.T, tenantID, submissionID string, extra map[string]any) events.Envelope {
	t.Helper()
	p := map[string]any{"type": events.TypeFormSubmitted, "pageId": "page_1", "audienceId": "audience_1",
		"audienceSessionId": "session_" + submissionID, "formSubmissionId": submissionID, "identifier": nil,
		"identifierType": "email", "email": nil, "phone": nil, "linkedinProfileUrl": nil, "name": nil, "fields": nil,
		"submittedAt": "2026-11-23T10:00:00.000Z"}
	for k, v := range extra {
		p[k] = v
	}
	e, err := events.New(tenantID, events.TypeFormSubmitted, "audience_1", p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// eventReader reads persons.events from the start.
type eventReader struct {
	r *kafka.Reader
}

func newEventReader(t *testing.T, b *kafkatest.Broker) *eventReader {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr}, GroupID: fmt.Sprint("reader-", time.Now().UnixNano()),
		Topic: events.TopicPersons, StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
	t.Cleanup(func() { r.Close() })
	return &eventReader{r: r}
}

// next returns the next event, or fails the test after timeout naming the event awaited.
func (er *eventReader) next(t *testing.T, timeout time.Duration, awaited string) events.Envelope {
	t.Helper()
	e, err := er.try(timeout)
	if err != nil {
		t.Fatalf("no event on %s within %s; awaited %s: %v", events.TopicPersons, timeout, awaited, err)
	}
	return e
}

func (er *eventReader) try(timeout time.Duration) (events.Envelope, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	m, err := er.r.ReadMessage(ctx)
	if err != nil {
		return events.Envelope{}, err
	}
	return events.Decode(m)
}

// FormEnriched is the payload of form.enriched as the document's FormEnrichedEventPayload
// states it; further fields may be added, so it is decoded leniently. It copies the
// document, not domain.FormEnriched: decoded with the producer's own struct, a renamed
// JSON tag would pass.
type FormEnriched struct {
	Type              string  `json:"type"`
	FormSubmissionID  string  `json:"formSubmissionId"`
	AudienceSessionID string  `json:"audienceSessionId"`
	PageID            string  `json:"pageId"`
	PersonID          string  `json:"personId"`
	AccountID         *string `json:"accountId"`
	Person            string  `json:"person"`
	Account           string  `json:"account"`
	MatchedBy         string  `json:"matchedBy"`
}

// FormEnrichmentFailed is the payload of form.enrichment_failed
// (FormEnrichmentFailedEventPayload), decoded leniently too.
type FormEnrichmentFailed struct {
	Type              string `json:"type"`
	FormSubmissionID  string `json:"formSubmissionId"`
	AudienceSessionID string `json:"audienceSessionId"`
	PageID            string `json:"pageId"`
	Reason            string `json:"reason"`
	Detail            string `json:"detail"`
}

// payload decodes an event's payload into a T.
func payload[T any](t *testing.T, e events.Envelope) T {
	t.Helper()
	var p T
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatalf("the payload of %s must decode as %T: %v\n%s", e.Type, p, err, e.Payload)
	}
	return p
}
