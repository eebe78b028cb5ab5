package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/customerapi/platform/libs/devstack"
	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// Roles of the processes whose CPU is measured in every run.
const (
	roleGateway  = "gateway"
	roleService  = "topics service"
	rolePostgres = "PostgreSQL"
	roleOthers   = "other services"
	roleDevstack = "devstack process"
	roleNginx    = "nginx"
	roleFloor    = "floor proxy"
)

// benchTenant is the tenant of the benchmark's key; benchRequestID is the request ID the
// direct and nginx runs send with their precomputed signature.
const (
	benchTenant    = "bench"
	benchRequestID = "bench"
)

// system is one whole platform (PostgreSQL, broker, services, gateway) started from one
// directory of binaries, with a key and a stored topic to read.
type system struct {
	label   string // "current" or "baseline"
	binDir  string
	stack   *devstack.Stack
	opts    devstack.Options
	key     string
	keyID   string
	topicID string
	signer  *internalauth.Signer
	// outboxPending tells whether the topics service's outbox holds rows; closeDB
	// closes its connection.
	outboxPending func(context.Context) (bool, error)
	closeDB       func()
	pgData        string
}

// startSystem starts a whole platform from binDir under dir; env adds process settings
// and pgSettings PostgreSQL server settings (either may be nil).
func startSystem(ctx context.Context, label, binDir, dir string, env, pgSettings map[string]string, pprof bool) (*system, error) {
	opts := devstack.Options{Dir: filepath.Join(dir, label), BinDir: binDir, PostgresSettings: pgSettings,
		ServicePorts: map[string]int{}, MetricsPorts: map[string]int{},
		Env: map[string]string{"LOG_LEVEL": "warn"}}
	if pprof {
		opts.Env["PPROF_ENABLED"] = "true" // on the internal listeners only
	}
	for k, v := range env {
		opts.Env[k] = v
	}
	for _, p := range []*int{&opts.GatewayPort, &opts.AdminPort, &opts.PostgresPort, &opts.KafkaPort} {
		*p, _ = pgtest.FreePort()
	}
	// Every port is free and private, so that a second system (and whatever else runs on
	// the machine) cannot collide with this one.
	for _, s := range devstack.Services {
		opts.ServicePorts[s.Name], _ = pgtest.FreePort()
		opts.MetricsPorts[s.Name], _ = pgtest.FreePort()
	}
	if _, err := os.Stat(filepath.Join(binDir, "gateway")); err != nil {
		return nil, fmt.Errorf("%s build: %w", label, err)
	}
	if _, err := os.Stat(filepath.Join(binDir, "topics")); err != nil {
		return nil, fmt.Errorf("%s build: %w", label, err)
	}
	fmt.Fprintf(os.Stderr, "starting the %s system from %s...\n", label, binDir)
	st, err := devstack.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%s system: %w", label, err)
	}
	s := &system{label: label, binDir: binDir, stack: st, opts: opts,
		pgData: filepath.Join(opts.Dir, "postgres", "data")}
	if err := s.prepare(ctx); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s system: %w", label, err)
	}
	return s, nil
}

func (s *system) prepare(ctx context.Context) error {
	var err error
	// The key's limit is far above what the runs reach: the gateway checks it on every
	// request and never refuses one.
	if s.key, s.keyID, err = createKey(ctx, s.stack, benchTenant, 1000000, 1000); err != nil {
		return err
	}
	var topic struct {
		TopicID string `json:"topicId"`
	}
	gw := &apiClient{base: s.stack.GatewayURL, key: s.key, http: http.DefaultClient}
	if err := gw.create(ctx, "/v0/topics", map[string]any{"title": "benchmark"}, &topic); err != nil {
		return err
	}
	s.topicID = topic.TopicID
	if s.signer, err = internalauth.New(s.stack.InternalAuthSecret()); err != nil {
		return err
	}
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/topics?sslmode=disable&pool_max_conns=1", s.opts.PostgresPort)
	db, err := postgres.Connect(ctx, u)
	if err != nil {
		return err
	}
	s.closeDB = db.Close
	s.outboxPending = func(ctx context.Context) (pending bool, err error) {
		err = db.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM outbox)").Scan(&pending)
		return pending, err
	}
	return nil
}

func (s *system) stop() {
	if s.closeDB != nil {
		s.closeDB()
	}
	s.stack.Stop()
}

// groups are the processes of this system whose CPU every run records: the roles above.
// The devstack process is this one: it hosts the embedded Kafka-protocol broker (kfake)
// of every system it started, and the load tool's own bookkeeping.
func (s *system) groups() ([]group, error) {
	pm, err := postmasterPID(s.pgData)
	if err != nil {
		return nil, fmt.Errorf("%s system: postmaster: %w", s.label, err)
	}
	var others []int
	for _, spec := range devstack.Services {
		if spec.Name != "topics" {
			if pid := s.stack.PID(spec.Name); pid != 0 {
				others = append(others, pid)
			}
		}
	}
	return []group{
		{label: roleGateway, roots: []int{s.stack.PID("gateway")}},
		{label: roleService, roots: []int{s.stack.PID("topics")}},
		{label: rolePostgres, roots: []int{pm}},
		{label: roleOthers, roots: others},
		{label: roleDevstack, roots: []int{os.Getpid()}, self: true},
	}, nil
}

// signedHeaders are the internal headers the gateway would add for the bench tenant and
// key, signed now: a service accepts them for internalauth.MaxSkew.
func (s *system) signedHeaders() []string {
	h := http.Header{}
	internalauth.Stamp(h, s.signer, internalauth.Claims{TenantID: benchTenant, KeyID: s.keyID, RequestID: benchRequestID}, time.Now())
	out := []string{"X-Request-Id: " + benchRequestID}
	for k := range h {
		out = append(out, k+": "+h.Get(k))
	}
	return out
}

// drainOutbox waits until the topics service's relay has published and deleted every
// outbox row: the relay's and the broker's share of a create happens after its answer.
func (s *system) drainOutbox(ctx context.Context, within time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		pending, err := s.outboxPending(ctx)
		if err != nil {
			return 0, fmt.Errorf("%s system: outbox: %w", s.label, err)
		}
		if !pending {
			return time.Since(start), nil
		}
		if time.Since(start) > within {
			return 0, fmt.Errorf("%s system: the outbox still holds rows %s after the run", s.label, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createKey issues a key through the admin API and returns it with its ID (which the
// gateway signs as the key header, and nginx must send too).
func createKey(ctx context.Context, st *devstack.Stack, tenant string, limit, windowMs int) (key, keyID string, err error) {
	b, _ := json.Marshal(map[string]any{"tenantIds": []string{tenant},
		"rateLimit": map[string]int{"limit": limit, "windowMs": windowMs}})
	req, _ := http.NewRequestWithContext(ctx, "POST", st.AdminURL+"/admin/v0/keys", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+st.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("create key: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Key   string `json:"key"`
		KeyID string `json:"keyId"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&out) != nil || out.KeyID == "" {
		return "", "", fmt.Errorf("create key: status %d", resp.StatusCode)
	}
	return out.Key, out.KeyID, nil
}

// get sends one GET of url with headers ("Name: value").
func get(url string, headers []string) (*http.Response, error) {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return nil, err
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}

// expectOK sends one GET with headers and checks that it is answered 200, before a run
// whose numbers would mean nothing if the requests failed.
func expectOK(url string, headers []string) error {
	resp, err := get(url, headers)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d, want 200", url, resp.StatusCode)
	}
	return nil
}

// expectRefusal sends one GET that must be refused as the gateway refuses it: 401 with
// the error envelope, whose requestId is the X-Request-Id header.
func expectRefusal(url string, headers []string) error {
	resp, err := get(url, headers)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Code      string `json:"code"`
		RequestID string `json:"requestId"`
		Status    int    `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("GET %s %v: the 401's body is not JSON: %w", url, headers, err)
	}
	if resp.StatusCode != 401 || env.Code != "UNAUTHORIZED" || env.Status != 401 ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
		env.RequestID == "" || env.RequestID != resp.Header.Get("X-Request-Id") {
		return fmt.Errorf("GET %s %v: status %d, %s, envelope %+v, X-Request-Id %q; want the 401 envelope",
			url, headers, resp.StatusCode, resp.Header.Get("Content-Type"), env, resp.Header.Get("X-Request-Id"))
	}
	return nil
}
