package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// sample is one run of one configuration.
type sample struct {
	load loadResult
	// cpu is the CPU of each role's processes over the run; machine the busy CPU of the
	// whole machine. For a write run through the gateway the window reaches past the load
	// until the outbox is empty (drain), so the relay's and the broker's work is in it.
	cpu     map[string]time.Duration
	machine time.Duration
	window  time.Duration
	drain   time.Duration
}

// perOp is CPU time per completed request, in µs.
func (s sample) perOp(d time.Duration) float64 {
	if s.load.requests == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / 1e3 / float64(s.load.requests)
}

// spread is the median and range of one figure over the rounds.
type spread struct{ med, lo, hi float64 }

func spreadOf(v []float64) spread {
	if len(v) == 0 {
		return spread{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{m, s[0], s[len(s)-1]}
}

// format writes the median, and the range when there is more than one round.
func (s spread) format(verb, unit string) string {
	if s.lo == s.hi {
		return fmt.Sprintf(verb+unit, s.med)
	}
	return fmt.Sprintf(verb+unit+" ("+verb+"–"+verb+unit+")", s.med, s.lo, s.hi)
}

// collect is f of each round's sample, as a spread.
func collect[S any](samples []S, f func(S) float64) spread {
	v := make([]float64, len(samples))
	for i, s := range samples {
		v[i] = f(s)
	}
	return spreadOf(v)
}

// ratio collects f(config's sample) / f(reference's sample) round by round: a share
// within one round, when both ran minutes apart on the same machine.
func ratio[S any](samples, ref []S, f func(S) float64) spread {
	var v []float64
	for i := range min(len(samples), len(ref)) {
		if d := f(ref[i]); d != 0 {
			v = append(v, f(samples[i])/d)
		}
	}
	return spreadOf(v)
}

func rps(s sample) float64 { return s.load.rps }
func p99ms(s sample) float64 {
	return float64(s.load.p99.Nanoseconds()) / 1e6
}
func machinePerOp(s sample) float64 { return s.perOp(s.machine) }
func rolePerOp(role string) func(sample) float64 {
	return func(s sample) float64 { return s.perOp(s.cpu[role]) }
}
func loadGenPerOp(s sample) float64 { return s.perOp(s.load.cpu) }

func errorsOf(samples []sample) int64 {
	var n int64
	for _, s := range samples {
		n += s.load.errors
	}
	return n
}

// reportInput is everything the Markdown section shows.
type reportInput struct {
	command           string
	started           time.Time
	machine           string
	rounds            int
	readDur, writeDur time.Duration
	conns, writeConns int
	baselineBin       string
	reads, writes     []*config
	pgbenchConf       *config
}

func report(in reportInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s with `%s`.\n\n", in.started.UTC().Format("2006-01-02 15:04 MST"), in.machine, in.command)
	rounds := fmt.Sprintf("%d rounds", in.rounds)
	if in.rounds == 1 {
		rounds = "1 round (no spread: pass -rounds 3 or more to see one)"
	}
	fmt.Fprintf(&b, "%s; each round runs every configuration once, in the order of the tables "+
		"(reads: %s per run; writes: %s per run), so that a change in the machine's load falls on all of them. "+
		"Each cell is the median over the rounds, with the lowest and highest in brackets; shares are taken "+
		"round by round (each run against the reference run of its own round).", rounds, in.readDur, in.writeDur)
	if in.baselineBin != "" {
		fmt.Fprintf(&b, " Rows marked *baseline* ran against a second whole system (its own PostgreSQL, broker, "+
			"services and gateway) started from the binaries in `%s`, idle while the other system was measured; "+
			"a baseline read's share is of the baseline's own direct run, a baseline write's of the one pgbench run.", in.baselineBin)
	}
	b.WriteString("\n\n")

	fmt.Fprintf(&b, "Reads: `GET /v0/topics/{id}` of a stored topic, wrk with %d connections. "+
		"CPU: µs per request of each process over the run (utime + stime from `/proc/<pid>/stat`, every thread; "+
		"nginx is its master and workers, PostgreSQL its postmaster and backends), and of the whole machine "+
		"(busy time in `/proc/stat`).\n\n", in.conns)
	b.WriteString("| path | requests/s | share of direct | p99 ms | errors | CPU µs/req: proxy | topics service | PostgreSQL | wrk | whole machine |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range in.reads {
		proxy := "–"
		if c.proxyRole != "" {
			proxy = collect(c.samples, rolePerOp(c.proxyRole)).format("%.1f", "")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", c.label(),
			collect(c.samples, rps).format("%.0f", ""),
			ratio(c.samples, c.ref.samples, rps).percent(),
			collect(c.samples, p99ms).format("%.2f", ""),
			errorsOf(c.samples), proxy,
			collect(c.samples, rolePerOp(roleService)).format("%.1f", ""),
			collect(c.samples, rolePerOp(rolePostgres)).format("%.1f", ""),
			collect(c.samples, loadGenPerOp).format("%.1f", ""),
			collect(c.samples, machinePerOp).format("%.1f", ""))
	}
	b.WriteString("\nThe nginx rows proxy to the same service. \"nginx doing the gateway's job\" maps the API key to " +
		"its tenant and key ID (an unknown or missing key gets 401 with the error envelope), applies a per-key " +
		"`limit_req` with the key's rate (never refusing here, as the gateway does not), makes a request ID per " +
		"request (`$request_id`, returned in `X-Request-Id`), drops the key and sets `X-Forwarded-*` and the " +
		"internal headers. Differences in nginx's favour: nginx cannot compute an HMAC per request, so the " +
		"internal signature is computed once before each run and set from the key's map entry (it stays valid " +
		"for 60 s), and because that signature covers the request ID, the service receives a fixed " +
		"`X-Request-Id` while nginx's own ID travels as `X-Nginx-Request-Id`; nginx also sends no `RateLimit-*` " +
		"headers, keeps no metrics and propagates no trace context. The plain nginx row adds the same " +
		"precomputed headers to every request and checks nothing. The floor row is the least a proxy on the " +
		"gateway's own stack does: a plain fasthttp server (no Fiber) that sets the internal headers, signs them " +
		"per request as the gateway does, and forwards over a pooled fasthttp client with the gateway's settings; " +
		"no key check, rate limit, metrics, request ID or trace context. Its CPU per request is the part of the " +
		"gateway's that fasthttp and the Go runtime spend moving the request and its answer.\n\n")

	fmt.Fprintf(&b, "Writes: %d clients/connections. CPU per operation is measured from the start of the load "+
		"until the topics service's outbox is empty again (the relay publishes and deletes each create's "+
		"event after the answer), so the relay's and the broker's work is counted.\n\n", in.writeConns)
	b.WriteString("| write | per second | share of pgbench | p99 ms | errors | whole-machine CPU µs/op | CPU vs pgbench | outbox drained after |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, c := range in.writes {
		drain := "–"
		if c != in.pgbenchConf {
			drain = collect(c.samples, func(s sample) float64 { return float64(s.drain.Milliseconds()) }).format("%.0f", " ms")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s | %s |\n", c.label(),
			collect(c.samples, rps).format("%.0f", ""),
			ratio(c.samples, c.ref.samples, rps).percent(),
			collect(c.samples, p99ms).format("%.2f", ""),
			errorsOf(c.samples),
			collect(c.samples, machinePerOp).format("%.1f", ""),
			ratio(c.samples, c.ref.samples, machinePerOp).times(),
			drain)
	}
	b.WriteString("\nCPU per write by process, µs per operation (median over the rounds). The devstack process is " +
		"this tool itself: it hosts the embedded Kafka-protocol broker (kfake) of every system it started; " +
		"the outbox relay runs inside the topics service. \"Rest of the machine\" is the whole machine's busy " +
		"time minus the rows above it: other processes, including anything else running on the machine, and " +
		"the kernel's work not charged to a process.\n\n")
	b.WriteString("| process |")
	for _, c := range in.writes {
		b.WriteString(" " + c.label() + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(in.writes)) + "\n")
	rows := []struct {
		name string
		f    func(sample) float64
	}{
		{"gateway", rolePerOp(roleGateway)},
		{"topics service (HTTP, create, outbox relay)", rolePerOp(roleService)},
		{"PostgreSQL (postmaster and every backend)", rolePerOp(rolePostgres)},
		{"devstack process (embedded broker)", rolePerOp(roleDevstack)},
		{"other services (pages, persons, assets, webhooks; idle)", rolePerOp(roleOthers)},
		{"load generator (wrk or pgbench)", loadGenPerOp},
		{"rest of the machine", restPerOp},
		{"whole machine", machinePerOp},
	}
	for _, r := range rows {
		b.WriteString("| " + r.name + " |")
		for _, c := range in.writes {
			fmt.Fprintf(&b, " %.1f |", collect(c.samples, r.f).med)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// restPerOp is the machine's busy CPU not charged to a measured process.
func restPerOp(s sample) float64 {
	rest := s.machine - s.load.cpu
	for _, d := range s.cpu {
		rest -= d
	}
	return s.perOp(rest)
}

func (s spread) percent() string {
	if s == (spread{}) {
		return "–"
	}
	return spread{100 * s.med, 100 * s.lo, 100 * s.hi}.format("%.0f", "%%")
}

func (s spread) times() string {
	if s == (spread{}) {
		return "–"
	}
	return s.format("%.2f", "x")
}

// machineDescription names the CPU, its cores, the kernel and the load before the run.
func machineDescription() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	load, _ := os.ReadFile("/proc/loadavg")
	loadFields := strings.Fields(string(load))
	l := "?"
	if len(loadFields) >= 3 {
		l = strings.Join(loadFields[:3], " ")
	}
	desc := fmt.Sprintf("%s/%s, %s, %d cores, Linux %s (load average %s before the run; load generator on the same cores)",
		runtime.GOOS, runtime.GOARCH, model, runtime.NumCPU(), strings.TrimSpace(string(kernel)), l)
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		desc += ", source tree at " + strings.TrimSpace(string(out))
	}
	return desc
}
