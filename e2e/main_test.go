package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/customerapi/platform/api/apitest"
	"github.com/customerapi/platform/libs/devstack"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// sys is the system under test, shared by the suite.
var sys struct {
	base, admin, adminToken string
	stack                   *devstack.Stack // nil against an external system
	contract                *apitest.Contract
}

func TestMain(m *testing.M) {
	if job := os.Getenv(netnsEnv); job != "" { // this binary as the browser's namespace side
		os.Exit(netnsMain(job))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	c, err := apitest.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sys.contract = c
	if base := os.Getenv("E2E_BASE_URL"); base != "" {
		sys.base, sys.admin, sys.adminToken = base, os.Getenv("E2E_ADMIN_URL"), os.Getenv("E2E_ADMIN_TOKEN")
		return m.Run()
	}
	s, cleanup, err := startLocal()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	sys.stack, sys.base, sys.admin, sys.adminToken = s, s.GatewayURL, s.AdminURL, s.AdminToken
	code := m.Run()
	cleanup()
	// Stopping the system leaves no process behind.
	if left := s.Running(); len(left) > 0 {
		fmt.Fprintln(os.Stderr, "e2e: still running after stop:", left)
		return 1
	}
	return code
}

// startLocal builds the binaries and starts the system on free ports.
func startLocal() (*devstack.Stack, func(), error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "e2e-")
	if err != nil {
		return nil, nil, err
	}
	// PostgreSQL runs as an unprivileged user when we are root; it must reach its files.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, nil, err
	}
	bin := filepath.Join(dir, "bin")
	targets := []string{"./gateway"}
	services, _ := filepath.Glob(filepath.Join(root, "services", "*"))
	only := os.Getenv("E2E_SERVICES") // e.g. "topics,pages" while a service is being built
	for _, s := range services {
		name := filepath.Base(s)
		if only == "" || strings.Contains(","+only+",", ","+name+",") {
			targets = append(targets, "./services/"+name)
		}
	}
	build := exec.Command("go", append([]string{"build", "-o", bin + "/"}, targets...)...)
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("build: %w", err)
	}
	opts := devstack.Options{Dir: filepath.Join(dir, "data"), BinDir: bin, ServicePorts: map[string]int{},
		MetricsPorts: map[string]int{}, Env: devstack.LocalEnv(filepath.Join(dir, "data"))}
	// Distinct ports: FreePort checks each alone, and two of a dozen picks may agree.
	taken := map[int]bool{}
	pick := func() (int, error) {
		for {
			p, err := pgtest.FreePort()
			if err != nil || !taken[p] {
				taken[p] = true
				return p, err
			}
		}
	}
	for _, p := range []*int{&opts.GatewayPort, &opts.AdminPort, &opts.PostgresPort, &opts.KafkaPort} {
		if *p, err = pick(); err != nil {
			return nil, nil, err
		}
	}
	for _, spec := range devstack.Services {
		if opts.ServicePorts[spec.Name], err = pick(); err != nil {
			return nil, nil, err
		}
		if opts.MetricsPorts[spec.Name], err = pick(); err != nil {
			return nil, nil, err
		}
	}
	if os.Getenv("E2E_LOGS") != "" {
		opts.Logs = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := devstack.Start(ctx, opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return s, func() { s.Stop(); os.RemoveAll(dir) }, nil
}

// local skips tests that need to control processes.
func local(t *testing.T) *devstack.Stack {
	t.Helper()
	if sys.stack == nil {
		t.Skip("needs the local process stack")
	}
	return sys.stack
}

// api returns a client for the gateway with the given key, checking every response.
func api(t *testing.T, key string) *apitest.Client {
	c := &apitest.Client{T: t, Base: sys.base, Contract: sys.contract, HTTP: &http.Client{Timeout: 30 * time.Second}}
	if key != "" {
		c = c.With("x-api-key", key)
	}
	return c
}

func admin(t *testing.T) *apitest.Client {
	return (&apitest.Client{T: t, Base: sys.admin}).With("Authorization", "Bearer "+sys.adminToken)
}

// newKey issues a key for one tenant (a fresh tenant per test unless given).
func newKey(t *testing.T, body map[string]any) string {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if body["tenantIds"] == nil {
		body["tenantIds"] = []string{fmt.Sprintf("t%d", time.Now().UnixNano())}
	}
	r := admin(t).Do("POST", "/admin/v0/keys", body)
	if r.Status != 201 {
		t.Fatalf("create key: %s", r)
	}
	return r.Map()["key"].(string)
}

// must checks a response's status and returns its JSON object.
var must = apitest.MustStatus
