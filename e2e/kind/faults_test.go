package kind

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/customerapi/platform/e2e/faultload"
	"github.com/customerapi/platform/libs/testwait"
)

// receiver is a webhook endpoint on $E2E_RECEIVER_HOST that records every delivery.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []faultload.Delivery
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = faultload.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var d struct {
			EventID string         `json:"eventId"`
			Payload map[string]any `json:"payload"`
		}
		if err := json.Unmarshal(body, &d); err != nil {
			http.Error(w, "not a webhook delivery", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.got = append(rc.got, faultload.Delivery{EventID: d.EventID, Payload: d.Payload})
		rc.mu.Unlock()
	}))
	return rc
}

func (rc *receiver) deliveries() []faultload.Delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]faultload.Delivery(nil), rc.got...)
}

// A service's pod deleted while form submissions keep arriving: the gateway answers 503
// until the Deployment's new pod is Ready, and nothing acknowledged is lost.
func TestFaultServicePodDeletedUnderWrites(t *testing.T) {
	podDeletedUnderWrites(t, env(t), "pages")
}

// The PostgreSQL pod deleted under writes: every service answers 503 until the
// StatefulSet's new pod is Ready on the same volume, and nothing acknowledged is lost.
func TestFaultPostgresPodDeletedUnderWrites(t *testing.T) {
	podDeletedUnderWrites(t, env(t), "postgresql")
}

// podDeletedUnderWrites writes form submissions through the gateway, deletes the pods of
// a component once writes are acknowledged, waits for its new pods and for writes to be
// acknowledged again, and holds the whole to faultload's rules.
func podDeletedUnderWrites(t *testing.T, k *cluster, name string) {
	sel := component(name)
	old, err := k.pods(sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(old) == 0 {
		t.Fatalf("no pod of %s to delete", name)
	}
	c := k.api(t)
	rc := newReceiver(t)
	pageID, audienceID := faultload.Prepare(t, c, rc.URL)
	w := faultload.Start(c, pageID, audienceID, 2)
	defer w.Stop()
	testwait.For(t, time.Minute, "20 acknowledged submissions before the fault", func() (bool, string) {
		n := w.Acknowledged()
		return n >= 20, fmt.Sprintf("%d acknowledged", n)
	})

	began := time.Now()
	if _, err := k.kubectl(time.Minute, append([]string{"delete", "pod", "--wait=false"}, names(old)...)...); err != nil {
		t.Fatal(err)
	}
	fresh := k.waitReplaced(t, sel, old, len(old), 3*time.Minute)
	ready := time.Since(began)
	// Writes are acknowledged again: 20 more after the new pods are Ready.
	after := w.Acknowledged()
	testwait.For(t, 2*time.Minute, "20 more acknowledged submissions after the new pods are Ready", func() (bool, string) {
		n := w.Acknowledged() - after
		return n >= 20, fmt.Sprintf("%d acknowledged since", n)
	})
	w.Stop()
	r := w.Result()
	faultload.CheckAnswers(t, r, 20)

	// Nothing acknowledged is lost: every submission's two events reach the receiver.
	var noSub, noEnr int
	var state string
	delivered := testwait.Until(3*time.Minute, func() bool {
		noSub, noEnr, state = faultload.Missing(r.Acked, rc.deliveries())
		return noSub == 0 && noEnr == 0
	})
	report(t, "pod of "+name+" deleted ("+strings.Join(names(old), ",")+" -> "+strings.Join(names(fresh), ",")+")",
		r, began, ready, noSub+noEnr)
	if !delivered {
		t.Fatalf("%d of %d acknowledged submissions lack form.submitted, %d form.enriched after 3m; %s",
			noSub, len(r.Acked), noEnr, state)
	}
}

// report prints a fault's numbers on one line starting with "FAULT " (the harness
// collects them): the writes, what was acknowledged, lost and answered 503, and how long
// the writers met failures (the recovery: from the fault to the last failed write).
func report(t *testing.T, what string, r faultload.Result, began time.Time, ready time.Duration, lost int) {
	t.Helper()
	recovery := "none failed"
	if !r.LastFailure.IsZero() {
		recovery = fmt.Sprintf("%s (failures from +%s to +%s)", secs(r.LastFailure.Sub(began)),
			secs(r.FirstFailure.Sub(began)), secs(r.LastFailure.Sub(began)))
	}
	line := fmt.Sprintf("FAULT %s: writes=%d acknowledged=%d lost=%d 503s=%d other=%d answers=%v pods Ready after %s; recovery %s",
		what, r.Writes, len(r.Acked), lost, r.Statuses[503], len(r.Bad), r.Statuses, secs(ready), recovery)
	t.Log(line)
	fmt.Println(line)
}
