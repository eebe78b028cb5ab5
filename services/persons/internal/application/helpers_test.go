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

// mustStatus checks a response's status and returns its JSON object.
var mustStatus = apitest.MustStatus

// issueCodes lists an error envelope's issues as "field:code:path".
var issueCodes = apitest.IssueCodes

func items(page map[string]any) []map[string]any {
	var out []map[string]any
	for _, it := range page["items"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

func createPerson(t *testing.T, c *apitest.Client, body map[string]any) map[string]any {
	t.Helper()
	return mustStatus(t, c.Do("POST", "/v0/persons", body), 201)
}

func createAccount(t *testing.T, c *apitest.Client, body map[string]any) map[string]any {
	t.Helper()
	return mustStatus(t, c.Do("POST", "/v0/accounts", body), 201)
}

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
// documents; extra fields override or add to it.
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

// next returns the next event, or fails the test after timeout.
func (er *eventReader) next(t *testing.T, timeout time.Duration) events.Envelope {
	t.Helper()
	e, err := er.try(timeout)
	if err != nil {
		t.Fatalf("no event: %v", err)
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

func payload(t *testing.T, e events.Envelope) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(e.Payload, &p); err != nil {
		t.Fatal(err)
	}
	return p
}
