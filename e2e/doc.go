// Package e2e is the end-to-end suite: it drives the whole system through the gateway.
//
// By default TestMain builds every binary and starts the system as processes (devstack)
// on free loopback ports. With E2E_BASE_URL, E2E_ADMIN_URL and E2E_ADMIN_TOKEN set it runs
// against a system that is already running (e.g. the kind cluster of `make e2e-kind`);
// tests that need to stop processes or the broker then skip. E2E_SERVICES (e.g.
// "topics,pages") limits which services are built and started; E2E_LOGS=1 streams the
// processes' logs. E2E_RECEIVER_HOST is the address the tests' webhook receivers listen
// on (default 127.0.0.1): against a cluster, an address of this host its pods reach.
package e2e
