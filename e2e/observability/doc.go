// Package observability tests what operators run the platform with, against the real
// programs: the whole system started as processes (libs/devstack) with two gateway
// replicas sharing a real redis-server, scraped by a real Prometheus.
//
//   - TestRateLimitAcrossReplicasWithRedis: a concurrent load split over both replicas
//     is admitted within the bound docs/rate-limiting.md states while Redis is up; with
//     Redis stopped mid-run each replica goes on deciding locally (within N times the
//     limit), counts the fallback, and nothing answers 5xx; when Redis is back the shared
//     limit holds again.
//   - TestDashboardsAndAlertsHaveData: after a short load through every service, every
//     PromQL expression of every panel of the chart's Grafana dashboards, and every
//     operand of every alert of its PrometheusRule, returns data from that Prometheus
//     (a panel without data is a broken panel), every metric they name is exposed, and
//     Prometheus evaluates every rule without error.
//
// `make test` installs prometheus and redis-server (scripts/ensure-ops-tools.sh); without
// them the tests skip, except in CI.
package observability
