package observability

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/customerapi/platform/e2e"
	"github.com/customerapi/platform/libs/devstack"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// namespace is the label every scraped series gets, as in a cluster: the chart's alerts
// are scoped to the release's namespace, and rendered for this one.
const namespace = "customer-api"

// sys is the system under test, shared by the tests of the package.
var sys struct {
	// skip, when set, is why the tests cannot run here.
	skip  string
	root  string
	dir   string
	stack *devstack.Stack
	// gateways are the two replicas: public and admin addresses.
	gateways [2]struct{ url, admin string }
	redis    *redisServer
	prom     *promServer
	// rules are the chart's alert rules as rendered (nil without helm).
	rules []byte
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if err := setup(); err != nil {
		var skip skipError
		if !errors.As(err, &skip) || os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, "observability:", err)
			teardown()
			return 1
		}
		sys.skip = err.Error()
	}
	code := m.Run()
	teardown()
	return code
}

// skipError is a reason to skip rather than fail (outside CI).
type skipError string

func (s skipError) Error() string { return string(s) }

func need(t *testing.T) {
	t.Helper()
	if sys.skip != "" {
		t.Skip(sys.skip)
	}
}

func setup() error {
	if os.Getenv("E2E_BASE_URL") != "" {
		return skipError("needs the local process stack (E2E_BASE_URL points at an external system)")
	}
	for _, bin := range []string{"prometheus", "redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			return skipError(bin + " not found: `make ops-deps` installs Debian's prometheus and redis-server")
		}
	}
	root, err := e2e.RepoRoot()
	if err != nil {
		return err
	}
	sys.root = root
	if sys.dir, err = os.MkdirTemp("", "observability-"); err != nil {
		return err
	}
	// PostgreSQL runs as an unprivileged user when we are root; it must reach its files.
	if err := os.Chmod(sys.dir, 0o755); err != nil {
		return err
	}
	if sys.rules, err = renderAlertRules(root); err != nil {
		return err
	}
	bin := filepath.Join(sys.dir, "bin")
	targets := []string{"./gateway"}
	services, _ := filepath.Glob(filepath.Join(root, "services", "*"))
	for _, s := range services {
		targets = append(targets, "./services/"+filepath.Base(s))
	}
	build := exec.Command("go", append([]string{"build", "-o", bin + "/"}, targets...)...)
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build: %w", err)
	}

	ports := freePorts(8 + 2*len(devstack.Services))
	next := func() int { p := ports[0]; ports = ports[1:]; return p }
	if sys.redis, err = startRedis(next(), filepath.Join(sys.dir, "redis")); err != nil {
		return err
	}
	data := filepath.Join(sys.dir, "data")
	env := devstack.LocalEnv(data)
	env["gateway:REDIS_URL"] = fmt.Sprintf("redis://127.0.0.1:%d/0", sys.redis.port)
	opts := devstack.Options{Dir: data, BinDir: bin, ServicePorts: map[string]int{}, MetricsPorts: map[string]int{},
		Env: env, GatewayPort: next(), AdminPort: next(), PostgresPort: next(), KafkaPort: next()}
	for _, s := range devstack.Services {
		opts.ServicePorts[s.Name], opts.MetricsPorts[s.Name] = next(), next()
	}
	if os.Getenv("E2E_LOGS") != "" {
		opts.Logs = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if sys.stack, err = devstack.Start(ctx, opts); err != nil {
		return err
	}
	sys.gateways[0].url, sys.gateways[0].admin = sys.stack.GatewayURL, sys.stack.AdminURL
	if sys.gateways[1].url, sys.gateways[1].admin, err = sys.stack.StartGatewayReplica(ctx, "gateway-2", next(), next()); err != nil {
		return err
	}

	// Prometheus scrapes what a ServiceMonitor would: each service's metrics listener and
	// the gateways' admin listeners, under the job names the chart's Services give.
	jobs := map[string][]string{"customer-api-gateway-admin": {hostOf(sys.gateways[0].admin), hostOf(sys.gateways[1].admin)}}
	for _, s := range devstack.Services {
		if u := sys.stack.MetricsURL(s.Name); u != "" {
			jobs["customer-api-"+s.Name] = []string{hostOf(u)}
		}
	}
	sys.prom, err = startPrometheus(next(), filepath.Join(sys.dir, "prometheus"), jobs, sys.rules)
	return err
}

func teardown() {
	if sys.prom != nil {
		sys.prom.stop()
	}
	if sys.stack != nil {
		sys.stack.Stop()
	}
	if sys.redis != nil {
		sys.redis.stop()
	}
	if sys.dir != "" && os.Getenv("OBSERVABILITY_KEEP") == "" {
		os.RemoveAll(sys.dir)
	}
}

func hostOf(u string) string { return strings.TrimPrefix(u, "http://") }

// freePorts returns n distinct free ports.
func freePorts(n int) []int {
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := pgtest.FreePort()
		if err == nil && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// renderAlertRules renders the chart's PrometheusRule with helm and returns its groups as
// a Prometheus rule file. Without helm it returns nil (the alert checks then skip outside
// CI; `make test` installs helm).
func renderAlertRules(root string) ([]byte, error) {
	h := os.Getenv("HELM")
	if h == "" {
		found, _ := filepath.Glob(filepath.Join(root, ".cache", "bin", "helm-*", "helm"))
		sort.Strings(found)
		if len(found) > 0 {
			h = found[len(found)-1]
		} else if p, err := exec.LookPath("helm"); err == nil {
			h = p
		}
	}
	if h == "" {
		if os.Getenv("CI") != "" {
			return nil, errors.New("helm not found: `make helm` installs it")
		}
		return nil, nil
	}
	home, err := os.MkdirTemp("", "observability-helm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	cmd := exec.Command(h, "template", "customer-api", "helm/customer-api", "--namespace", namespace,
		"-f", "helm/customer-api/values-dev.yaml", "--set", "prometheusRule.enabled=true",
		"--show-only", "templates/prometheusrule.yaml")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("helm template: %w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("helm template: %w", err)
	}
	var pr struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &pr); err != nil {
		return nil, fmt.Errorf("the chart's PrometheusRule does not decode: %w:\n%s", err, out)
	}
	if pr.Kind != "PrometheusRule" || len(pr.Spec.Groups) == 0 {
		return nil, fmt.Errorf("the chart rendered no PrometheusRule with groups:\n%s", out)
	}
	return yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
}

// redisServer is a real redis-server on a loopback port, without persistence.
type redisServer struct {
	port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startRedis(port int, dir string) (*redisServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &redisServer{port: port, dir: dir}
	return r, r.start()
}

func (r *redisServer) start() error {
	cmd := exec.Command("redis-server", "--port", fmt.Sprint(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--loglevel", "warning")
	log, err := os.OpenFile(filepath.Join(r.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("redis-server: %w", err)
	}
	r.cmd, r.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(r.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r.ping() == nil {
			return nil
		}
		select {
		case <-r.done:
			return errors.New("redis-server exited at start (see " + filepath.Join(r.dir, "redis.log") + ")")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("redis-server did not answer PING")
		}
	}
}

func (r *redisServer) ping() error {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.port), time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("PING: %w", err)
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// stop kills the server (its data is in memory only, so it is gone) and waits for it.
func (r *redisServer) stop() {
	if r.cmd == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	_ = r.cmd.Process.Kill()
	<-r.done
}

// promServer is a real Prometheus on a loopback port.
type promServer struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startPrometheus(port int, dir string, jobs map[string][]string, rules []byte) (*promServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n")
	if rules != nil {
		if err := os.WriteFile(filepath.Join(dir, "alerts.rules.yaml"), rules, 0o644); err != nil {
			return nil, err
		}
		cfg.WriteString("rule_files: [alerts.rules.yaml]\n")
	}
	cfg.WriteString("scrape_configs:\n")
	names := make([]string, 0, len(jobs))
	for name := range jobs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&cfg, "  - job_name: %s\n    static_configs:\n      - targets: [%s]\n        labels: {namespace: %s}\n",
			name, "'"+strings.Join(jobs[name], "', '")+"'", namespace)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg.String()), 0o644); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(dir, "prometheus.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("prometheus", "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--storage.tsdb.retention.time=1h",
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	p := &promServer{url: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(p.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get(p.url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, nil
			}
		}
		select {
		case <-p.done:
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			return nil, fmt.Errorf("prometheus exited at start:\n%s", b)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, errors.New("prometheus not ready within 30s")
		}
	}
}

func (p *promServer) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
