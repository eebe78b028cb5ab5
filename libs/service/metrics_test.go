package service_test

import (
	"strings"
	"testing"

	"github.com/customerapi/platform/libs/service/servicetest"
)

// Every service exports, without any code of its own: its build, its pool, its producer
// and its relay.
func TestEveryServiceExportsThePlatformMetrics(t *testing.T) {
	s := servicetest.Start(t, "whoami", nil, whoami, servicetest.Options{})
	status, body := get(t, s.MetricsURL+"/metrics", nil)
	if status != 200 {
		t.Fatalf("/metrics = %d", status)
	}
	text := string(body)
	for _, want := range []string{
		`customerapi_build_info{go_version="go`,
		`pgxpool_acquired_connections{pool="whoami"}`,
		`pgxpool_idle_connections{pool="whoami"}`,
		`pgxpool_max_connections{pool="whoami"}`,
		`pgxpool_waiting_acquires{pool="whoami"} 0`,
		`pgxpool_acquire_duration_seconds_count{pool="whoami"}`,
		`kafka_producer_messages_total 0`,
		`outbox_oldest_pending_seconds 0`,
		`outbox_relay_batch_duration_seconds_count 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(text, `service="whoami"`) {
		t.Errorf("customerapi_build_info lacks the service label")
	}
}
