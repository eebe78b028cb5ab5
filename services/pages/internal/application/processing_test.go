package application_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/api/apitypes"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/services/pages/internal/adapters"
	"github.com/customerapi/platform/services/pages/internal/app"
	"github.com/customerapi/platform/services/pages/internal/domain"
)

// message is one event as read from Kafka, with its key and partition.
type message struct {
	events.Envelope
	Key       string
	Partition int
}

// readPages reads pages.events from the start until n distinct events of the given types
// are seen, then briefly for more (to catch a second event for the same step). Delivery is
// at least once, so a redelivery of the same event ID (the relay stopped between publish
// and delete) is dropped here as every consumer drops it.
func readPages(t *testing.T, b *kafkatest.Broker, n int, types ...string) []message {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr}, GroupID: fmt.Sprint("reader-", time.Now().UnixNano()),
		Topic: events.TopicPages, StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	want := map[string]bool{}
	for _, typ := range types {
		want[typ] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []message
	seen := map[string]bool{}
	extra := time.Time{}
	for {
		rctx := ctx
		if len(out) >= n {
			if extra.IsZero() {
				extra = time.Now().Add(time.Second)
			}
			var c context.CancelFunc
			rctx, c = context.WithDeadline(ctx, extra)
			defer c()
		}
		m, err := r.ReadMessage(rctx)
		if err != nil {
			if len(out) >= n && errors.Is(err, context.DeadlineExceeded) {
				return out
			}
			t.Fatalf("read %d of %d events: %v", len(out), n, err)
		}
		e, err := events.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		if want[e.Type] && !seen[e.ID] {
			seen[e.ID] = true
			out = append(out, message{Envelope: e, Key: string(m.Key), Partition: m.Partition})
		}
	}
}

// Events of one audience arrive in lifecycle order, keyed by the audience ID (so on one
// partition), with the spec's page.version.created payload.
func TestVersionEventsInOrderPerAudience(t *testing.T) {
	s := start(t, servicetest.Options{})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	const audiences, versions = 3, 3
	var aids []string
	for i := 0; i < audiences; i++ {
		aid := createAudience(t, c, pageID, nil).AudienceId
		aids = append(aids, aid)
		for j := 1; j < versions; j++ {
			mustStatus(t, c.Do("POST", fmt.Sprintf("/v0/pages/%s/audiences/%s/versions", pageID, aid), nil), 201)
		}
	}
	for _, aid := range aids {
		waitAudience(t, c, pageID, aid, func(a apitypes.Audience) bool {
			return a.PublishedVersion != nil && a.PublishedVersion.VersionNumber == versions
		})
	}
	got := readPages(t, s.Broker, audiences*versions*3, events.TypePageVersionCreated, events.TypePageVersionProcessed,
		events.TypePageVersionPublished)
	if len(got) != audiences*versions*3 {
		t.Fatalf("got %d events, want %d (a duplicate?)", len(got), audiences*versions*3)
	}
	type step struct{ typ, versionID string }
	perAudience := map[string][]step{}
	partition := map[string]int{}
	versionAudience := map[string]string{}
	for _, m := range got {
		if m.Key != m.Subject || m.TenantID != "acme" {
			t.Fatalf("event %+v keyed %q", m.Envelope, m.Key)
		}
		if p, ok := partition[m.Key]; ok && p != m.Partition {
			t.Fatalf("audience %s on partitions %d and %d", m.Key, p, m.Partition)
		}
		partition[m.Key] = m.Partition
		checkEventPayload(t, m.Type, m.Payload)
		var body map[string]any
		if err := json.Unmarshal(m.Payload, &body); err != nil {
			t.Fatal(err)
		}
		if body["type"] != m.Type || body["pageId"] != pageID {
			t.Fatalf("payload %v", body)
		}
		vid := body["versionId"].(string)
		if m.Type == events.TypePageVersionCreated {
			keys := make([]string, 0, len(body))
			for k := range body {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if fmt.Sprint(keys) != "[createdAt pageId type versionId]" {
				t.Fatalf("created payload has %v", keys)
			}
			versionAudience[vid] = m.Key
		} else if body["audienceId"] != m.Key || body["versionNumber"] == nil || body["status"] != "published" {
			t.Fatalf("payload %v keyed %s", body, m.Key)
		}
		perAudience[m.Key] = append(perAudience[m.Key], step{m.Type, vid})
	}
	for aid, steps := range perAudience {
		pos := map[step]int{}
		var processed []string
		for i, st := range steps {
			pos[st] = i
			if st.typ == events.TypePageVersionProcessed {
				processed = append(processed, st.versionID)
			}
		}
		if len(steps) != versions*3 {
			t.Fatalf("audience %s has %d events", aid, len(steps))
		}
		for vid, owner := range versionAudience {
			if owner != aid {
				continue
			}
			c, p, pub := pos[step{events.TypePageVersionCreated, vid}], pos[step{events.TypePageVersionProcessed, vid}],
				pos[step{events.TypePageVersionPublished, vid}]
			if c >= p || p >= pub {
				t.Fatalf("audience %s version %s out of order: %v", aid, vid, steps)
			}
		}
		// Versions finish in creation order (TypeIDs sort by creation).
		if !sort.StringsAreSorted(processed) {
			t.Fatalf("audience %s processed out of order: %v", aid, processed)
		}
	}
}

// A worker that dies mid-processing (it claimed a version and never finished it) loses
// nothing: after a restart, the version's lease expires, another worker processes it
// once, and the dead worker's late finish changes nothing.
func TestWorkerRestartMidProcessing(t *testing.T) {
	// First run: no workers, so the version stays queued; a "worker" claims it and dies.
	first := start(t, servicetest.Options{Env: map[string]string{"PAGES_WORKERS": "0"}})
	c := client(t, first, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	a := createAudience(t, c, pageID, nil)
	aid, vid := a.AudienceId, versionID(a.LatestVersion)
	store := adapters.NewStore(first.Runtime.Pool, first.Runtime.Outbox)
	ctx := context.Background()
	dead, err := store.Claim(ctx, time.Now(), 700*time.Millisecond)
	if err != nil || dead.VersionID != vid {
		t.Fatalf("claim = %+v, %v", dead, err)
	}
	if got := getAudience(t, c, pageID, aid); got.Status != "processing" {
		t.Fatalf("audience while claimed = %+v", got)
	}
	// While the lease runs, nobody else takes the version.
	if _, err := store.Claim(ctx, time.Now(), time.Second); !errors.Is(err, domain.ErrNothingToProcess) {
		t.Fatalf("second claim during the lease: %v", err)
	}
	first.Stop()

	// Restart on the same database and broker, with workers.
	second := start(t, servicetest.Options{DatabaseURL: first.DatabaseURL, Broker: first.Broker,
		Env: map[string]string{"PAGES_VERSION_LEASE": "5s"}})
	c2 := client(t, second, "acme")
	done := waitAudience(t, c2, pageID, aid, status("published"))
	if pv := done.PublishedVersion; versionID(pv) != vid || pv.QueueDurationMs == nil {
		t.Fatalf("published = %+v", done)
	}
	var attempts int
	if err := second.Runtime.Pool.QueryRow(ctx, "SELECT attempts FROM audience_versions WHERE id = $1", vid).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if attempts != 2 {
		t.Fatalf("attempts = %d, want 2 (the dead claim and the takeover)", attempts)
	}
	// The dead worker wakes up and tries to finish: fenced off.
	if _, err := adapters.NewStore(second.Runtime.Pool, second.Runtime.Outbox).Finish(ctx, dead, time.Now()); !errors.Is(err, domain.ErrLeaseLost) {
		t.Fatalf("late finish = %v, want ErrLeaseLost", err)
	}
	got := readPages(t, second.Broker, 3, events.TypePageVersionCreated, events.TypePageVersionProcessed, events.TypePageVersionPublished)
	if len(got) != 3 || got[0].Type != events.TypePageVersionCreated || got[1].Type != events.TypePageVersionProcessed ||
		got[2].Type != events.TypePageVersionPublished {
		var types []string
		for _, m := range got {
			types = append(types, m.Type)
		}
		t.Fatalf("events = %v, want created, processed, published once each", types)
	}
}

// Two replicas on one database share the queue: every version is processed exactly
// once (one claim each, one processed event each).
func TestTwoReplicasProcessEachVersionOnce(t *testing.T) {
	a := start(t, servicetest.Options{Env: map[string]string{"PAGES_WORKERS": "2"}})
	b := start(t, servicetest.Options{DatabaseURL: a.DatabaseURL, Broker: a.Broker, Env: map[string]string{"PAGES_WORKERS": "2"}})
	ca, cb := client(t, a, "acme"), client(t, b, "acme")
	pageID := createPage(t, ca, nil)["pageId"].(string)
	const n = 8
	var aids []string
	for i := 0; i < n; i++ {
		c := ca
		if i%2 == 1 {
			c = cb
		}
		aids = append(aids, createAudience(t, c, pageID, nil).AudienceId)
	}
	for _, aid := range aids {
		waitAudience(t, ca, pageID, aid, status("published"))
	}
	var maxAttempts int
	if err := a.Runtime.Pool.QueryRow(context.Background(), "SELECT max(attempts) FROM audience_versions").Scan(&maxAttempts); err != nil {
		t.Fatal(err)
	}
	if maxAttempts != 1 {
		t.Fatalf("a version was claimed %d times", maxAttempts)
	}
	got := readPages(t, a.Broker, n, events.TypePageVersionProcessed)
	if len(got) != n {
		t.Fatalf("%d processed events for %d versions", len(got), n)
	}
}

// A version whose processing fails every time is cancelled after MaxAttempts claims,
// with a processed event saying so, instead of being retried forever.
func TestFailingVersionIsCancelled(t *testing.T) {
	s := start(t, servicetest.Options{Env: map[string]string{"PAGES_WORKERS": "0"}})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	aid := createAudience(t, c, pageID, nil).AudienceId
	w := &app.Worker{Store: adapters.NewStore(s.Runtime.Pool, s.Runtime.Outbox), Log: s.Runtime.Log, Lease: time.Millisecond,
		Wakeups: adapters.Listener{Pool: s.Runtime.Pool, Poll: time.Second, Log: s.Runtime.Log},
		Process: func(context.Context, domain.Claim) error { return errors.New("generation failed") }}
	for i := 0; i < domain.MaxAttempts; i++ {
		if _, err := w.Step(context.Background()); err == nil {
			t.Fatalf("attempt %d did not fail", i+1)
		}
		time.Sleep(5 * time.Millisecond) // let the lease run out
	}
	if done, err := w.Step(context.Background()); !done || err != nil {
		t.Fatalf("giving up: %v, %v", done, err)
	}
	a := getAudience(t, c, pageID, aid)
	if v := a.LatestVersion; a.Status != "cancelled" || v == nil || v.Status != "cancelled" || v.CancelledAt == nil {
		t.Fatalf("audience = %+v", a)
	}
	got := readPages(t, s.Broker, 1, events.TypePageVersionProcessed)
	checkEventPayload(t, got[0].Type, got[0].Payload)
	var body map[string]any
	if err := json.Unmarshal(got[0].Payload, &body); err != nil || body["status"] != "cancelled" {
		t.Fatalf("processed = %s", got[0].Payload)
	}
}

// Shutdown beginning while a step claims never strands the version under a lease the
// dead step holds: the claim and the finish both complete, so the version is processed.
func TestStepUnderShutdownFinishesWhatItClaims(t *testing.T) {
	s := start(t, servicetest.Options{Env: map[string]string{"PAGES_WORKERS": "0"}})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	aid := createAudience(t, c, pageID, nil).AudienceId
	w := &app.Worker{Store: adapters.NewStore(s.Runtime.Pool, s.Runtime.Outbox), Log: s.Runtime.Log, Lease: time.Hour,
		Wakeups: adapters.Listener{Pool: s.Runtime.Pool, Poll: time.Second, Log: s.Runtime.Log}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if done, err := w.Step(ctx); !done || err != nil {
		t.Fatalf("step under shutdown: %v, %v", done, err)
	}
	a := mustStatus(t, c.Do("GET", fmt.Sprintf("/v0/pages/%s/audiences/%s", pageID, aid), nil), 200)
	if a["status"] != "published" {
		t.Fatalf("audience after the step = %v", a)
	}
}

// Archiving an audience cancels its queued version at once, and a version being
// processed at that moment ends cancelled when its worker finishes.
func TestArchiveCancelsVersions(t *testing.T) {
	s := start(t, servicetest.Options{Env: map[string]string{"PAGES_WORKERS": "0"}})
	c := client(t, s, "acme")
	store := adapters.NewStore(s.Runtime.Pool, s.Runtime.Outbox)
	ctx := context.Background()
	pageID := createPage(t, c, nil)["pageId"].(string)

	queued := createAudience(t, c, pageID, nil).AudienceId
	a := apitest.Decode[apitypes.Audience](t, c.Do("POST", fmt.Sprintf("/v0/pages/%s/audiences/%s/archive", pageID, queued), map[string]any{}),
		200, "an audience with a queued version archives")
	if v := a.LatestVersion; a.Status != "archived" || v == nil || v.Status != "cancelled" || v.CancelledAt == nil {
		t.Fatalf("archived with a queued version = %+v", a)
	}
	if _, err := store.Claim(ctx, time.Now(), time.Minute); !errors.Is(err, domain.ErrNothingToProcess) {
		t.Fatalf("a cancelled version was claimed: %v", err)
	}

	busy := createAudience(t, c, pageID, nil).AudienceId
	claim, err := store.Claim(ctx, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, c.Do("POST", fmt.Sprintf("/v0/pages/%s/audiences/%s/archive", pageID, busy), nil), 200)
	v, err := store.Finish(ctx, claim, time.Now())
	if err != nil || v.Status != domain.StatusCancelled || v.CancelledAt == nil {
		t.Fatalf("finish after archive = %+v, %v", v, err)
	}
	a = getAudience(t, c, pageID, busy)
	if a.Status != "archived" || a.PublishedVersion != nil || a.LatestVersion == nil || a.LatestVersion.Status != "cancelled" {
		t.Fatalf("audience = %+v", a)
	}
	// Both versions reach a final event: processed with status cancelled, one each.
	got := readPages(t, s.Broker, 2, events.TypePageVersionProcessed)
	keys := map[string]int{}
	for _, m := range got {
		checkEventPayload(t, m.Type, m.Payload)
		var body map[string]any
		if err := json.Unmarshal(m.Payload, &body); err != nil || body["status"] != "cancelled" || body["audienceId"] != m.Key {
			t.Fatalf("processed = %s keyed %s", m.Payload, m.Key)
		}
		keys[m.Key]++
	}
	if len(got) != 2 || keys[queued] != 1 || keys[busy] != 1 {
		t.Fatalf("processed events per audience = %v, want one for %s and one for %s", keys, queued, busy)
	}
}

// runWorker runs w until the test ends.
func runWorker(t *testing.T, w *app.Worker) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { _ = w.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
}

// countingQueue counts the claims a worker makes.
type countingQueue struct {
	domain.Queue
	claims atomic.Int64
}

func (q *countingQueue) Claim(ctx context.Context, now time.Time, lease time.Duration) (domain.Claim, error) {
	q.claims.Add(1)
	return q.Queue.Claim(ctx, now, lease)
}

// A new version wakes one of a replica's worker goroutines, not all of them: with four
// goroutines, a version made while they are idle costs two claims (its own, and the one
// that finds nothing more), not one per goroutine.
func TestANewVersionWakesOneWorkerGoroutine(t *testing.T) {
	s := start(t, servicetest.Options{Env: map[string]string{"PAGES_WORKERS": "0"}})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	q := &countingQueue{Queue: adapters.NewStore(s.Runtime.Pool, s.Runtime.Outbox)}
	w := &app.Worker{Store: q, Goroutines: 4, Log: s.Runtime.Log, Lease: time.Minute,
		Wakeups: adapters.Listener{Pool: s.Runtime.Pool, Poll: time.Hour, Log: s.Runtime.Log}}
	runWorker(t, w)

	// The listener's first look at the queue finds it empty.
	for deadline := time.Now().Add(5 * time.Second); q.claims.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker never looked at the queue")
		}
	}
	const versions = 6
	for i := range versions {
		before := q.claims.Load()
		aid := createAudience(t, c, pageID, nil).AudienceId
		waitAudience(t, c, pageID, aid, status("published"))
		time.Sleep(50 * time.Millisecond) // let every woken goroutine finish its claims
		if got := q.claims.Load() - before; got != 2 {
			t.Fatalf("version %d took %d claims with 4 idle goroutines, want 2 (one goroutine woken, not all)", i+1, got)
		}
	}
}

// A backlog is shared: the goroutine that finds a second version waiting wakes another,
// so a replica's goroutines process a backlog side by side.
func TestABacklogWakesTheOtherWorkerGoroutines(t *testing.T) {
	s := start(t, servicetest.Options{Env: map[string]string{"PAGES_WORKERS": "0"}})
	c := client(t, s, "acme")
	pageID := createPage(t, c, nil)["pageId"].(string)
	var aids []string
	for range 8 {
		aids = append(aids, createAudience(t, c, pageID, nil).AudienceId)
	}
	var running, most atomic.Int64
	w := &app.Worker{Store: adapters.NewStore(s.Runtime.Pool, s.Runtime.Outbox), Goroutines: 3, Log: s.Runtime.Log,
		Lease: time.Minute, Wakeups: adapters.Listener{Pool: s.Runtime.Pool, Poll: time.Hour, Log: s.Runtime.Log},
		Process: func(context.Context, domain.Claim) error {
			now := running.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			// Hold the claim until the three have run at once (at most 5 s): a fixed 50 ms
			// let one goroutine finish before the third woke on a loaded machine.
			for deadline := time.Now().Add(5 * time.Second); most.Load() < 3 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			running.Add(-1)
			return nil
		}}
	runWorker(t, w)
	for _, aid := range aids {
		waitAudience(t, c, pageID, aid, status("published"))
	}
	if got := most.Load(); got != 3 {
		t.Fatalf("at most %d of 3 goroutines processed the backlog of 8 at once, want 3", got)
	}
}
