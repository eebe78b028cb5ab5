package application_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/ids"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/libs/timestamp"
	"github.com/customerapi/platform/services/webhooks/internal/application"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var contract = apitest.MustLoad()

// fastRetries is the schedule of most tests: three quick retries.
const fastRetries = "100ms,200ms,300ms"

// start runs the service with private targets allowed (the receivers listen on
// 127.0.0.1) and a fast retry schedule; env adds or overrides settings.
func start(t testing.TB, env map[string]string, o application.Options, opts ...servicetest.Options) *servicetest.Service {
	t.Helper()
	all := map[string]string{"WEBHOOK_ALLOW_PRIVATE_TARGETS": "true", "WEBHOOK_RETRY_SCHEDULE": fastRetries,
		"WEBHOOK_SECRETS_KEYS": testKeyK1}
	for k, v := range env {
		all[k] = v
	}
	var so servicetest.Options
	if len(opts) > 0 {
		so = opts[0]
	}
	so.Env = all
	if o.Idle == 0 {
		o.Idle = 5 * time.Second
	}
	if o.Resolver == nil {
		// No test touches DNS: example.com names are public, others do not resolve.
		o.Resolver = newResolver(map[string]string{"hooks.example.com": "93.184.216.34", "x.example.com": "93.184.216.34"})
	}
	return servicetest.Start(t, application.Name, application.Migrations, application.SetupWith(o), so)
}

func client(t apitest.TB, s *servicetest.Service, tenantID string) *apitest.Client {
	return (&apitest.Client{T: t, Base: s.URL, Contract: contract, Prepare: s.Sign}).With(tenant.Header, tenantID)
}

// mustStatus checks a response's status and returns its JSON object.
var mustStatus = apitest.MustStatus

// issueCodes lists an error envelope's issues as "field:code:path".
var issueCodes = apitest.IssueCodes

// subscribe creates a subscription and returns its ID and signing secret.
func subscribe(t *testing.T, c *apitest.Client, url string, events any) (string, string) {
	t.Helper()
	m := mustStatus(t, c.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": url, "events": events}), 201)
	return m["subscriptionId"].(string), m["signingSecret"].(string)
}

// --- receivers

type received struct {
	at     time.Time
	header http.Header
	body   []byte
}

// receiver is a webhook endpoint on 127.0.0.1 that records what it gets and answers as
// respond says (200 when respond is nil).
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	got     []received
	respond func(n int, r *http.Request, w http.ResponseWriter) int
}

func newReceiver(t testing.TB, respond func(n int, r *http.Request, w http.ResponseWriter) int) *receiver {
	rc := &receiver{respond: respond}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{at: time.Now(), header: r.Header.Clone(), body: body})
		n := len(rc.got)
		rc.mu.Unlock()
		status := 200
		if rc.respond != nil {
			status = rc.respond(n, r, w)
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"received":%d}`, n)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) count() int { return len(rc.all()) }

// eventIDs lists the eventId of every request received, in arrival order.
func (rc *receiver) eventIDs() []string {
	var out []string
	for _, r := range rc.all() {
		var b struct {
			EventID string `json:"eventId"`
		}
		_ = json.Unmarshal(r.body, &b)
		out = append(out, b.EventID)
	}
	return out
}

// --- events

// payloadOf builds a contract-shaped payload of an event type.
func payloadOf(typ, subject string) map[string]any {
	now := timestamp.Format(time.Now())
	switch typ {
	case events.TypePageVersionCreated:
		return map[string]any{"type": typ, "pageId": "page_1", "versionId": ids.New("version"), "createdAt": now}
	case events.TypePageVersionProcessed:
		return map[string]any{"type": typ, "pageId": "page_1", "audienceId": subject, "versionId": "version_1",
			"versionNumber": 1, "status": "processing", "processedAt": now}
	case events.TypePageVersionPublished:
		return map[string]any{"type": typ, "pageId": "page_1", "audienceId": subject, "versionId": "version_1",
			"versionNumber": 1, "status": "published", "publishedAt": now}
	case events.TypeFormSubmitted:
		return map[string]any{"type": typ, "pageId": "page_1", "audienceId": nil, "audienceSessionId": "session_1",
			"formSubmissionId": subject, "identifier": "a@example.com", "identifierType": "email", "email": "a@example.com",
			"phone": nil, "linkedinProfileUrl": nil, "name": "A", "fields": nil, "submittedAt": now}
	case events.TypeFormEnriched:
		return map[string]any{"type": typ, "formSubmissionId": subject, "audienceSessionId": "session_1", "pageId": "page_1",
			"personId": "person_1", "accountId": nil, "person": "created", "account": "none"}
	}
	return map[string]any{"type": typ, "formSubmissionId": subject, "audienceSessionId": "session_1", "pageId": "page_1",
		"reason": "no_identifier", "detail": "no identifier"}
}

// event makes an envelope of a public event for a tenant and subject; its payload starts
// with "type", as the event contract requires of producers.
func event(t testing.TB, tenantID, typ, subject string) events.Envelope {
	t.Helper()
	fields := payloadOf(typ, subject)
	delete(fields, "type")
	rest, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	payload := json.RawMessage(`{"type":"` + typ + `",` + string(rest[1:]))
	e, err := events.New(tenantID, typ, subject, payload)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// publish writes envelopes to the producing context's topic, keyed by subject, as the
// outbox relay does.
//
// nolint: contextcheck // it writes within the test's own context (t.Context).
func publish(t testing.TB, b *kafkatest.Broker, evts ...events.Envelope) {
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
		topic := events.TopicPages
		if strings.HasPrefix(e.Type, "form.enrich") {
			topic = events.TopicPersons
		}
		msgs[i] = kafka.Message{Topic: topic, Key: []byte(e.Subject), Value: v}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

// --- verification, as a receiver does it (independently of the service's code)

func verify256(secret string, body []byte, header string) bool {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hmac.Equal([]byte(header), []byte("sha256="+hex.EncodeToString(m.Sum(nil))))
}

func verifyStandard(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// --- name resolution without DNS

// resolver answers from a table that a test may change while it runs.
type resolver struct {
	mu    sync.Mutex
	names map[string]string
}

func newResolver(names map[string]string) *resolver { return &resolver{names: names} }

func (r *resolver) set(name, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names[name] = addr
}

func (r *resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.names[host]
	if !ok {
		return nil, fmt.Errorf("lookup %s: no such host", host)
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

// portOf returns the port of a test server.
func portOf(t testing.TB, srv *httptest.Server) string {
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// deliveries lists every delivery of a subscription (one page of up to 100).
func deliveries(t *testing.T, c *apitest.Client, subID string, query ...string) []apitypes.WebhookDelivery {
	t.Helper()
	path := "/v0/webhook_subscriptions/" + subID + "/deliveries?limit=100"
	for _, q := range query {
		path += "&" + q
	}
	return apitest.Decode[apitypes.WebhookDeliveryPage](t, c.Do("GET", path, nil), 200, "a deliveries page").Items
}

// val is what p points at, or nil: a nullable field as the decoded JSON had it.
func val[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// show renders an answer's value as JSON, for failure messages.
func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// testEvent sends a subscription a test event of a type and returns its delivery.
func testEvent(t *testing.T, c *apitest.Client, subID, eventType string) apitypes.WebhookDelivery {
	t.Helper()
	r := c.Do("POST", "/v0/webhook_subscriptions/"+subID+"/test", map[string]any{"eventType": eventType})
	return apitest.Decode[apitypes.WebhookDelivery](t, r, 202, "a test event's delivery")
}

// getDelivery reads one delivery of a subscription.
func getDelivery(t *testing.T, c *apitest.Client, subID, deliveryID string) apitypes.WebhookDelivery {
	t.Helper()
	return apitest.Decode[apitypes.WebhookDelivery](t, c.Do("GET", "/v0/webhook_subscriptions/"+subID+"/deliveries/"+deliveryID, nil), 200, "a delivery")
}
