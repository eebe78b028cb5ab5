// Package devstack runs the whole platform on one machine: a private PostgreSQL cluster
// (or DATABASE_URL), the embedded Kafka-protocol broker (or KAFKA_BROKERS), every service
// and the gateway as child processes, and a ready API key. `make run` and the end-to-end
// suite both use it.
package devstack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/pgcluster"
)

// ServiceSpec describes one service process.
type ServiceSpec struct {
	Name string
	// Port is the default local port of its API; its metrics listener is on Port + 100.
	Port int
	// Env returns service-specific settings given the data directory.
	Env func(dataDir string) map[string]string
}

// Services are the platform's services in start order. A service is started only when
// its binary exists in the binary directory.
var Services = []ServiceSpec{
	{Name: "topics", Port: 25011},
	{Name: "pages", Port: 25012},
	{Name: "persons", Port: 25013},
	{Name: "assets", Port: 25014},
	{Name: "webhooks", Port: 25015},
}

// Options configure a stack.
type Options struct {
	// Dir holds data that survives restarts: the cluster, the broker log, secrets, logs.
	Dir string
	// BinDir holds the built binaries (gateway and one per service).
	BinDir string
	// GatewayPort and AdminPort are the gateway's listeners (25001 and 25002).
	GatewayPort, AdminPort int
	// PostgresPort and KafkaPort are used for the private cluster and broker.
	PostgresPort, KafkaPort int
	// ServicePorts overrides the default port of a service by name.
	ServicePorts map[string]int
	// MetricsPorts overrides the default port of a service's metrics listener by name.
	MetricsPorts map[string]int
	// DatabaseURL, when set, is an existing server to create the databases on.
	DatabaseURL string
	// KafkaBrokers, when set, are an existing cluster to use.
	KafkaBrokers []string
	// AdminToken, when empty, is read from Dir/admin-token or generated and saved there.
	AdminToken string
	// Env adds or overrides settings of every process, or of one (key "name:VAR").
	Env map[string]string
	// Logs receives the processes' output; nil writes Dir/logs/<name>.log.
	Logs io.Writer
	// DevTenant is the tenant of the printed key (default "dev").
	DevTenant string
	// PostgresSettings are extra settings of the private PostgreSQL server (name=value),
	// e.g. shared_preload_libraries for a benchmark's statement statistics.
	PostgresSettings map[string]string
}

// Stack is a running platform.
type Stack struct {
	opts       Options
	cluster    *pgcluster.Cluster
	broker     *kafkatest.Broker
	dbAdminURL string
	brokers    []string
	secrets    secrets
	mu         sync.Mutex
	procs      map[string]*proc
	order      []string
	// GatewayURL and AdminURL are the gateway's addresses.
	GatewayURL, AdminURL string
	// AdminToken authenticates the admin API.
	AdminToken string
	// DevKey is an API key for the dev tenant.
	DevKey string
}

type secrets struct {
	Pepper       string `json:"keyHashPepper"`
	CursorSecret string `json:"cursorSecret"`
	SigningKey   string `json:"signingKey"`
	// InternalAuth is INTERNAL_AUTH_SECRET, shared by the gateway and the services.
	InternalAuth string `json:"internalAuthSecret"`
	// WebhookKeys is WEBHOOK_SECRETS_KEYS, which seals the webhook signing secrets at rest.
	WebhookKeys string `json:"webhookSecretsKeys"`
}

type proc struct {
	name string
	cmd  *exec.Cmd
	env  []string
	done chan struct{}
	out  io.WriteCloser
	port int
	// metricsPort is a service's metrics listener (0 for the gateway, whose metrics are
	// on its admin listener).
	metricsPort int
}

func (o *Options) defaults() {
	if o.GatewayPort == 0 {
		o.GatewayPort = 25001
	}
	if o.AdminPort == 0 {
		o.AdminPort = 25002
	}
	if o.PostgresPort == 0 {
		o.PostgresPort = 25432
	}
	if o.KafkaPort == 0 {
		o.KafkaPort = 25092
	}
	if o.DevTenant == "" {
		o.DevTenant = "dev"
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Start brings the platform up and returns once the gateway is ready.
func Start(ctx context.Context, opts Options) (_ *Stack, err error) {
	opts.defaults()
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	// The PostgreSQL server runs as another user when we are root, and must reach its
	// directory below this one, whoever created it first and with whatever mode.
	if err := os.Chmod(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	s := &Stack{opts: opts, procs: map[string]*proc{},
		GatewayURL: fmt.Sprintf("http://127.0.0.1:%d", opts.GatewayPort),
		AdminURL:   fmt.Sprintf("http://127.0.0.1:%d", opts.AdminPort)}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if err := s.loadSecrets(); err != nil {
		return nil, err
	}
	if err := s.startPostgres(ctx); err != nil {
		return nil, err
	}
	if err := s.startKafka(); err != nil {
		return nil, err
	}
	upstreams := map[string]string{}
	for _, spec := range Services {
		if _, err := os.Stat(filepath.Join(opts.BinDir, spec.Name)); err != nil {
			continue
		}
		port := spec.Port
		if p, ok := opts.ServicePorts[spec.Name]; ok {
			port = p
		}
		metricsPort := spec.Port + 100
		if p, ok := opts.MetricsPorts[spec.Name]; ok {
			metricsPort = p
		}
		db, err := s.database(ctx, spec.Name)
		if err != nil {
			return nil, err
		}
		env := map[string]string{
			"HTTP_ADDR":    fmt.Sprintf("127.0.0.1:%d", port),
			"METRICS_ADDR": fmt.Sprintf("127.0.0.1:%d", metricsPort),
			"DATABASE_URL": db,
		}
		if spec.Env != nil {
			for k, v := range spec.Env(opts.Dir) {
				env[k] = v
			}
		}
		if err := s.spawn(spec.Name, port, metricsPort, env); err != nil {
			return nil, err
		}
		upstreams[spec.Name] = fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	for name, p := range s.procs {
		if err := waitReady(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", p.port), p.done); err != nil {
			return nil, fmt.Errorf("%s: %w (see %s)%s", name, err, s.logPath(name), s.logTail(name, 20))
		}
	}
	gwDB, err := s.database(ctx, "gateway")
	if err != nil {
		return nil, err
	}
	gwEnv := map[string]string{
		"HTTP_ADDR":    fmt.Sprintf("127.0.0.1:%d", opts.GatewayPort),
		"ADMIN_ADDR":   fmt.Sprintf("127.0.0.1:%d", opts.AdminPort),
		"DATABASE_URL": gwDB,
		"ADMIN_TOKEN":  s.AdminToken,
	}
	for name, u := range upstreams {
		gwEnv["UPSTREAM_"+strings.ToUpper(name)+"_URL"] = u
	}
	if err := s.spawn("gateway", opts.GatewayPort, 0, gwEnv); err != nil {
		return nil, err
	}
	if err := waitReady(ctx, s.GatewayURL+"/readyz", s.procs["gateway"].done); err != nil {
		return nil, fmt.Errorf("gateway: %w (see %s)%s", err, s.logPath("gateway"), s.logTail("gateway", 20))
	}
	if s.DevKey, err = s.devKey(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Stack) loadSecrets() error {
	path := filepath.Join(s.opts.Dir, "secrets.json")
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &s.secrets); err != nil {
			return fmt.Errorf("devstack: %s: %w", path, err)
		}
	} else {
		s.secrets = secrets{Pepper: randomHex(32), CursorSecret: randomHex(32), SigningKey: randomHex(32)}
	}
	if s.secrets.InternalAuth == "" || s.secrets.WebhookKeys == "" { // new, or saved before the settings existed
		if s.secrets.InternalAuth == "" {
			s.secrets.InternalAuth = randomHex(32)
		}
		if s.secrets.WebhookKeys == "" {
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			s.secrets.WebhookKeys = "dev1:" + base64.StdEncoding.EncodeToString(key)
		}
		b, _ := json.MarshalIndent(s.secrets, "", "  ")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
	}
	s.AdminToken = s.opts.AdminToken
	tokenPath := filepath.Join(s.opts.Dir, "admin-token")
	if s.AdminToken == "" {
		if b, err := os.ReadFile(tokenPath); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
			s.AdminToken = strings.TrimSpace(string(b))
		} else {
			s.AdminToken = "adm_" + randomHex(24)
		}
	}
	return os.WriteFile(tokenPath, []byte(s.AdminToken+"\n"), 0o600)
}

func (s *Stack) startPostgres(ctx context.Context) error {
	if s.opts.DatabaseURL != "" {
		s.dbAdminURL = s.opts.DatabaseURL
		return nil
	}
	c, err := pgcluster.Start(ctx, s.clusterOptions())
	if err != nil {
		return err
	}
	s.cluster = c
	s.dbAdminURL = c.URL("postgres")
	return nil
}

// database creates (if needed) the named database and returns its URL.
func (s *Stack) database(ctx context.Context, name string) (string, error) {
	if err := pgcluster.CreateDatabase(ctx, s.dbAdminURL, name); err != nil {
		return "", err
	}
	u, err := url.Parse(s.dbAdminURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

func (s *Stack) startKafka() error {
	if len(s.opts.KafkaBrokers) > 0 {
		s.brokers = s.opts.KafkaBrokers
		return nil
	}
	b, err := kafkatest.StartOn(s.opts.KafkaPort, kfake.DataDir(filepath.Join(s.opts.Dir, "kafka")),
		kfake.DefaultNumPartitions(6))
	if err != nil {
		return fmt.Errorf("devstack: kafka broker on port %d: %w", s.opts.KafkaPort, err)
	}
	s.broker = b
	s.brokers = []string{b.Addr}
	return nil
}

// logTail is the end of a process's log file, for an error message: its output is
// all a reader (of a CI log, say) gets to see of why it failed.
func (s *Stack) logTail(name string, lines int) string {
	b, err := os.ReadFile(s.logPath(name))
	if err != nil || len(b) == 0 {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return "; its log ends:\n" + strings.Join(all[max(0, len(all)-lines):], "\n")
}

func (s *Stack) logPath(name string) string { return filepath.Join(s.opts.Dir, "logs", name+".log") }

// commonEnv is what every process gets.
func (s *Stack) commonEnv() map[string]string {
	return map[string]string{
		"KAFKA_BROKERS":        strings.Join(s.brokers, ","),
		"PUBLIC_BASE_URL":      s.GatewayURL,
		"CURSOR_SECRET":        s.secrets.CursorSecret,
		"KEY_HASH_PEPPER":      s.secrets.Pepper,
		"SIGNING_KEY":          s.secrets.SigningKey,
		"INTERNAL_AUTH_SECRET": s.secrets.InternalAuth,
		"WEBHOOK_SECRETS_KEYS": s.secrets.WebhookKeys,
		"LOG_LEVEL":            "info",
		"SHUTDOWN_TIMEOUT":     "10s",
	}
}

func (s *Stack) spawn(name string, port, metricsPort int, own map[string]string) error {
	env := s.commonEnv()
	for k, v := range own {
		env[k] = v
	}
	for k, v := range s.opts.Env {
		if target, key, ok := strings.Cut(k, ":"); ok {
			if target == name {
				env[key] = v
			}
			continue
		}
		env[k] = v
	}
	list := os.Environ()
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	p := &proc{name: name, env: list, port: port, metricsPort: metricsPort}
	s.mu.Lock()
	s.procs[name] = p
	s.order = append(s.order, name)
	s.mu.Unlock()
	return s.run(p)
}

func (s *Stack) run(p *proc) error {
	var out io.WriteCloser
	if s.opts.Logs != nil {
		out = nopCloser{prefixWriter(s.opts.Logs, p.name)}
	} else {
		if err := os.MkdirAll(filepath.Join(s.opts.Dir, "logs"), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(s.logPath(p.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		out = f
	}
	cmd := exec.Command(filepath.Join(s.opts.BinDir, p.name))
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = out, out
	// Children die with us even if we are killed, and get their own process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("devstack: start %s: %w", p.name, err)
	}
	p.cmd, p.out, p.done = cmd, out, make(chan struct{})
	go func() { _ = cmd.Wait(); out.Close(); close(p.done) }()
	return nil
}

// readyWithin is how long a process of the stack may take to answer /readyz with 200.
const readyWithin = 60 * time.Second

// waitReady polls url until it answers 200, the process exits, ctx ends or readyWithin passes.
func waitReady(ctx context.Context, url string, exited <-chan struct{}) error {
	deadline := time.Now().Add(readyWithin)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("exited during start-up")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %s", readyWithin)
		}
	}
}

// Kill stops a process abruptly (SIGKILL), as a crash would.
func (s *Stack) Kill(name string) {
	s.mu.Lock()
	p := s.procs[name]
	s.mu.Unlock()
	if p == nil || p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Terminate stops a process gracefully (SIGTERM) and waits for it.
func (s *Stack) Terminate(name string) {
	s.mu.Lock()
	p := s.procs[name]
	s.mu.Unlock()
	if p != nil {
		terminate(p, 20*time.Second)
	}
}

// Restart starts a stopped process again with the same settings and waits until ready.
func (s *Stack) Restart(ctx context.Context, name string) error {
	s.mu.Lock()
	p := s.procs[name]
	s.mu.Unlock()
	if p == nil {
		return fmt.Errorf("devstack: no process %s", name)
	}
	if err := s.run(p); err != nil {
		return err
	}
	return waitReady(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", p.port), p.done)
}

// ServiceURL is the direct address of a service (bypassing the gateway).
func (s *Stack) ServiceURL(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[name]; p != nil {
		return fmt.Sprintf("http://127.0.0.1:%d", p.port)
	}
	return ""
}

// MetricsURL is the address of a service's metrics listener ("" for an unknown name).
func (s *Stack) MetricsURL(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[name]; p != nil && p.metricsPort != 0 {
		return fmt.Sprintf("http://127.0.0.1:%d", p.metricsPort)
	}
	return ""
}

// InternalAuthSecret is the INTERNAL_AUTH_SECRET the gateway and the services share, for
// tools that talk to a service directly (as the gateway would).
func (s *Stack) InternalAuthSecret() []byte {
	b, _ := hex.DecodeString(s.secrets.InternalAuth)
	return b
}

// StopBroker stops the embedded broker (a Kafka outage); StartBroker brings it back on
// the same port with the same data.
func (s *Stack) StopBroker() {
	if s.broker != nil {
		s.broker.Stop()
	}
}

// StartBroker restarts the embedded broker after StopBroker.
func (s *Stack) StartBroker() error {
	if len(s.opts.KafkaBrokers) > 0 {
		return errors.New("devstack: the broker is external")
	}
	return s.startKafka()
}

// PID is the process ID of a running process of the stack, or 0.
func (s *Stack) PID(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[name]; p != nil && p.cmd != nil && p.cmd.Process != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// KillPostgres stops the private PostgreSQL server abruptly (SIGKILL of the postmaster,
// as a crash would); StartPostgres brings it back with the same data.
func (s *Stack) KillPostgres() error {
	if s.cluster == nil {
		return errors.New("devstack: the database server is external")
	}
	s.cluster.Kill()
	return nil
}

// RefuseConnections makes the named database (a service's: "pages", "webhooks", …) refuse
// new connections and ends the ones it has, as a failover or an operator's
// `ALTER DATABASE … ALLOW_CONNECTIONS false` does; AllowConnections ends that outage.
func (s *Stack) RefuseConnections(ctx context.Context, database string) error {
	return s.allowConnections(ctx, database, false)
}

// AllowConnections lets the named database take connections again.
func (s *Stack) AllowConnections(ctx context.Context, database string) error {
	return s.allowConnections(ctx, database, true)
}

func (s *Stack) allowConnections(ctx context.Context, database string, allow bool) error {
	conn, err := pgx.Connect(ctx, s.dbAdminURL)
	if err != nil {
		return fmt.Errorf("devstack: connect as admin: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s WITH ALLOW_CONNECTIONS %t",
		pgx.Identifier{database}.Sanitize(), allow)); err != nil {
		return fmt.Errorf("devstack: allow connections to %s: %w", database, err)
	}
	if allow {
		return nil
	}
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
		database); err != nil {
		return fmt.Errorf("devstack: end the connections to %s: %w", database, err)
	}
	return nil
}

// clusterOptions are the private PostgreSQL server's options, at start and at restart.
func (s *Stack) clusterOptions() pgcluster.Options {
	return pgcluster.Options{Dir: filepath.Join(s.opts.Dir, "postgres"), Port: s.opts.PostgresPort, Durable: true,
		Settings: s.opts.PostgresSettings}
}

// StartPostgres restarts the private PostgreSQL server after KillPostgres, once the
// killed server's backends have exited (they hold its shared memory until then).
func (s *Stack) StartPostgres(ctx context.Context) error {
	if s.cluster == nil {
		return errors.New("devstack: the database server is external")
	}
	for {
		c, err := pgcluster.Start(ctx, s.clusterOptions())
		if err == nil {
			s.cluster = c
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devstack: restart postgres: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Brokers are the Kafka addresses in use.
func (s *Stack) Brokers() []string { return s.brokers }

func terminate(p *proc, grace time.Duration) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Running lists the processes (and the PostgreSQL server) still alive; after Stop it is
// empty.
func (s *Stack) Running() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, name := range s.order {
		p := s.procs[name]
		if p.cmd == nil || p.cmd.Process == nil {
			continue
		}
		if p.cmd.Process.Signal(syscall.Signal(0)) == nil {
			select {
			case <-p.done:
			default:
				out = append(out, name)
			}
		}
	}
	if s.cluster != nil && s.cluster.Alive() {
		out = append(out, "postgres")
	}
	return out
}

// Stop stops the gateway, then the services, the broker and the cluster, in that order.
func (s *Stack) Stop() {
	s.mu.Lock()
	order := append([]string(nil), s.order...)
	s.mu.Unlock()
	for i := len(order) - 1; i >= 0; i-- {
		terminate(s.procs[order[i]], 20*time.Second)
	}
	if s.broker != nil {
		s.broker.Stop()
	}
	if s.cluster != nil {
		_ = s.cluster.Stop()
	}
}

// devKey returns the saved dev key when it still works, else issues a new one.
func (s *Stack) devKey(ctx context.Context) (string, error) {
	path := filepath.Join(s.opts.Dir, "dev-key")
	if b, err := os.ReadFile(path); err == nil {
		key := strings.TrimSpace(string(b))
		req, _ := http.NewRequestWithContext(ctx, "GET", s.GatewayURL+"/v0/topics?limit=1", nil)
		req.Header.Set("x-api-key", key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
				return key, nil
			}
		}
	}
	key, err := s.CreateKey(ctx, []string{s.opts.DevTenant}, nil)
	if err != nil {
		return "", err
	}
	return key, os.WriteFile(path, []byte(key+"\n"), 0o600)
}

// CreateKey issues a key through the admin API; rateLimit may be nil.
func (s *Stack) CreateKey(ctx context.Context, tenants []string, rateLimit map[string]int) (string, error) {
	body := map[string]any{"tenantIds": tenants}
	if rateLimit != nil {
		body["rateLimit"] = rateLimit
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", s.AdminURL+"/admin/v0/keys", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+s.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("devstack: create key: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Key string `json:"key"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&out) != nil {
		return "", fmt.Errorf("devstack: create key: status %d", resp.StatusCode)
	}
	return out.Key, nil
}

// StartGatewayReplica starts one more gateway process, named name, with the gateway's
// settings but its own public and admin ports, and waits until it is ready: a second
// replica sharing the database (and REDIS_URL, when set) of the first. It returns the
// replica's public and admin addresses; Stop stops it with the rest.
func (s *Stack) StartGatewayReplica(ctx context.Context, name string, port, adminPort int) (url, adminURL string, err error) {
	s.mu.Lock()
	gw := s.procs["gateway"]
	s.mu.Unlock()
	if gw == nil {
		return "", "", errors.New("devstack: no gateway to replicate")
	}
	env := make([]string, 0, len(gw.env)+2)
	for _, kv := range gw.env {
		if !strings.HasPrefix(kv, "HTTP_ADDR=") && !strings.HasPrefix(kv, "ADMIN_ADDR=") {
			env = append(env, kv)
		}
	}
	env = append(env, fmt.Sprintf("HTTP_ADDR=127.0.0.1:%d", port), fmt.Sprintf("ADMIN_ADDR=127.0.0.1:%d", adminPort))
	p := &proc{name: name, env: env, port: port}
	s.mu.Lock()
	if s.procs[name] != nil {
		s.mu.Unlock()
		return "", "", fmt.Errorf("devstack: a process %s exists", name)
	}
	s.procs[name] = p
	s.order = append(s.order, name)
	s.mu.Unlock()
	// The replica runs the gateway's binary under its own name (and log file).
	bin := filepath.Join(s.opts.BinDir, name)
	if err := os.Symlink(filepath.Join(s.opts.BinDir, "gateway"), bin); err != nil && !os.IsExist(err) {
		return "", "", fmt.Errorf("devstack: %w", err)
	}
	if err := s.run(p); err != nil {
		return "", "", err
	}
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitReady(ctx, url+"/readyz", p.done); err != nil {
		return "", "", fmt.Errorf("%s: %w (see %s)%s", name, err, s.logPath(name), s.logTail(name, 20))
	}
	return url, fmt.Sprintf("http://127.0.0.1:%d", adminPort), nil
}
