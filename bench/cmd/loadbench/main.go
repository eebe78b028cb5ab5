// Command loadbench measures the platform on this machine, side by side in one run, and
// writes the results as Markdown: an authenticated, rate-limited GET of a stored resource
// sent straight to the service, through the gateway, through a plain nginx proxy and
// through nginx doing the gateway's job; and creates through the gateway against pgbench
// single-row INSERTs on the same PostgreSQL cluster. Every configuration runs once per
// round, in turn, for several rounds; each run records requests per second, latency and
// the CPU each process used per request (from /proc).
//
// With -baseline-bin it also starts a second whole system from another build's binaries
// and runs the gateway's read and write configurations against it in the same rounds,
// so one run answers whether a change made things better or worse.
//
// It needs the built binaries (make build), wrk, nginx and pgbench; `make bench` provides
// them. Usage: loadbench -bin bin -out docs/benchmarks.md [-rounds 3] [-baseline-bin DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/customerapi/platform/libs/internalauth"
	"github.com/customerapi/platform/libs/pgcluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

// config is one row of the results: a path or a write, against one system.
type config struct {
	name string
	sys  *system
	// proxyRole names the process group of the proxy in front of the service (reads).
	proxyRole string
	// ref is the configuration whose rate this one's share is of (reads: the same
	// system's direct run; writes: pgbench).
	ref *config
	// start prepares one run (e.g. starts nginx with fresh signatures) and returns it.
	start func() (*runPlan, error)
	// profile: -profile captures the gateway's and the service's CPU profiles during
	// this configuration's first run.
	profile bool
	samples []sample
}

func (c *config) label() string {
	if c.sys != nil && c.sys.label == "baseline" {
		return c.name + ", *baseline*"
	}
	return c.name
}

// runPlan is one prepared run.
type runPlan struct {
	load func() (loadResult, error)
	// extra are process groups measured besides the system's own (nginx).
	extra []group
	// drain, when set, runs after the load and before the CPU is read again.
	drain func() (time.Duration, error)
	stop  func()
}

type options struct {
	rounds            int
	readDur, writeDur time.Duration
	conns, writeConns int
	pause             time.Duration
	profile           string
}

func run() error {
	bin := flag.String("bin", "bin", "directory of the built binaries")
	baselineBin := flag.String("baseline-bin", "", "directory of a second build's binaries (e.g. of an older commit): "+
		"also run the gateway's read and write configurations against a whole system started from it")
	out := flag.String("out", "", "Markdown file to write the results section into (stdout when empty)")
	var o options
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each runs every configuration once, in turn")
	flag.DurationVar(&o.readDur, "duration", 8*time.Second, "duration of each read run (and of each write run when -write-duration is not given)")
	flag.DurationVar(&o.writeDur, "write-duration", 10*time.Second, "duration of each write run")
	flag.IntVar(&o.conns, "conns", 64, "connections for the read runs")
	flag.IntVar(&o.writeConns, "write-conns", 16, "connections/clients for the write runs")
	flag.DurationVar(&o.pause, "pause", time.Second, "pause before each run, for the previous one's aftermath to settle")
	flag.StringVar(&o.profile, "profile", "", "directory to save CPU profiles of the gateway and the service during the first round's gateway runs "+
		"(profiling costs CPU: those runs' figures come out a little higher)")
	var extraEnv envFlag
	flag.Var(&extraEnv, "env", "extra process setting NAME=value or process:NAME=value (repeatable; both systems)")
	var baselineEnv envFlag
	flag.Var(&baselineEnv, "baseline-env", "process setting for the baseline system only, over -env (repeatable; "+
		"with -baseline-bin bin it compares a setting side by side on one build)")
	goBench := flag.String("go-bench", "", "write this file of go test -bench output into the \"go\" section of -out and exit")
	events := flag.Bool("events", false, "run the end-to-end event benchmark instead (audience version creates → "+
		"page.version.created at a webhook receiver) and write the \"events\" section of -out")
	eo := eventOptions{settle: 60 * time.Second}
	flag.IntVar(&eo.rate, "event-rate", 1000, "-events: creates per second")
	flag.DurationVar(&eo.dur, "event-duration", 60*time.Second, "-events: how long the creates are sent")
	flag.IntVar(&eo.audiences, "event-audiences", 100, "-events: audiences the creates go to in turn")
	flag.IntVar(&eo.inflight, "event-inflight", 256, "-events: creates in flight at most")
	flag.DurationVar(&eo.warmup, "event-warmup", 30*time.Second, "-events: the same load before the measured one, then ANALYZE")
	sweep := flag.String("event-sweep", "", "-events: comma-separated rates, one run each on one system, lowest first "+
		"(e.g. 10,100,200,300); writes the \"events-sweep\" section instead of \"events\"")
	floorUpstream := flag.String("floor-proxy", "", "internal: serve the floor proxy to this upstream (host:port) and nothing else")
	floorListen := flag.String("floor-listen", "", "internal: the floor proxy's listening address")
	flag.Parse()
	if *floorUpstream != "" {
		return serveFloorProxy(*floorListen, *floorUpstream)
	}
	if *goBench != "" {
		b, err := os.ReadFile(*goBench)
		if err != nil {
			return err
		}
		return replaceSection(*out, "go", "```\n"+strings.TrimSpace(string(b))+"\n```\n")
	}
	if len(baselineEnv) > 0 && *baselineBin == "" {
		return fmt.Errorf("-baseline-env needs -baseline-bin")
	}
	if *sweep != "" && !*events {
		return fmt.Errorf("-event-sweep needs -events")
	}
	explicit := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if explicit["duration"] && !explicit["write-duration"] {
		o.writeDur = o.readDur
	}
	if *events {
		for _, f := range strings.Split(*sweep, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			rate, err := strconv.Atoi(f)
			if err != nil || rate < 1 {
				return fmt.Errorf("-event-sweep: %q is not a positive rate", f)
			}
			eo.sweep = append(eo.sweep, rate)
		}
		slices.Sort(eo.sweep)
		return runEventBench(*bin, *out, eo, extraEnv)
	}
	if o.rounds < 1 {
		return fmt.Errorf("-rounds must be at least 1")
	}
	// The direct and nginx runs send a signature made just before the run, which the
	// service accepts for internalauth.MaxSkew.
	if o.readDur > internalauth.MaxSkew-10*time.Second {
		return fmt.Errorf("-duration %s: read runs must be shorter than %s (the precomputed signatures expire)",
			o.readDur, internalauth.MaxSkew-10*time.Second)
	}
	// Fail before the minute it takes to start a system, not after.
	for _, tool := range []string{"wrk", "nginx"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is needed (make bench installs it on Debian): %w", tool, err)
		}
	}
	if _, err := pgcluster.BinDir(); err != nil {
		return err
	}
	command, machine, started := commandLine(), machineDescription(), time.Now()
	dir, err := runDir("loadbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	binDir, _ := filepath.Abs(*bin)
	cur, err := startSystem(ctx, "current", binDir, dir, extraEnv, nil, o.profile != "")
	if err != nil {
		return err
	}
	defer cur.stop()
	systems := []*system{cur}
	if *baselineBin != "" {
		baseDir, _ := filepath.Abs(*baselineBin)
		env := maps.Clone(extraEnv)
		if env == nil {
			env = envFlag{}
		}
		maps.Copy(env, baselineEnv)
		base, err := startSystem(ctx, "baseline", baseDir, dir, env, nil, false)
		if err != nil {
			return err
		}
		defer base.stop()
		systems = append(systems, base)
	}

	lua := filepath.Join(dir, "post.lua")
	script := `wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"title":"bench topic"}'
`
	if err := os.WriteFile(lua, []byte(script), 0o644); err != nil {
		return err
	}
	pg, err := newPgbench(ctx, cur.opts.PostgresPort, dir)
	if err != nil {
		return err
	}

	reads := readConfigs(cur, systems, dir, o)
	pgConf, writes := writeConfigs(ctx, cur, systems, pg, lua, o)

	for round := range o.rounds {
		for _, c := range reads {
			if err := measure(c, round, "read", o); err != nil {
				return err
			}
		}
	}
	for round := range o.rounds {
		for _, c := range writes {
			if err := measure(c, round, "write", o); err != nil {
				return err
			}
		}
	}

	md := report(reportInput{command: command, started: started, machine: machine, rounds: o.rounds,
		readDur: o.readDur, writeDur: o.writeDur, conns: o.conns, writeConns: o.writeConns,
		baselineBin: *baselineBin, reads: reads, writes: writes, pgbenchConf: pgConf})
	if *out == "" {
		fmt.Print(md)
		return nil
	}
	fmt.Fprint(os.Stderr, md)
	return replaceSection(*out, "gateway", md)
}

// readConfigs are the GET configurations: the service directly, the gateway, nginx
// plain and nginx doing the gateway's job against the current system, then the service
// directly and the gateway of the baseline system. Each row's share is of its own
// system's direct run.
func readConfigs(cur *system, systems []*system, dir string, o options) []*config {
	path := func(s *system) string { return "/v0/topics/" + s.topicID }
	keyHeader := func(s *system) []string { return []string{"x-api-key: " + s.key} }
	wrkRun := func(url string, headers []string) func() (loadResult, error) {
		return func() (loadResult, error) { return runWrk(url, o.conns, o.readDur, headers, "") }
	}
	direct := func(s *system) *config {
		return &config{name: "service directly (Fiber)", sys: s, start: func() (*runPlan, error) {
			url, headers := s.stack.ServiceURL("topics")+path(s), s.signedHeaders()
			if err := expectOK(url, headers); err != nil {
				return nil, err
			}
			return &runPlan{load: wrkRun(url, headers)}, nil
		}}
	}
	gateway := func(s *system, ref *config) *config {
		return &config{name: "through the gateway (key check, rate limit, proxy)", sys: s, proxyRole: roleGateway,
			ref: ref, profile: s == cur, start: func() (*runPlan, error) {
				url := s.stack.GatewayURL + path(s)
				if err := expectOK(url, keyHeader(s)); err != nil {
					return nil, err
				}
				return &runPlan{load: wrkRun(url, keyHeader(s))}, nil
			}}
	}
	// proxied plans a run through a proxy process just started (p, or its start's err):
	// check must pass on the proxied URL first; the process's CPU is counted as role.
	proxied := func(p *proxyProc, err error, role, what string, headers []string, check func(url string) error) (*runPlan, error) {
		if err != nil {
			return nil, err
		}
		url := p.url + path(cur)
		if err := check(url); err != nil {
			p.stop()
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return &runPlan{load: wrkRun(url, headers), stop: p.stop,
			extra: []group{{label: role, roots: []int{p.cmd.Process.Pid}}}}, nil
	}
	upstream := strings.TrimPrefix(cur.stack.ServiceURL("topics"), "http://")
	curDirect := direct(cur)
	curDirect.ref = curDirect
	all := []*config{curDirect, gateway(cur, curDirect),
		{name: "nginx, plain keep-alive proxy", sys: cur, proxyRole: roleNginx, ref: curDirect, start: func() (*runPlan, error) {
			n, err := nginxPlain(dir, upstream, cur.signedHeaders())
			return proxied(n, err, roleNginx, "nginx plain", nil, func(url string) error { return expectOK(url, nil) })
		}},
		{name: "nginx doing the gateway's job (key map, per-key limit_req, request ID; see below)",
			sys: cur, proxyRole: roleNginx, ref: curDirect, start: func() (*runPlan, error) {
				sig := cur.signer.Sign(internalauth.Claims{TenantID: benchTenant, KeyID: cur.keyID, RequestID: benchRequestID}, time.Now())
				n, err := nginxGateway(dir, upstream, cur.stack.GatewayURL, cur.key, cur.keyID, sig)
				return proxied(n, err, roleNginx, "nginx doing the gateway's job", keyHeader(cur), func(url string) error {
					err := expectOK(url, keyHeader(cur))
					if err == nil {
						err = expectRefusal(url, nil)
					}
					if err == nil {
						err = expectRefusal(url, []string{"x-api-key: not-a-key"})
					}
					return err
				})
			}},
		{name: "floor: a fasthttp proxy that only signs and forwards (see below)", sys: cur, proxyRole: roleFloor,
			ref: curDirect, start: func() (*runPlan, error) {
				f, err := startFloor(cur, upstream)
				return proxied(f, err, roleFloor, "floor proxy", nil, func(url string) error { return expectOK(url, nil) })
			}},
	}
	for _, s := range systems[1:] {
		d := direct(s)
		d.ref = d
		all = append(all, d, gateway(s, d))
	}
	return all
}

// writeConfigs are pgbench on the current system's cluster and a create through the
// gateway of every system.
func writeConfigs(ctx context.Context, cur *system, systems []*system, pg *pgbench, lua string, o options) (*config, []*config) {
	pgConf := &config{name: fmt.Sprintf("pgbench single-row INSERT, %d clients", o.writeConns), sys: cur,
		start: func() (*runPlan, error) {
			return &runPlan{load: func() (loadResult, error) { return pg.run(o.writeConns, o.writeDur) }}, nil
		}}
	pgConf.ref = pgConf
	all := []*config{pgConf}
	for _, s := range systems {
		all = append(all, &config{name: "POST /v0/topics through the gateway", sys: s, ref: pgConf, profile: s == cur, start: func() (*runPlan, error) {
			// Leftovers of an earlier run would otherwise be drained on this run's account.
			if _, err := s.drainOutbox(ctx, time.Minute); err != nil {
				return nil, err
			}
			return &runPlan{
				load: func() (loadResult, error) {
					return runWrk(s.stack.GatewayURL+"/v0/topics", o.writeConns, o.writeDur, []string{"x-api-key: " + s.key}, lua)
				},
				drain: func() (time.Duration, error) { return s.drainOutbox(ctx, time.Minute) },
			}, nil
		}})
	}
	return pgConf, all
}

// measure runs one configuration once and records its sample.
func measure(c *config, round int, kind string, o options) error {
	fmt.Fprintf(os.Stderr, "round %d/%d %s: %s: ", round+1, o.rounds, kind, c.label())
	plan, err := c.start()
	if err != nil {
		return fmt.Errorf("%s: %w", c.label(), err)
	}
	if plan.stop != nil {
		defer plan.stop()
	}
	groups, err := c.sys.groups()
	if err != nil {
		return err
	}
	groups = append(groups, plan.extra...)
	time.Sleep(o.pause)
	if o.profile != "" && round == 0 && c.profile {
		dur := o.readDur
		if kind == "write" {
			dur = o.writeDur
		}
		go captureProfiles(o.profile, kind, dur, c.sys.stack.AdminURL, c.sys.stack.MetricsURL("topics"))
	}
	before, err := takeSnapshot(groups)
	if err != nil {
		return err
	}
	res, err := plan.load()
	if err != nil {
		return fmt.Errorf("%s: %w", c.label(), err)
	}
	var drain time.Duration
	if plan.drain != nil {
		if drain, err = plan.drain(); err != nil {
			return fmt.Errorf("%s: %w", c.label(), err)
		}
	}
	after, err := takeSnapshot(groups)
	if err != nil {
		return err
	}
	cpu, machine := after.since(before)
	s := sample{load: res, cpu: cpu, machine: machine, window: after.at.Sub(before.at), drain: drain}
	c.samples = append(c.samples, s)
	fmt.Fprintf(os.Stderr, "%d in %s, %.0f/s, p99 %s, %d errors, CPU µs/op:", res.requests,
		s.window.Round(time.Millisecond), res.rps, res.p99, res.errors)
	for _, g := range groups {
		if v := s.perOp(cpu[g.label]); v >= 0.05 {
			fmt.Fprintf(os.Stderr, " %s %.1f,", g.label, v)
		}
	}
	fmt.Fprintf(os.Stderr, " load generator %.1f, machine %.1f", s.perOp(res.cpu), s.perOp(machine))
	if plan.drain != nil {
		fmt.Fprintf(os.Stderr, " (outbox drained %s after the load)", drain.Round(time.Millisecond))
	}
	fmt.Fprintln(os.Stderr)
	return nil
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

// commandLine is how this run was started, for its report.
func commandLine() string { return "go run ./bench/cmd/loadbench " + strings.Join(os.Args[1:], " ") }

// runDir makes a run's scratch directory (the caller removes it), open to PostgreSQL's
// own user: when loadbench runs as root, its clusters run as that user.
func runDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
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
