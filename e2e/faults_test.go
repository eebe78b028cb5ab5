package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/devstack"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/libs/timestamp"
)

// The dependency-outage suite: while form submissions keep arriving through the gateway,
// a dependency goes away for a while and comes back. Every submission the API
// acknowledged (201) must then reach the tenant's receiver twice, as form.submitted
// (pages → Kafka → webhooks' intake) and form.enriched (persons' enrichment consumer →
// persons' outbox → Kafka → webhooks), counted by eventId so redeliveries do not count
// twice; and no answer may be a 500: a write that meets the outage gets 503. The same
// outage at 120 s must give the same result as at 30 s.

// outage is one fault: begin takes a dependency away, end brings it back.
type outage struct {
	begin, end func(ctx context.Context, s *devstack.Stack) error
}

// do runs one step of the outage within a minute.
func (o outage) do(step func(context.Context, *devstack.Stack) error, s *devstack.Stack) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return step(ctx, s)
}

// refuse is an outage of service databases that refuse connections (their backends ended).
func refuse(databases ...string) outage {
	each := func(f func(*devstack.Stack, context.Context, string) error) func(context.Context, *devstack.Stack) error {
		return func(ctx context.Context, s *devstack.Stack) error {
			for _, db := range databases {
				if err := f(s, ctx, db); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return outage{begin: each((*devstack.Stack).RefuseConnections), end: each((*devstack.Stack).AllowConnections)}
}

// brokerDown is an outage of the Kafka broker (stopped, then started on the same port with
// its data).
var brokerDown = outage{
	begin: func(_ context.Context, s *devstack.Stack) error { s.StopBroker(); return nil },
	end:   func(_ context.Context, s *devstack.Stack) error { return s.StartBroker() },
}

func TestFaultConsumersDatabasesRefuseConnections30s(t *testing.T) {
	faultRun(t, refuse("webhooks", "persons"), 30*time.Second)
}

func TestFaultConsumersDatabasesRefuseConnections120s(t *testing.T) {
	faultRun(t, refuse("webhooks", "persons"), 120*time.Second)
}

func TestFaultProducerDatabaseRefusesConnections30s(t *testing.T) {
	faultRun(t, refuse("pages"), 30*time.Second)
}

func TestFaultBrokerUnreachable30s(t *testing.T) {
	faultRun(t, brokerDown, 30*time.Second)
}

// faultRun writes form submissions at about 10 a second for 5 s, through the outage of
// the given length, and for 5 s after it; then it waits for every acknowledged one's two
// events at the receiver.
func faultRun(t *testing.T, o outage, length time.Duration) {
	s := local(t)
	tenant := fmt.Sprintf("fault%d", time.Now().UnixNano())
	c := api(t, newKey(t, map[string]any{"tenantIds": []string{tenant},
		"rateLimit": map[string]any{"limit": 100000, "windowMs": 1000}}))
	whNeed(t, c, "/v0/pages", "pages")
	rc := newWhReceiver(t, nil)
	whSubscribe(t, c, map[string]any{"url": rc.URL, "events": []string{"form.submitted", "form.enriched"}})
	page := must(t, c.Do("POST", "/v0/pages", map[string]any{"name": "Faults e2e", "title": "Faults",
		"pageContext": "A page whose forms are submitted through an outage", "brandId": "brand_e2e", "pageType": "inbound"}), 201)
	pageID := page["pageId"].(string)
	aud := must(t, c.Do("POST", "/v0/pages/"+pageID+"/audiences", map[string]any{"publishBehavior": "publish"}), 201)
	audienceID := aud["audienceId"].(string)

	w := &faultWriters{c: c, pageID: pageID, audienceID: audienceID, acked: map[string]bool{}, statuses: map[int]int{}}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for n := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); w.write(ctx, n) }()
	}
	defer wg.Wait()
	defer stop()

	time.Sleep(5 * time.Second)
	begin := w.count()
	if err := o.do(o.begin, s); err != nil {
		t.Fatal(err)
	}
	ended := false
	defer func() {
		if !ended {
			_ = o.do(o.end, s)
		}
	}()
	time.Sleep(length)
	if err := o.do(o.end, s); err != nil {
		t.Fatal(err)
	}
	ended = true
	during := w.count() - begin
	time.Sleep(5 * time.Second)
	stop()
	wg.Wait()

	acked, statuses, bad := w.result()
	t.Logf("%d submissions acknowledged (%d while the dependency was away); answers %v", len(acked), during, statuses)
	for i, b := range bad {
		if i == 5 {
			t.Errorf("... %d answers in all were neither 201 nor 503 in the envelope", len(bad))
			break
		}
		t.Errorf("every answer during an outage must be 201 or 503 in the envelope, never a 500: %s", b)
	}
	if len(acked) < 20 {
		t.Fatalf("only %d submissions were acknowledged: the test proves nothing", len(acked))
	}
	missing := func() (int, int, string) {
		submitted := map[string]string{} // email → formSubmissionId
		enriched := map[string]bool{}    // formSubmissionId
		ids := map[string]bool{}
		for _, d := range rc.all() {
			ids[d.parsed.EventID] = true
			p := d.parsed.Payload
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
		noSubmitted, noEnriched, example := 0, 0, ""
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
	testwait.For(t, 3*time.Minute, "every acknowledged submission's form.submitted and form.enriched at the receiver", func() (bool, string) {
		a, b, state := missing()
		return a == 0 && b == 0, fmt.Sprintf("%d of %d acknowledged submissions lack form.submitted, %d form.enriched; %s",
			a, len(acked), b, state)
	})
}

// faultWriters submit forms until their context ends, recording what was acknowledged.
type faultWriters struct {
	c                  *apitest.Client
	pageID, audienceID string

	mu       sync.Mutex
	acked    map[string]bool // the emails of acknowledged submissions
	statuses map[int]int
	bad      []string
}

func (w *faultWriters) write(ctx context.Context, n int) {
	for i := 0; ctx.Err() == nil; i++ {
		email := fmt.Sprintf("w%d-%d-%d@example.com", n, i, time.Now().UnixNano())
		//nolint:contextcheck // the client's calls take no context: the loop checks ctx between them
		r, err := w.c.Try("POST", "/v0/pages/"+w.pageID+"/audience_sessions", map[string]any{
			"analyticsSessionId": "fault-" + email, "audienceId": w.audienceID,
			"sessionStartedAt": timestamp.Format(time.Now()),
			"formSubmission":   map[string]any{"email": email, "name": "A Visitor"}})
		w.mu.Lock()
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
		w.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (w *faultWriters) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func (w *faultWriters) result() (map[string]bool, map[int]int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked, w.statuses, w.bad
}
