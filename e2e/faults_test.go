package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/customerapi/platform/e2e/faultload"
	"github.com/customerapi/platform/libs/devstack"
)

// The dependency-outage suite: while form submissions keep arriving through the gateway,
// a dependency goes away for a while and comes back. Every submission the API
// acknowledged (201) must then reach the tenant's receiver twice, as form.submitted
// (pages → Kafka → webhooks' intake) and form.enriched (persons' enrichment consumer →
// persons' outbox → Kafka → webhooks), counted by eventId so redeliveries do not count
// twice; and no answer may be a 500: a write that meets the outage gets 503. The same
// outage at 120 s must give the same result as at 30 s. The load and these rules are
// package faultload's, which the cluster's fault tests (e2e/kind) share.

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
// events at the receiver (the rules of package faultload).
func faultRun(t *testing.T, o outage, length time.Duration) {
	s := local(t)
	tenant := fmt.Sprintf("fault%d", time.Now().UnixNano())
	c := api(t, newKey(t, map[string]any{"tenantIds": []string{tenant},
		"rateLimit": map[string]any{"limit": 100000, "windowMs": 1000}}))
	whNeed(t, c, "/v0/pages", "pages")
	rc := newWhReceiver(t, nil)
	pageID, audienceID := faultload.Prepare(t, c, rc.URL)

	w := faultload.Start(c, pageID, audienceID, 2)
	defer w.Stop()

	time.Sleep(5 * time.Second)
	begin := w.Acknowledged()
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
	during := w.Acknowledged() - begin
	time.Sleep(5 * time.Second)
	w.Stop()

	r := w.Result()
	t.Logf("%d submissions acknowledged (%d while the dependency was away); answers %v", len(r.Acked), during, r.Statuses)
	faultload.CheckAnswers(t, r, 20)
	faultload.WaitDelivered(t, 3*time.Minute, r.Acked, rc.deliveries)
}
