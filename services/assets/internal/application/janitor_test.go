package application_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/service/servicetest"
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
		for {
			a := mustStatus(t, c.Do("GET", "/v0/assets/"+id, nil), 200)
			if a["lifecycleState"] == "deleted" {
				if a["trashedAt"] == nil || a["deletedAt"] == nil || a["downloadUrl"] != nil {
					t.Fatalf("purged = %v", a)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still %v", id, a["lifecycleState"])
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, id := range active {
		if s := mustStatus(t, c.Do("GET", "/v0/assets/"+id, nil), 200)["lifecycleState"]; s != "active" {
			t.Fatalf("active asset became %v", s)
		}
	}
	deadline = time.Now().Add(10 * time.Second)
	for len(e.objects(t)) != 2*len(active) || e.count(t, "SELECT count(*) FROM object_cleanup") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d objects, %d cleanup records left", len(e.objects(t)), e.count(t, "SELECT count(*) FROM object_cleanup"))
		}
		time.Sleep(50 * time.Millisecond)
	}
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
	time.Sleep(300 * time.Millisecond)
	if s := mustStatus(t, c.Do("GET", "/v0/assets/"+id, nil), 200)["lifecycleState"]; s != "trashed" {
		t.Fatalf("state %v", s)
	}
}
