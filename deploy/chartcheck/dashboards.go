package chartcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The Grafana dashboards of the chart (helm/customer-api/dashboards/*.json) are generated
// from the definitions below by `make dashboards` (cmd/dashboards), so that the panels of
// the five services are one definition and not five hand-synced copies; a test fails when
// a file differs from what the definitions make. Every expression is evaluated against a
// real Prometheus scraping the whole system by e2e/observability, which fails on a panel
// without data.

// DashboardsDir is where the chart keeps the dashboards, relative to the repository root.
const DashboardsDir = ChartDir + "/dashboards"

// Panel is one Grafana panel.
type Panel struct {
	Title       string
	Description string
	// Kind is "timeseries" (default), "stat" or "table".
	Kind string
	// Unit is Grafana's unit (reqps, s, percentunit, short, bytes, ...).
	Unit    string
	Targets []Target
	// Width in grid columns of 24 (default 12).
	Width int
}

// Target is one query of a panel.
type Target struct {
	Expr   string
	Legend string
}

// Dashboard is one dashboard: its panels laid out two per row.
type Dashboard struct {
	UID, Title, Description string
	// Service names the customerapi_build_info service whose jobs the $job variable
	// lists ("" for no $job variable).
	Service string
	Panels  []Panel
}

// Grafana's variables used in the expressions: the namespace, the job of a service, and
// the rate window Grafana derives from the scrape interval.
const (
	nsSel   = `namespace="$namespace"`
	jobSel  = `namespace="$namespace", job="$job"`
	rateWin = `$__rate_interval`
)

func sel(metric, labels string, extra ...string) string {
	all := append([]string{labels}, extra...)
	return metric + "{" + strings.Join(all, ", ") + "}"
}

func rateOf(metric, labels string, extra ...string) string {
	return "rate(" + sel(metric, labels, extra...) + "[" + rateWin + "])"
}

func p(q float64, by, metric, labels string, extra ...string) string {
	by = strings.TrimSpace(strings.Join([]string{by, "le"}, ", "))
	by = strings.TrimPrefix(by, ", ")
	return fmt.Sprintf("histogram_quantile(%v, sum by (%s) (%s))", q, by, rateOf(metric+"_bucket", labels, extra...))
}

// ratio is the share of num in den, 0 (not no data) when num has no series yet.
func ratio(by, num, den string) string {
	return fmt.Sprintf("(sum by (%[1]s) (%[2]s) or sum by (%[1]s) (%[3]s) * 0) / sum by (%[1]s) (%[3]s)", by, num, den)
}

// processPanels are the runtime panels of one job.
func processPanels() []Panel {
	return []Panel{
		{Title: "CPU", Unit: "short", Description: "CPU seconds per second, per replica.",
			Targets: []Target{{rateOf("process_cpu_seconds_total", jobSel), "{{instance}}"}}},
		{Title: "Memory", Unit: "bytes", Description: "Resident memory and Go heap in use, per replica.",
			Targets: []Target{{sel("process_resident_memory_bytes", jobSel), "rss {{instance}}"},
				{sel("go_memstats_heap_inuse_bytes", jobSel), "heap {{instance}}"}}},
		{Title: "Goroutines", Unit: "short", Targets: []Target{{sel("go_goroutines", jobSel), "{{instance}}"}}},
		{Title: "Build", Kind: "table", Description: "What runs: version and revision per replica.",
			Targets: []Target{{sel("customerapi_build_info", jobSel), ""}}},
	}
}

// poolPanels are the connection pool panels of one job.
func poolPanels() []Panel {
	return []Panel{
		{Title: "Pool connections", Unit: "short", Description: "Connections in use, idle, and the most the pool opens; a pool near its max makes callers wait.",
			Targets: []Target{{"sum by (pool) (" + sel("pgxpool_acquired_connections", jobSel) + ")", "acquired {{pool}}"},
				{"sum by (pool) (" + sel("pgxpool_idle_connections", jobSel) + ")", "idle {{pool}}"},
				{"sum by (pool) (" + sel("pgxpool_max_connections", jobSel) + ")", "max {{pool}}"}}},
		{Title: "Pool waits", Unit: "s", Description: "p99 time to acquire a connection, and callers waiting for one.",
			Targets: []Target{{p(0.99, "pool", "pgxpool_acquire_duration_seconds", jobSel), "p99 acquire {{pool}}"},
				{"sum by (pool) (" + sel("pgxpool_waiting_acquires", jobSel) + ")", "waiting {{pool}}"}}},
	}
}

// outboxPanels are the outbox relay panels of one job (or of all, by jobSel).
func outboxPanels(labels string) []Panel {
	return []Panel{
		{Title: "Outbox: oldest unpublished event", Unit: "s", Description: "Age of the oldest event not yet on Kafka (alert: CustomerAPIOutboxBacklog).",
			Targets: []Target{{"max by (job) (" + sel("outbox_oldest_pending_seconds", labels) + ")", "{{job}}"}}},
		{Title: "Outbox: events published", Unit: "ops", Description: "Events relayed to Kafka per second, and failed publish attempts.",
			Targets: []Target{{"sum by (job) (" + rateOf("outbox_published_total", labels) + ")", "published {{job}}"},
				{"sum by (job) (" + rateOf("outbox_publish_failures_total", labels) + ")", "failures {{job}}"}}},
		{Title: "Outbox: relay batch p99", Unit: "s", Description: "Time to publish one batch to Kafka and delete its rows.",
			Targets: []Target{{p(0.99, "job", "outbox_relay_batch_duration_seconds", labels), "{{job}}"}}},
		{Title: "Outbox: dead letters and leader", Unit: "short", Description: "Rows Kafka refused for good (alert: CustomerAPIOutboxDeadLetters), and whether a replica leads the relay.",
			Targets: []Target{{"max by (job) (" + sel("outbox_dead_letter_rows", labels) + ")", "dead letters {{job}}"},
				{"max by (job) (" + sel("outbox_relay_leader", labels) + ")", "leader {{job}}"}}},
	}
}

// consumerPanels are the consumer panels of one job (or of all).
func consumerPanels(labels string) []Panel {
	return []Panel{
		{Title: "Consumer lag", Unit: "short", Description: "Messages each group has not committed, per topic and partition, read from the broker (alert: CustomerAPIConsumerLag).",
			Targets: []Target{{"max by (group, topic, partition) (" + sel("kafka_consumer_lag_messages", labels) + ")", "{{group}} {{topic}}/{{partition}}"}}},
		{Title: "Consumed events", Unit: "ops", Description: "Events per second by consumer and outcome (dead_letter: alert CustomerAPIConsumerDeadLetters).",
			Targets: []Target{{"sum by (consumer, outcome) (" + rateOf("consumer_events_total", labels) + ")", "{{consumer}} {{outcome}}"}}},
		{Title: "Consumer batch p99", Unit: "s", Description: "Time to handle one fetched batch: its transaction and the offset commit.",
			Targets: []Target{{p(0.99, "consumer", "consumer_batch_duration_seconds", labels), "{{consumer}}"}}},
	}
}

// httpPanels are a service's request panels.
func httpPanels(service string) []Panel {
	srv := fmt.Sprintf("server=%q", service)
	return []Panel{
		{Title: "Requests", Unit: "reqps", Description: "Requests per second by route and status.",
			Targets: []Target{{"sum by (route, status) (" + rateOf("http_server_requests_total", jobSel, srv) + ")", "{{route}} {{status}}"}}},
		{Title: "Errors (5xx)", Unit: "percentunit", Description: "Share of requests answered with 5xx, by route.",
			Targets: []Target{{ratio("route", rateOf("http_server_requests_total", jobSel, srv, `status=~"5.."`),
				rateOf("http_server_requests_total", jobSel, srv)), "{{route}}"}}},
		{Title: "Latency p99", Unit: "s", Description: "p99 time to answer, by route.",
			Targets: []Target{{p(0.99, "route", "http_server_request_duration_seconds", jobSel, srv), "{{route}}"}}},
		{Title: "Requests in flight", Unit: "short",
			Targets: []Target{{"sum by (instance) (" + sel("http_server_requests_in_flight", jobSel, srv) + ")", "{{instance}}"}}},
	}
}

func serviceDashboard(service, title string, extra ...Panel) Dashboard {
	panels := httpPanels(service)
	panels = append(panels, extra...)
	panels = append(panels, poolPanels()...)
	panels = append(panels, outboxPanels(jobSel)...)
	panels = append(panels, processPanels()...)
	return Dashboard{UID: "customer-api-" + service, Title: "Customer API / " + title, Service: service,
		Description: "The " + service + " service: requests, database pool, outbox, process.", Panels: panels}
}

// Dashboards are the chart's dashboards.
func Dashboards() []Dashboard {
	gw := `namespace="$namespace"`
	reqs := func(extra ...string) string { return rateOf("gateway_requests_total", gw, extra...) }
	return []Dashboard{
		{UID: "customer-api-overview", Title: "Customer API / Overview",
			Description: "The platform at a glance: traffic, errors and latency through the gateway, events and webhooks.",
			Panels: []Panel{
				{Title: "Requests", Kind: "stat", Unit: "reqps", Width: 6, Targets: []Target{{"sum(" + reqs() + ")", ""}}},
				{Title: "Errors (5xx)", Kind: "stat", Unit: "percentunit", Width: 6,
					Targets: []Target{{"(sum(" + reqs(`code=~"5.."`) + ") or vector(0)) / sum(" + reqs() + ")", ""}}},
				{Title: "Latency p99", Kind: "stat", Unit: "s", Width: 6,
					Targets: []Target{{p(0.99, "", "gateway_request_duration_seconds", gw), ""}}},
				{Title: "Processes up", Kind: "stat", Unit: "short", Width: 6,
					Targets: []Target{{"sum(up{" + nsSel + "})", ""}}},
				{Title: "Requests by upstream", Unit: "reqps", Targets: []Target{{"sum by (upstream) (" + reqs() + ")", "{{upstream}}"}}},
				{Title: "Errors (5xx) by upstream", Unit: "percentunit", Description: "Alert: CustomerAPIHighErrorRatio.",
					Targets: []Target{{ratio("upstream", reqs(`code=~"5.."`), reqs()), "{{upstream}}"}}},
				{Title: "Latency p99 by upstream", Unit: "s", Description: "Alert: CustomerAPIHighLatency.",
					Targets: []Target{{p(0.99, "upstream", "gateway_request_duration_seconds", gw), "{{upstream}}"}}},
				{Title: "Refused by the gateway", Unit: "reqps", Description: "401, 403 and 429 the gateway answers itself, by reason.",
					Targets: []Target{{"sum by (code, reason) (" + rateOf("gateway_refusals_total", gw) + ")", "{{code}} {{reason}}"}}},
				{Title: "Oldest unpublished event", Unit: "s", Targets: []Target{{"max by (job) (" + sel("outbox_oldest_pending_seconds", nsSel) + ")", "{{job}}"}}},
				{Title: "Consumer lag", Unit: "short", Targets: []Target{{"max by (group) (" + sel("kafka_consumer_lag_messages", nsSel) + ")", "{{group}}"}}},
				{Title: "Webhook attempts", Unit: "ops", Targets: []Target{{"sum by (result) (" + rateOf("webhook_delivery_attempts_total", nsSel) + ")", "{{result}}"}}},
				{Title: "Webhook queue", Unit: "short", Targets: []Target{{"max(" + sel("webhook_queue_depth", nsSel) + ")", "pending deliveries"}}},
				{Title: "Processes", Kind: "table", Width: 24, Description: "Every process and its build.",
					Targets: []Target{{sel("customerapi_build_info", nsSel), ""}}},
			}},
		{UID: "customer-api-gateway", Title: "Customer API / Gateway", Service: "gateway",
			Description: "The gateway: traffic by upstream and route, refusals, rate limiting, its key database.",
			Panels: append(append([]Panel{
				{Title: "Requests by upstream and status", Unit: "reqps",
					Targets: []Target{{"sum by (upstream, code) (" + reqs() + ")", "{{upstream}} {{code}}"}}},
				{Title: "Busiest routes", Unit: "reqps",
					Targets: []Target{{"topk(10, sum by (method, route) (" + reqs() + "))", "{{method}} {{route}}"}}},
				{Title: "Errors (5xx) by upstream", Unit: "percentunit",
					Targets: []Target{{ratio("upstream", reqs(`code=~"5.."`), reqs()), "{{upstream}}"}}},
				{Title: "Latency by upstream", Unit: "s", Description: "p50 and p99, from a request's arrival to its answer's headers.",
					Targets: []Target{{p(0.5, "upstream", "gateway_request_duration_seconds", gw), "p50 {{upstream}}"},
						{p(0.99, "upstream", "gateway_request_duration_seconds", gw), "p99 {{upstream}}"}}},
				{Title: "Latency p99 by route", Unit: "s",
					Targets: []Target{{p(0.99, "method, route", "gateway_request_duration_seconds", gw), "{{method}} {{route}}"}}},
				{Title: "Refusals by reason", Unit: "reqps",
					Targets: []Target{{"sum by (code, reason) (" + rateOf("gateway_refusals_total", gw) + ")", "{{code}} {{reason}}"}}},
				{Title: "Rate-limit decisions", Unit: "ops", Description: "By who decided: local (one replica), redis (shared), local_fallback (Redis failed: alert CustomerAPIRateLimitRedisFallback).",
					Targets: []Target{{"sum by (decided_by, result) (" + rateOf("gateway_ratelimit_decisions_total", gw) + ")", "{{decided_by}} {{result}}"}}},
				{Title: "Redis", Unit: "s", Description: "p99 round trip of the shared rate-limit script, and checks decided locally because Redis failed (only with REDIS_URL).",
					Targets: []Target{{p(0.99, "", "gateway_ratelimit_redis_duration_seconds", gw), "p99 round trip"},
						{"sum(" + rateOf("gateway_ratelimit_redis_failures_total", gw) + ") or vector(0)", "fallbacks/s"}}},
				{Title: "API keys", Unit: "short", Description: "Active keys in each replica's cache, and cache reloads.",
					Targets: []Target{{sel("gateway_key_cache_keys", jobSel), "keys {{instance}}"},
						{rateOf("gateway_key_cache_reloads_total", jobSel), "reloads/s {{instance}}"}}},
				{Title: "Requests in flight", Unit: "short",
					Targets: []Target{{"sum by (instance) (" + sel("http_server_requests_in_flight", jobSel, `server="gateway"`) + ")", "{{instance}}"}}},
			}, poolPanels()...), processPanels()...)},
		serviceDashboard("topics", "Topics"),
		serviceDashboard("pages", "Pages",
			Panel{Title: "Version processing", Unit: "ops", Description: "Versions processed per second by outcome.",
				Targets: []Target{{"sum by (outcome) (" + rateOf("pages_version_processing_total", jobSel) + ")", "{{outcome}}"}}},
			Panel{Title: "Version queue p99", Unit: "s", Description: "Time from a version's queuing until a worker takes it.",
				Targets: []Target{{p(0.99, "", "pages_version_queue_seconds", jobSel), "p99"}}},
			Panel{Title: "Sessions computed", Unit: "ops", Description: "Audience sessions whose metrics were computed, by status, and failed runs.",
				Targets: []Target{{"sum by (status) (" + rateOf("pages_sessions_computed_total", jobSel) + ")", "{{status}}"},
					{"sum(" + rateOf("pages_sessions_compute_errors_total", jobSel) + ")", "failed runs"}}}),
		serviceDashboard("persons", "Persons", consumerPanels(jobSel)...),
		serviceDashboard("assets", "Assets"),
		serviceDashboard("webhooks", "Webhooks service", consumerPanels(jobSel)...),
		{UID: "customer-api-webhook-deliveries", Title: "Customer API / Webhook deliveries", Service: "webhooks",
			Description: "Webhook delivery: attempts, outcomes, queue, receivers' latency.",
			Panels: []Panel{
				{Title: "Attempts by result", Unit: "ops", Targets: []Target{{"sum by (result) (" + rateOf("webhook_delivery_attempts_total", jobSel) + ")", "{{result}}"}}},
				{Title: "Failed attempts", Unit: "percentunit", Description: "Share of attempts that failed (alert: CustomerAPIWebhookFailureRatio).",
					Targets: []Target{{ratio("job", rateOf("webhook_delivery_attempts_total", jobSel, `result!="success"`),
						rateOf("webhook_delivery_attempts_total", jobSel)), "failed"}}},
				{Title: "Delivery outcomes", Unit: "ops", Targets: []Target{{"sum by (outcome) (" + rateOf("webhook_deliveries_total", jobSel) + ")", "{{outcome}}"}}},
				{Title: "Attempt duration", Unit: "s", Description: "p50 and p99 of receivers' answers.",
					Targets: []Target{{p(0.5, "", "webhook_delivery_attempt_duration_seconds", jobSel), "p50"},
						{p(0.99, "", "webhook_delivery_attempt_duration_seconds", jobSel), "p99"}}},
				{Title: "Queue", Unit: "short", Description: "Pending deliveries: due, in flight or waiting for a retry; and attempts in flight.",
					Targets: []Target{{"max(" + sel("webhook_queue_depth", jobSel) + ")", "pending"},
						{"sum(" + sel("webhook_delivery_attempts_in_flight", jobSel) + ")", "in flight"}}},
				{Title: "Oldest pending delivery and dispatch lag", Unit: "s", Description: "Alerts: CustomerAPIWebhookDeliveryStuck, CustomerAPIWebhookDispatchLag.",
					Targets: []Target{{"max(" + sel("webhook_oldest_pending_age_seconds", jobSel) + ")", "oldest pending"},
						{"max(" + sel("webhook_dispatch_lag_seconds", jobSel) + ")", "dispatch lag"}}},
				{Title: "Subscriptions disabled", Unit: "short", Description: "Subscriptions the platform disabled in the range, by reason (gone: 410; failing: 5 days of failures).",
					Targets: []Target{{"sum by (reason) (increase(" + sel("webhook_subscriptions_disabled_total", jobSel) + "[1h])) or vector(0)", "{{reason}}"}}},
				{Title: "Intake lag", Unit: "short", Description: "Events the intake has not consumed yet.",
					Targets: []Target{{"max by (topic) (" + sel("kafka_consumer_lag_messages", jobSel, `group="webhooks-intake"`) + ")", "{{topic}}"}}},
			}},
		{UID: "customer-api-kafka", Title: "Customer API / Kafka and outbox",
			Description: "Events end to end: outboxes, producers, consumer groups.",
			Panels: append(append(outboxPanels(nsSel),
				Panel{Title: "Producer messages", Unit: "ops", Description: "Messages and produce requests per second, per service.",
					Targets: []Target{{"sum by (job) (" + rateOf("kafka_producer_messages_total", nsSel) + ")", "messages {{job}}"},
						{"sum by (job) (" + rateOf("kafka_producer_requests_total", nsSel) + ")", "requests {{job}}"}}},
				Panel{Title: "Producer errors and retries", Unit: "ops",
					Targets: []Target{{"sum by (job) (" + rateOf("kafka_producer_errors_total", nsSel) + ")", "errors {{job}}"},
						{"sum by (job) (" + rateOf("kafka_producer_retries_total", nsSel) + ")", "retries {{job}}"}}},
				Panel{Title: "Producer bytes", Unit: "Bps", Targets: []Target{{"sum by (job) (" + rateOf("kafka_producer_bytes_total", nsSel) + ")", "{{job}}"}}},
			), consumerPanels(nsSel)...)},
	}
}

// JSON renders the dashboard as Grafana's dashboard model (schema 39).
func (d Dashboard) JSON() ([]byte, error) {
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	vars := []any{
		map[string]any{"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
			"current": map[string]any{}, "hide": 0},
		variable("namespace", "Namespace", "label_values(customerapi_build_info, namespace)", ds),
	}
	if d.Service != "" {
		vars = append(vars, variable("job", "Job",
			fmt.Sprintf(`label_values(customerapi_build_info{namespace="$namespace", service=%q}, job)`, d.Service), ds))
	}
	var panels []any
	x, y, rowH := 0, 0, 0
	for i, pn := range d.Panels {
		w := pn.Width
		if w == 0 {
			w = 12
		}
		h := 8
		if pn.Kind == "stat" {
			h = 4
		}
		if x+w > 24 {
			x, y = 0, y+rowH
			rowH = 0
		}
		kind := pn.Kind
		if kind == "" {
			kind = "timeseries"
		}
		var targets []any
		for j, t := range pn.Targets {
			tg := map[string]any{"refId": string(rune('A' + j)), "expr": t.Expr, "datasource": ds, "range": true}
			if t.Legend != "" {
				tg["legendFormat"] = t.Legend
			}
			if kind == "table" {
				tg["format"] = "table"
				tg["instant"] = true
				tg["range"] = false
			}
			targets = append(targets, tg)
		}
		panel := map[string]any{
			"id": i + 1, "type": kind, "title": pn.Title, "datasource": ds, "targets": targets,
			"gridPos":     map[string]int{"h": h, "w": w, "x": x, "y": y},
			"fieldConfig": map[string]any{"defaults": map[string]any{"unit": orDefault(pn.Unit, "short")}, "overrides": []any{}},
		}
		if pn.Description != "" {
			panel["description"] = pn.Description
		}
		switch kind {
		case "timeseries":
			panel["options"] = map[string]any{"legend": map[string]any{"displayMode": "list", "placement": "bottom", "showLegend": true},
				"tooltip": map[string]any{"mode": "multi", "sort": "desc"}}
		case "stat":
			panel["options"] = map[string]any{"reduceOptions": map[string]any{"calcs": []string{"lastNotNull"}, "fields": "", "values": false},
				"colorMode": "value", "graphMode": "area"}
		case "table":
			panel["transformations"] = []any{map[string]any{"id": "organize", "options": map[string]any{
				"excludeByName": map[string]bool{"Time": true, "Value": true, "__name__": true}}}}
		}
		panels = append(panels, panel)
		x += w
		rowH = max(rowH, h)
	}
	model := map[string]any{
		"uid": d.UID, "title": d.Title, "description": d.Description, "tags": []string{"customer-api"},
		"editable": true, "schemaVersion": 39, "version": 1, "refresh": "30s", "timezone": "utc",
		"time":        map[string]string{"from": "now-3h", "to": "now"},
		"annotations": map[string]any{"list": []any{}},
		"templating":  map[string]any{"list": vars},
		"panels":      panels,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(model); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func variable(name, label, query string, ds map[string]any) map[string]any {
	return map[string]any{"name": name, "label": label, "type": "query", "datasource": ds,
		"definition": query, "query": map[string]any{"query": query, "refId": name}, "refresh": 2,
		"includeAll": false, "multi": false, "sort": 1, "current": map[string]any{}, "hide": 0}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// DashboardFiles renders every dashboard, by file name.
func DashboardFiles() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, d := range Dashboards() {
		b, err := d.JSON()
		if err != nil {
			return nil, fmt.Errorf("chartcheck: dashboard %s: %w", d.UID, err)
		}
		out[strings.TrimPrefix(d.UID, "customer-api-")+".json"] = b
	}
	return out, nil
}

// DashboardNames lists the dashboard files in order.
func DashboardNames() []string {
	var names []string
	for _, d := range Dashboards() {
		names = append(names, strings.TrimPrefix(d.UID, "customer-api-")+".json")
	}
	sort.Strings(names)
	return names
}

// WriteDashboards writes every dashboard into DashboardsDir and removes any other JSON
// file there.
func WriteDashboards(root string) error {
	files, err := DashboardFiles()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, DashboardsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range old {
		if _, ok := files[filepath.Base(f)]; !ok {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
