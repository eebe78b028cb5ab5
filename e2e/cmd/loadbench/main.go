// Command loadbench measures the platform on this machine, side by side in one run, and
// writes the results as Markdown: an authenticated, rate-limited GET of a stored resource
// sent straight to the service, through the gateway and through nginx; and writes through
// the gateway against pgbench single-row INSERTs on the same PostgreSQL cluster.
//
// It needs the built binaries (make build), wrk, nginx and pgbench; `make bench` provides
// them. Usage: loadbench -bin bin -out docs/benchmarks.md
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/customerapi/platform/libs/devstack"
	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/pgcluster"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

type result struct {
	name     string
	rps      float64
	p50, p99 string
	non2xx   int
}

func run() error {
	bin := flag.String("bin", "bin", "directory of the built binaries")
	out := flag.String("out", "", "Markdown file to write the results section into (stdout when empty)")
	dur := flag.Duration("duration", 10*time.Second, "duration of each load run")
	conns := flag.Int("conns", 64, "connections for the read runs")
	writeConns := flag.Int("write-conns", 16, "connections/clients for the write runs")
	profile := flag.String("profile", "", "directory to save CPU profiles of the gateway and the service during the gateway runs")
	var extraEnv envFlag
	flag.Var(&extraEnv, "env", "extra process setting NAME=value or process:NAME=value (repeatable)")
	goBench := flag.String("go-bench", "", "write this file of `go test -bench` output into the \"go\" section of -out and exit")
	flag.Parse()
	if *goBench != "" {
		b, err := os.ReadFile(*goBench)
		if err != nil {
			return err
		}
		return replaceSection(*out, "go", "```\n"+strings.TrimSpace(string(b))+"\n```\n")
	}
	binDir, _ := filepath.Abs(*bin)

	dir, err := os.MkdirTemp("", "loadbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	_ = os.Chmod(dir, 0o755)
	opts := devstack.Options{Dir: filepath.Join(dir, "data"), BinDir: binDir, ServicePorts: map[string]int{},
		Env: map[string]string{"LOG_LEVEL": "warn"}}
	if *profile != "" {
		opts.Env["PPROF_ENABLED"] = "true" // on the internal listeners only
	}
	for k, v := range extraEnv {
		opts.Env[k] = v
	}
	for _, p := range []*int{&opts.GatewayPort, &opts.AdminPort, &opts.PostgresPort, &opts.KafkaPort} {
		*p, _ = pgtest.FreePort()
	}
	for _, s := range devstack.Services {
		opts.ServicePorts[s.Name], _ = pgtest.FreePort()
	}
	ctx := context.Background()
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	fmt.Fprintln(os.Stderr, "starting the system...")
	s, err := devstack.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer s.Stop()
	key, err := s.CreateKey(ctx, []string{"bench"}, map[string]int{"limit": 1000000, "windowMs": 1000})
	if err != nil {
		return err
	}
	topicID, err := createTopic(s.GatewayURL, key)
	if err != nil {
		return err
	}
	direct := s.ServiceURL("topics")
	signer, err := internalauth.New(s.InternalAuthSecret())
	if err != nil {
		return err
	}
	// The service accepts a signature for 60 s: each direct run gets a fresh one, and
	// runs longer than that are refused (non-2xx) once it has gone stale.
	signed := func() []string {
		h := http.Header{}
		internalauth.Stamp(h, signer, internalauth.Claims{TenantID: "bench", RequestID: "bench"}, time.Now())
		out := []string{"X-Request-Id: bench"}
		for k := range h {
			out = append(out, k+": "+h.Get(k))
		}
		return out
	}
	path := "/v0/topics/" + topicID
	var reads []result
	for _, tc := range []struct {
		name string
		// target gives the URL and headers just before the run (fresh signatures).
		target func() (string, []string, error)
	}{
		{"service directly (Fiber)", func() (string, []string, error) { return direct + path, signed(), nil }},
		{"through the gateway (key check, rate limit, proxy)", func() (string, []string, error) {
			return s.GatewayURL + path, []string{"x-api-key: " + key}, nil
		}},
		{"through nginx (keep-alive upstream)", func() (string, []string, error) {
			nginxURL, stopNginx, err := startNginx(dir, strings.TrimPrefix(direct, "http://"), signed())
			if err != nil {
				return "", nil, err
			}
			stops = append(stops, stopNginx)
			return nginxURL + path, nil, nil
		}},
	} {
		fmt.Fprintln(os.Stderr, "read:", tc.name)
		url, headers, err := tc.target()
		if err != nil {
			return err
		}
		if *profile != "" && strings.HasPrefix(url, s.GatewayURL) {
			go captureProfiles(*profile, "read", *dur, s.AdminURL, s.MetricsURL("topics"))
		}
		r, err := wrk(tc.name, url, *conns, *dur, headers, "")
		if err != nil {
			return err
		}
		reads = append(reads, r)
	}

	fmt.Fprintln(os.Stderr, "write: pgbench")
	pg, err := pgbench(ctx, opts.PostgresPort, *writeConns, *dur)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "write: topics through the gateway")
	lua := filepath.Join(dir, "post.lua")
	script := `wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"title":"bench topic"}'
`
	if err := os.WriteFile(lua, []byte(script), 0o644); err != nil {
		return err
	}
	writes := []result{pg}
	if *profile != "" {
		go captureProfiles(*profile, "write", *dur, s.AdminURL, s.MetricsURL("topics"))
	}
	w, err := wrk("POST /v0/topics through the gateway", s.GatewayURL+"/v0/topics", *writeConns, *dur, []string{"x-api-key: " + key}, lua)
	if err != nil {
		return err
	}
	writes = append(writes, w)

	md := report(reads, writes, *conns, *writeConns, *dur)
	if *out == "" {
		fmt.Print(md)
		return nil
	}
	return replaceSection(*out, "gateway", md)
}

func createTopic(base, key string) (string, error) {
	req, _ := http.NewRequest("POST", base+"/v0/topics", strings.NewReader(`{"title":"benchmark"}`))
	req.Header.Set("x-api-key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var t struct {
		TopicID string `json:"topicId"`
	}
	if resp.StatusCode != 201 || json.NewDecoder(resp.Body).Decode(&t) != nil {
		return "", fmt.Errorf("create topic: %d", resp.StatusCode)
	}
	return t.TopicID, nil
}

var (
	rpsRe    = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	p50Re    = regexp.MustCompile(`\n\s+50%\s+(\S+)`)
	p99Re    = regexp.MustCompile(`\n\s+99%\s+(\S+)`)
	non2xxRe = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

func wrk(name, url string, conns int, dur time.Duration, headers []string, script string) (result, error) {
	args := []string{"-t", strconv.Itoa(min(conns, 2)), "-c", strconv.Itoa(conns), "-d", dur.String(), "--latency"}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	if script != "" {
		args = append(args, "-s", script)
	}
	out, err := exec.Command("wrk", append(args, url)...).CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("wrk %s: %w: %s", name, err, out)
	}
	r := result{name: name}
	if m := rpsRe.FindSubmatch(out); m != nil {
		r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if m := p50Re.FindSubmatch(out); m != nil {
		r.p50 = string(m[1])
	}
	if m := p99Re.FindSubmatch(out); m != nil {
		r.p99 = string(m[1])
	}
	if m := non2xxRe.FindSubmatch(out); m != nil {
		r.non2xx, _ = strconv.Atoi(string(m[1]))
	}
	return r, nil
}

// startNginx proxies to upstream, adding headers ("Name: value") to every request.
func startNginx(dir, upstream string, headers []string) (string, func(), error) {
	port, err := pgtest.FreePort()
	if err != nil {
		return "", nil, err
	}
	ndir := filepath.Join(dir, "nginx")
	_ = os.MkdirAll(filepath.Join(ndir, "tmp"), 0o755)
	conf := fmt.Sprintf(`worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s/tmp; proxy_temp_path %[1]s/tmp; fastcgi_temp_path %[1]s/tmp;
  uwsgi_temp_path %[1]s/tmp; scgi_temp_path %[1]s/tmp;
  upstream svc { server %[2]s; keepalive 128; }
  server {
    listen 127.0.0.1:%[3]d;
    location / {
      proxy_pass http://svc;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
%[4]s    }
  }
}
`, ndir, upstream, port, nginxHeaders(headers))
	confPath := filepath.Join(ndir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return "", nil, err
	}
	cmd := exec.Command("nginx", "-p", ndir, "-c", confPath, "-g", "daemon off;")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("nginx: %w", err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for i := 0; i < 100; i++ {
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			// SIGQUIT is nginx's graceful stop; its workers exit with the master.
			return url, func() { _ = cmd.Process.Signal(syscall.SIGQUIT); _ = cmd.Wait() }, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	return "", nil, fmt.Errorf("nginx did not start: %s", stderr.String())
}

func nginxHeaders(headers []string) string {
	var b strings.Builder
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		fmt.Fprintf(&b, "      proxy_set_header %s %q;\n", name, value)
	}
	return b.String()
}

// pgbench runs single-row INSERTs (fsync on) with the given clients on the cluster.
func pgbench(ctx context.Context, port, clients int, dur time.Duration) (result, error) {
	admin := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := pgcluster.CreateDatabase(ctx, admin, "pgbench"); err != nil {
		return result{}, err
	}
	bindir, err := pgcluster.BinDir()
	if err != nil {
		return result{}, err
	}
	psql := exec.Command(filepath.Join(bindir, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres",
		"-d", "pgbench", "-c", "CREATE TABLE IF NOT EXISTS bench (id bigserial PRIMARY KEY, v text NOT NULL)")
	if out, err := psql.CombinedOutput(); err != nil {
		return result{}, fmt.Errorf("psql: %w: %s", err, out)
	}
	script := filepath.Join(os.TempDir(), "pgbench-insert.sql")
	if err := os.WriteFile(script, []byte("INSERT INTO bench (v) VALUES ('x');\n"), 0o644); err != nil {
		return result{}, err
	}
	cmd := exec.Command(filepath.Join(bindir, "pgbench"), "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres",
		"-n", "-c", strconv.Itoa(clients), "-j", "2", "-T", strconv.Itoa(int(dur.Seconds())), "-f", script,
		"-r", "pgbench")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	r := result{name: fmt.Sprintf("pgbench single-row INSERT, %d clients", clients)}
	if m := regexp.MustCompile(`tps = ([\d.]+)`).FindSubmatch(out); m != nil {
		r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if m := regexp.MustCompile(`latency average = ([\d.]+ ms)`).FindSubmatch(out); m != nil {
		r.p50 = "avg " + string(m[1])
	}
	r.p99 = "n/a"
	return r, nil
}

func report(reads, writes []result, conns, writeConns int, dur time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s (%d cores, load generator on the same cores), %s per run, one run each.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), dur)
	fmt.Fprintf(&b, "Reads: `GET /v0/topics/{id}` of a stored topic, wrk with %d connections.\n\n", conns)
	b.WriteString("| path | requests/s | p50 | p99 | non-2xx | share of direct |\n|---|---|---|---|---|---|\n")
	for _, r := range reads {
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %d | %.0f%% |\n", r.name, r.rps, r.p50, r.p99, r.non2xx, 100*r.rps/reads[0].rps)
	}
	fmt.Fprintf(&b, "\nWrites: %d connections/clients.\n\n", writeConns)
	b.WriteString("| write | per second | p50 | p99 | non-2xx | share of pgbench |\n|---|---|---|---|---|---|\n")
	for _, r := range writes {
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %d | %.0f%% |\n", r.name, r.rps, r.p50, r.p99, r.non2xx, 100*r.rps/writes[0].rps)
	}
	return b.String()
}

// replaceSection writes md between the markers <!-- bench:name:start --> and
// <!-- bench:name:end --> of file, appending them when missing.
func replaceSection(file, name, md string) error {
	start, end := "<!-- bench:"+name+":start -->", "<!-- bench:"+name+":end -->"
	b, _ := os.ReadFile(file)
	s := string(b)
	i, j := strings.Index(s, start), strings.Index(s, end)
	block := start + "\n" + md + end
	if i < 0 || j < i {
		s = strings.TrimRight(s, "\n") + "\n\n" + block + "\n"
	} else {
		s = s[:i] + block + s[j+len(end):]
	}
	return os.WriteFile(file, []byte(s), 0o644)
}

// captureProfiles saves CPU profiles of the gateway (admin listener) and the service
// taken during most of a run.
func captureProfiles(dir, run string, dur time.Duration, gatewayAdmin, service string) {
	_ = os.MkdirAll(dir, 0o755)
	secs := max(int(dur.Seconds())-2, 1)
	time.Sleep(time.Second)
	for name, base := range map[string]string{"gateway": gatewayAdmin, "service": service} {
		go func() {
			resp, err := http.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs))
			if err != nil {
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(filepath.Join(dir, run+"-"+name+".prof"))
			if err != nil {
				return
			}
			defer f.Close()
			_, _ = io.Copy(f, resp.Body)
		}()
	}
}

type envFlag map[string]string

func (e *envFlag) String() string { return fmt.Sprint(map[string]string(*e)) }

func (e *envFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want NAME=value, got %q", v)
	}
	if *e == nil {
		*e = envFlag{}
	}
	(*e)[k] = val
	return nil
}
