// Package faultload is the load and the rules of the fault tests: while form submissions
// keep arriving through the gateway, something breaks (a dependency refuses connections,
// a process or a pod is killed) and comes back. Afterwards every submission the API
// acknowledged (201) must have reached the tenant's webhook receiver twice, as
// form.submitted (pages → Kafka → webhooks) and form.enriched (persons' enrichment
// consumer → persons' outbox → Kafka → webhooks), counted by eventId so redeliveries do
// not count twice; and no answer may be anything but 201 or 503 in the envelope.
//
// The process-level fault tests of package e2e and the cluster's fault tests (e2e/kind)
// both hold their faults to these rules.
package faultload

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/libs/timestamp"
)

// ReceiverHostEnv names the variable holding the address webhook receivers listen on
// (default 127.0.0.1). Against a system in a cluster it is an address of the host that
// the cluster's pods reach, such as the gateway of the nodes' Docker network.
const ReceiverHostEnv = "E2E_RECEIVER_HOST"

// ReceiverHost is the address webhook receivers listen on: $E2E_RECEIVER_HOST, else
// 127.0.0.1.
func ReceiverHost() string {
	if host := os.Getenv(ReceiverHostEnv); host != "" {
		return host
	}
	return "127.0.0.1"
}

// Listen opens a listener for a webhook receiver on a free port of ReceiverHost.
func Listen() (net.Listener, error) {
	host := ReceiverHost()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("receiver listener on %s (%s): %w", host, ReceiverHostEnv, err)
	}
	return l, nil
}

// Serve starts h on a listener of Listen, the address the platform's pods reach, and
// closes it when the test ends.
func Serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	s := &httptest.Server{Listener: l, Config: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// Prepare makes what the writers need for the tenant of c: a subscription of receiverURL
// to form.submitted and form.enriched, and a page with a published audience. It returns
// the page's and the audience's IDs.
func Prepare(t testing.TB, c *apitest.Client, receiverURL string) (pageID, audienceID string) {
	t.Helper()
	apitest.MustStatus(t, c.Do("POST", "/v0/webhook_subscriptions", map[string]any{"url": receiverURL,
		"events": []string{"form.submitted", "form.enriched"}}), 201)
	page := apitest.MustStatus(t, c.Do("POST", "/v0/pages", map[string]any{"name": "Faults e2e", "title": "Faults",
		"pageContext": "A page whose forms are submitted through an outage", "brandId": "brand_e2e", "pageType": "inbound"}), 201)
	pageID = page["pageId"].(string)
	aud := apitest.MustStatus(t, c.Do("POST", "/v0/pages/"+pageID+"/audiences", map[string]any{"publishBehavior": "publish"}), 201)
	return pageID, aud["audienceId"].(string)
}

// Writers submit forms to one audience, each about 10 a second, until stopped,
// recording what was acknowledged and every other answer.
type Writers struct {
	c                  *apitest.Client
	pageID, audienceID string
	cancel             context.CancelFunc
	wg                 sync.WaitGroup

	mu            sync.Mutex
	acked         map[string]bool // the emails of acknowledged submissions
	statuses      map[int]int
	bad           []string
	first, last   time.Time // the first and the last answer that was not a 201
	failed, total int
}

// Start starts n writers.
func Start(c *apitest.Client, pageID, audienceID string, n int) *Writers {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writers{c: c, pageID: pageID, audienceID: audienceID, cancel: cancel,
		acked: map[string]bool{}, statuses: map[int]int{}}
	for i := range n {
		w.wg.Add(1)
		go func() { defer w.wg.Done(); w.write(ctx, i) }()
	}
	return w
}

// Stop stops the writers and waits for their requests in flight. It may be called again.
func (w *Writers) Stop() {
	w.cancel()
	w.wg.Wait()
}

func (w *Writers) write(ctx context.Context, n int) {
	for i := 0; ctx.Err() == nil; i++ {
		email := fmt.Sprintf("w%d-%d-%d@example.com", n, i, time.Now().UnixNano())
		//nolint:contextcheck // the client's calls take no context: the loop checks ctx between them
		r, err := w.c.Try("POST", "/v0/pages/"+w.pageID+"/audience_sessions", map[string]any{
			"analyticsSessionId": "fault-" + email, "audienceId": w.audienceID,
			"sessionStartedAt": timestamp.Format(time.Now()),
			"formSubmission":   map[string]any{"email": email, "name": "A Visitor"}})
		now := time.Now()
		w.mu.Lock()
		w.total++
		switch {
		case err != nil:
			w.bad = append(w.bad, err.Error())
		default:
			w.statuses[r.Status]++
			if r.Status == 201 {
				w.acked[email] = true
			} else if r.Status != 503 {
				w.bad = append(w.bad, r.String())
			}
		}
		if err != nil || r.Status != 201 {
			w.failed++
			if w.first.IsZero() {
				w.first = now
			}
			w.last = now
		}
		w.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Acknowledged is the number of submissions acknowledged so far.
func (w *Writers) Acknowledged() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// Result is what the writers saw.
type Result struct {
	// Acked holds the emails of the acknowledged submissions.
	Acked map[string]bool
	// Statuses counts the answers by HTTP status.
	Statuses map[int]int
	// Bad lists the answers that were neither 201 nor 503 in the envelope, and transport
	// errors.
	Bad []string
	// Writes is the number of submissions sent; Failed of them were not acknowledged.
	Writes, Failed int
	// FirstFailure and LastFailure are when the first and the last answer that was not a
	// 201 came (zero when every write was acknowledged).
	FirstFailure, LastFailure time.Time
}

// Result returns what the writers saw so far (call Stop first for the final result).
func (w *Writers) Result() Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	acked := make(map[string]bool, len(w.acked))
	for k, v := range w.acked {
		acked[k] = v
	}
	statuses := make(map[int]int, len(w.statuses))
	for k, v := range w.statuses {
		statuses[k] = v
	}
	return Result{Acked: acked, Statuses: statuses, Bad: append([]string(nil), w.bad...),
		Writes: w.total, Failed: w.failed, FirstFailure: w.first, LastFailure: w.last}
}

// CheckAnswers fails the test for every answer that was neither 201 nor 503 in the
// envelope (a 500 is never acceptable during an outage), and when fewer than minAcked
// submissions were acknowledged (the test would prove nothing).
func CheckAnswers(t testing.TB, r Result, minAcked int) {
	t.Helper()
	for i, b := range r.Bad {
		if i == 5 {
			t.Errorf("... %d answers in all were neither 201 nor 503 in the envelope", len(r.Bad))
			break
		}
		t.Errorf("every answer during an outage must be 201 or 503 in the envelope, never a 500: %s", b)
	}
	if len(r.Acked) < minAcked {
		t.Fatalf("only %d submissions were acknowledged: the test proves nothing", len(r.Acked))
	}
}

// Delivery is one webhook delivery as the receiver parsed it.
type Delivery struct {
	EventID string
	Payload map[string]any
}

// Missing counts the acknowledged submissions (by email) that lack their form.submitted
// and, of those that have it, their form.enriched among the deliveries; state describes
// the deliveries and one missing event.
func Missing(acked map[string]bool, deliveries []Delivery) (noSubmitted, noEnriched int, state string) {
	submitted := map[string]string{} // email → formSubmissionId
	enriched := map[string]bool{}    // formSubmissionId
	ids := map[string]bool{}
	for _, d := range deliveries {
		ids[d.EventID] = true
		p := d.Payload
		id, _ := p["formSubmissionId"].(string)
		switch p["type"] {
		case "form.submitted":
			if email, _ := p["email"].(string); acked[email] {
				submitted[email] = id
			}
		case "form.enriched":
			enriched[id] = true
		}
	}
	example := ""
	for email := range acked {
		id, ok := submitted[email]
		switch {
		case !ok:
			noSubmitted++
			example = "no form.submitted for " + email
		case !enriched[id]:
			noEnriched++
			example = "no form.enriched for " + email + " (" + id + ")"
		}
	}
	return noSubmitted, noEnriched, fmt.Sprintf("%d distinct events received; %s", len(ids), example)
}

// WaitDelivered waits up to within for every acknowledged submission's form.submitted and
// form.enriched among the deliveries (read again on every check), and fails the test,
// saying what is missing, if they do not all come.
func WaitDelivered(t testing.TB, within time.Duration, acked map[string]bool, deliveries func() []Delivery) {
	t.Helper()
	testwait.For(t, within, "every acknowledged submission's form.submitted and form.enriched at the receiver", func() (bool, string) {
		a, b, state := Missing(acked, deliveries())
		return a == 0 && b == 0, fmt.Sprintf("%d of %d acknowledged submissions lack form.submitted, %d form.enriched; %s",
			a, len(acked), b, state)
	})
}
