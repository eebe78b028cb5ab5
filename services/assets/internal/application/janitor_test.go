package application_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/service/servicetest"
	"github.com/customerapi/platform/libs/testwait"
	"github.com/customerapi/platform/services/assets/internal/application"
)

// Two replicas run the janitor on one database: trashed assets past the retention are
// deleted (bytes removed, record kept) exactly once each; active ones are untouched.
func TestTrashIsPurgedAfterTheRetention(t *testing.T) {
	settings := map[string]string{"ASSETS_TRASH_RETENTION": "300ms", "ASSETS_JANITOR_INTERVAL": "50ms"}
	e := start(t, settings)
	vars := map[string]string{"SIGNING_KEY": signingKey, "ASSETS_STORAGE_DIR": e.dir}
	for k, v := range settings {
		vars[k] = v
	}
	servicetest.Start(t, application.Name, application.Migrations, application.Setup,
		servicetest.Options{DatabaseURL: e.svc.DatabaseURL, Broker: e.svc.Broker, Env: vars})
	c := e.client(t, "acme")
	var trashed, active []string
	for i := range 10 {
		id := mustStatus(t, upload(c, file(fmt.Sprint(i, ".png"), pngImage(8, 8)), field("type", "image")), 201)["assetId"].(string)
		if i < 8 {
			mustStatus(t, c.Do("POST", "/v0/assets/"+id+"/trash", nil), 200)
			trashed = append(trashed, id)
		} else {
			active = append(active, id)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, id := range trashed {
		var a map[string]any
		testwait.For(t, time.Until(deadline), id+" to be purged", func() (bool, string) {
			a = mustStatus(t, c.Do("GET", "/v0/assets/"+id, nil), 200)
			return a["lifecycleState"] == "deleted", fmt.Sprint(a["lifecycleState"])
		})
		if a["trashedAt"] == nil || a["deletedAt"] == nil || a["downloadUrl"] != nil {
			t.Fatalf("purged = %v", a)
		}
	}
	for _, id := range active {
		if s := mustStatus(t, c.Do("GET", "/v0/assets/"+id, nil), 200)["lifecycleState"]; s != "active" {
			t.Fatalf("active asset became %v", s)
		}
	}
	testwait.For(t, 10*time.Second, "the purged assets' objects and cleanup records to be removed", func() (bool, string) {
		objects, cleanups := len(e.objects(t)), e.count(t, "SELECT count(*) FROM object_cleanup")
		return objects == 2*len(active) && cleanups == 0, fmt.Sprintf("%d objects (want %d), %d cleanup records left",
			objects, 2*len(active), cleanups)
	})
	evs := readEvents(t, e.svc.Broker, 10+8+8)
	deleted := map[string]int{}
	for _, ev := range evs {
		if ev.Type == "asset.deleted" {
			var p map[string]any
			_ = json.Unmarshal(ev.Payload, &p)
			if p["reason"] != "retention" {
				t.Fatalf("payload %v", p)
			}
			deleted[ev.Subject]++
		}
	}
	if len(deleted) != len(trashed) {
		t.Fatalf("asset.deleted for %d assets, want %d", len(deleted), len(trashed))
	}
	for id, n := range deleted {
		if n != 1 {
			t.Fatalf("%s deleted %d times", id, n)
		}
	}
}

// Within the retention a trashed asset stays in the trash however often the janitor runs.
func TestTrashWithinTheRetentionIsKept(t *testing.T) {
	e := start(t, map[string]string{"ASSETS_TRASH_RETENTION": "1h", "ASSETS_JANITOR_INTERVAL": "20ms"})
	c := e.client(t, "acme")
	id := mustStatus(t, upload(c, file("a.png", pngImage(8, 8)), field("type", "image")), 201)["assetId"].(string)
	mustStatus(t, c.Do("POST", "/v0/assets/"+id+"/trash", nil), 200)
	janitorRuns(t, e, 3)
	if s := mustStatus(t, c.Do("GET", "/v0/assets/"+id, nil), 200)["lifecycleState"]; s != "trashed" {
		t.Fatalf("state %v", s)
	}
}

// janitorRuns waits until the janitor has run n more times: each run purges, then removes
// the objects whose cleanup is due, so it waits for n cleanup records, due now and added
// one after the other, to be taken. The first may go in a run whose purge had begun
// already; each of the others in a later run, purge included.
func janitorRuns(t *testing.T, e *env, n int) {
	t.Helper()
	for i := range n {
		key := fmt.Sprintf("janitor-witness/%d-%d", time.Now().UnixNano(), i)
		if _, err := e.svc.Runtime.Pool.Exec(t.Context(),
			`INSERT INTO object_cleanup (tenant_id, object_key, due_at) VALUES ('acme', $1, now() - interval '1 second')`, key); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 10*time.Second, fmt.Sprintf("janitor run %d of %d (cleanup record %s taken)", i+1, n, key), func() (bool, string) {
			left := e.count(t, "SELECT count(*) FROM object_cleanup WHERE object_key = '"+key+"'")
			return left == 0, fmt.Sprintf("%d records of %s left", left, key)
		})
	}
}
