// Package servicetest starts a service in-process for component tests: its real runtime
// on a fresh database and an embedded broker, serving on a loopback port.
package servicetest

import (
	"context"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
	"github.com/customerapi/platform/libs/requestid"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/libs/telemetry"
)

// InternalAuthSecret is the secret the services under test share with their (absent)
// gateway; Service.Sign signs with it.
const InternalAuthSecret = "servicetest-internal-auth-secret-0123456789"

// Service is a running service under test.
type Service struct {
	// URL is the service's base address (its API listener).
	URL string
	// MetricsURL is the address of its metrics listener.
	MetricsURL  string
	Runtime     *service.Runtime
	Broker      *kafkatest.Broker
	DatabaseURL string
	stop        func()
}

// Options adjust a start.
type Options struct {
	// Broker to use (a fresh one when nil).
	Broker *kafkatest.Broker
	// DatabaseURL to use (a fresh database when empty), e.g. to restart on the same data.
	DatabaseURL string
	// Env holds service-specific settings read by setup.
	Env map[string]string
	// Pprof serves /debug/pprof on the metrics listener.
	Pprof bool
	// Configure, when set, adjusts the shared settings before the runtime is built.
	Configure func(*service.Config)
}

// Start runs the service until the test ends.
func Start(t testing.TB, name string, migrations []postgres.MigrationSet,
	setup func(*service.Runtime, *config.Env) error, opts Options) *Service {
	t.Helper()
	if opts.Broker == nil {
		opts.Broker = kafkatest.Start(t)
	}
	if opts.DatabaseURL == "" {
		opts.DatabaseURL = pgtest.NewDatabase(t)
	}
	// Bound here, on ports the kernel picks, so no concurrent test can take them between
	// the choice and the listen.
	api, metrics := pgtest.Listen(t), pgtest.Listen(t)
	cfg := service.Config{
		Name: name, HTTPAddr: api.Addr().String(), HTTPListener: api, DatabaseURL: opts.DatabaseURL,
		MetricsAddr: metrics.Addr().String(), MetricsListener: metrics, Pprof: opts.Pprof,
		InternalAuthSecret: []byte(InternalAuthSecret),
		PublicBaseURL:      "http://127.0.0.1:25001", CursorSecret: []byte("servicetest-cursor-secret-0123456789"),
		Kafka: opts.Broker.Config(), LogLevel: "error", ShutdownTimeout: 5 * time.Second,
	}
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	logOut := io.Discard
	if os.Getenv("SERVICETEST_LOGS") != "" {
		logOut = os.Stderr
	}
	log := telemetry.NewLogger(logOut, name, "debug")
	tracing, err := telemetry.SetupTracing(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := service.New(context.Background(), cfg, tracing, log, migrations...)
	if err != nil {
		t.Fatal(err)
	}
	env := config.FromMap(opts.Env)
	if err := setup(rt, env); err != nil {
		rt.Close()
		t.Fatal(err)
	}
	if err := env.Err(); err != nil {
		rt.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	s := &Service{URL: "http://" + cfg.HTTPAddr, MetricsURL: "http://" + cfg.MetricsAddr, Runtime: rt,
		Broker: opts.Broker, DatabaseURL: opts.DatabaseURL}
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s stopped with %v", name, err)
		}
		rt.Close()
	}
	t.Cleanup(s.stop)
	deadline := time.Now().Add(15 * time.Second)
	for _, u := range []string{s.URL, s.MetricsURL} {
		for {
			resp, err := http.Get(u + "/healthz")
			if err == nil {
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not come up on %s: %v", name, u, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return s
}

// Sign makes r look as if the gateway sent it: it signs the tenant and key headers r
// carries (tenant.Header, tenant.KeyHeader) with a fresh timestamp, giving r a request ID
// when it has none. Test clients call it on every request (apitest.Client.Prepare).
func (s *Service) Sign(r *http.Request) {
	id := r.Header.Get(requestid.Header)
	if id == "" {
		id = requestid.New()
		r.Header.Set(requestid.Header, id)
	}
	internalauth.Stamp(r.Header, s.Runtime.Signer, internalauth.Claims{TenantID: r.Header.Get(internalauth.TenantHeader),
		KeyID: r.Header.Get(internalauth.KeyHeader), RequestID: id}, time.Now())
}

// Stop shuts the service down now (it is also stopped when the test ends).
func (s *Service) Stop() { s.stop() }
