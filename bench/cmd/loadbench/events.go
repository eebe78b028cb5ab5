package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/devstack"
	"github.com/customerapi/platform/libs/postgres"
)

// The end-to-end event run (-events): audience version creates sent through the gateway
// at a fixed rate, open loop, and each create's page.version.created event awaited at a
// webhook receiver on 127.0.0.1. What it measures is the whole pipeline a customer sees:
// gateway, pages service, its outbox and relay, the broker, the webhooks service's
// consumer, queue and dispatcher, and the signed POST to the receiver.

// eventOptions are the run's settings.
type eventOptions struct {
	rate      int           // creates per second
	dur       time.Duration // how long the creates are sent
	audiences int           // the creates go to this many audiences in turn
	inflight  int           // creates in flight at most; beyond it a tick counts as late
	settle    time.Duration // how long to wait for the last deliveries after the sends
	warmup    time.Duration // the same load before the measured one (0: none)
	sweep     []int         // when set, one run per rate instead of rate
}

// eventResult is what one run measured.
type eventResult struct {
	opts                          eventOptions
	sent, created, failed, late   int
	delivered, duplicate, missing int
	sendDur                       time.Duration
	// e2e is, per delivered event, the time from the start of its create request to the
	// arrival of its delivery; answer is each create's request time.
	e2e, answer []time.Duration
	cpu         map[string]time.Duration
	machine     time.Duration
	lastArrival time.Duration // from the first send to the last delivery
	// statements are the costliest statements of the event's databases over the run
	// (pg_stat_statements; the audiences' set-up included).
	statements []statement
	// stages split e2e at the webhooks database's own timestamps, in the order of stageNames.
	stages [][]time.Duration
	// postgres is PostgreSQL's CPU over the run by kind of process, user and system apart.
	postgres map[string]cpuSplit
	// processed is how many versions the pages service's version worker finished while
	// the run was measured; waiting is how many were still queued or processing at its
	// end. The CPU figures include the worker's work on the processed ones only.
	processed, waiting int64
}

// stageNames are the parts of an event's way, split where the webhooks database records
// a time: the delivery's created_at is the start of the consumer's transaction that
// stored it, and the first attempt's attempted_at the moment the dispatcher began to send.
var stageNames = []string{
	"request → consumer's transaction (gateway, create, outbox relay, broker, consumer's fetch)",
	"consumer's transaction → first attempt (its commit, the wake-up, the claim)",
	"first attempt → arrival (signing, POST on 127.0.0.1)",
}

// eventReceiver is the webhook endpoint: it records the arrival time of every
// page.version.created delivery by version ID.
type eventReceiver struct {
	srv     *http.Server
	url     string
	mu      sync.Mutex
	arrived map[string]time.Time
	dups    int
}

func startEventReceiver() (*eventReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &eventReceiver{url: "http://" + ln.Addr().String() + "/hook", arrived: map[string]time.Time{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *eventReceiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	var d struct {
		Payload struct {
			Type      string `json:"type"`
			VersionID string `json:"versionId"`
		} `json:"payload"`
	}
	if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&d); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if d.Payload.Type == "page.version.created" && d.Payload.VersionID != "" {
		r.mu.Lock()
		if _, seen := r.arrived[d.Payload.VersionID]; seen {
			r.dups++ // at-least-once: a redelivery is counted, not timed again
		} else {
			r.arrived[d.Payload.VersionID] = at
		}
		r.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *eventReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.arrived)
}

// apiClient sends requests through the gateway with the benchmark's key.
type apiClient struct {
	base, key string
	http      *http.Client
}

// create POSTs body (none when nil) to path, requires a 201 and decodes the answer into out.
func (c *apiClient) create(ctx context.Context, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, "POST", c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("x-api-key", c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST %s: status %d, want 201: %s", path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// eventRig is what every measured stretch of an event run uses: the receiver, the
// client, and the audiences' version paths, with the subscription and the page made once.
type eventRig struct {
	s     *system
	rcv   *eventReceiver
	c     *apiClient
	paths []string
}

// newEventRig starts the receiver and prepares a subscription, a page and its audiences
// on s, and waits until the audiences' first versions are delivered, so that the runs
// start with an idle pipeline.
func newEventRig(ctx context.Context, s *system, o eventOptions) (*eventRig, error) {
	rcv, err := startEventReceiver()
	if err != nil {
		return nil, err
	}
	rig := &eventRig{s: s, rcv: rcv, c: &apiClient{base: s.stack.GatewayURL, key: s.key, http: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: o.inflight, MaxConnsPerHost: o.inflight},
	}}}
	fail := func(err error) (*eventRig, error) {
		rig.close()
		return nil, err
	}
	c := rig.c
	if err := c.create(ctx, "/v0/webhook_subscriptions", map[string]any{"url": rcv.url,
		"events": []string{"page.version.created"}}, nil); err != nil {
		return fail(err)
	}
	var page struct {
		PageID string `json:"pageId"`
	}
	if err := c.create(ctx, "/v0/pages", map[string]any{"name": "Event benchmark", "title": "Events",
		"pageContext": "The page whose audience versions the event benchmark creates", "brandId": "brand_bench",
		"pageType": "inbound"}, &page); err != nil {
		return fail(err)
	}
	rig.paths = make([]string, o.audiences)
	for i := range rig.paths {
		var aud struct {
			AudienceID string `json:"audienceId"`
		}
		if err := c.create(ctx, "/v0/pages/"+page.PageID+"/audiences", map[string]any{"publishBehavior": "publish"}, &aud); err != nil {
			return fail(err)
		}
		rig.paths[i] = "/v0/pages/" + page.PageID + "/audiences/" + aud.AudienceID + "/versions"
	}
	// Each audience's first version (created with it) is delivered too.
	if err := waitFor(ctx, 60*time.Second, func() bool { return rcv.count() >= o.audiences }); err != nil {
		return fail(fmt.Errorf("the audiences' first versions were not delivered: %w", err))
	}
	return rig, nil
}

func (rig *eventRig) close() { _ = rig.rcv.srv.Close() }

// run warms the system up with the load of o, calls prepare (when not nil), then runs
// and measures the load.
func (rig *eventRig) run(ctx context.Context, o eventOptions, prepare func() error) (eventResult, error) {
	res := eventResult{opts: o}
	s, rcv, c, paths := rig.s, rig.rcv, rig.c, rig.paths
	if o.warmup > 0 {
		preloaded := rcv.count()
		warm := drive(ctx, c, paths, o.rate, o.warmup, o.inflight)
		if err := waitFor(ctx, o.settle, func() bool { return rcv.count() >= preloaded+len(warm.sentAt) }); err != nil {
			return res, fmt.Errorf("the warm-up's deliveries did not arrive: %w", err)
		}
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			return res, err
		}
	}
	preloaded := rcv.count()

	groups, err := eventGroups(s)
	if err != nil {
		return res, err
	}
	pm, err := postmasterPID(s.pgData)
	if err != nil {
		return res, err
	}
	pmBefore, ok := readProcStat(pm)
	if !ok {
		return res, fmt.Errorf("the postmaster (%d) is gone", pm)
	}
	pgBefore := postgresChildren(pm)
	processedBefore, _, err := s.versionWork(ctx)
	if err != nil {
		return res, err
	}
	before, err := takeSnapshot(groups)
	if err != nil {
		return res, err
	}
	run := drive(ctx, c, paths, o.rate, o.dur, o.inflight)
	res.sent, res.late, res.failed, res.sendDur = run.sent, run.late, run.failed, run.dur
	res.created = len(run.sentAt)
	_ = waitFor(ctx, o.settle, func() bool { return rcv.count()-preloaded >= res.created })
	after, err := takeSnapshot(groups)
	if err != nil {
		return res, err
	}
	pmAfter, ok := readProcStat(pm)
	if !ok {
		return res, fmt.Errorf("the postmaster (%d) is gone", pm)
	}
	res.postgres = postgresBreakdown(pgBefore, postgresChildren(pm), pmBefore, pmAfter)
	res.cpu, res.machine = after.since(before)
	processedAfter, waiting, err := s.versionWork(ctx)
	if err != nil {
		return res, err
	}
	res.processed, res.waiting = processedAfter-processedBefore, waiting

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	res.duplicate = rcv.dups
	rcv.dups = 0
	var last time.Time
	for id, t0 := range run.sentAt {
		at, ok := rcv.arrived[id]
		if !ok {
			res.missing++
			continue
		}
		res.delivered++
		res.e2e = append(res.e2e, at.Sub(t0))
		if at.After(last) {
			last = at
		}
	}
	res.lastArrival = last.Sub(run.start)
	res.answer = run.answers
	res.stages, err = s.eventStages(ctx, run.sentAt, rcv.arrived)
	if err != nil {
		return res, err
	}
	slices.Sort(res.e2e)
	slices.Sort(res.answer)
	return res, nil
}

// driven is what one stretch of the open-loop load sent.
type driven struct {
	start              time.Time
	dur                time.Duration // how long the sends took
	sent, late, failed int
	sentAt             map[string]time.Time // by version ID: when its create was sent
	answers            []time.Duration      // each create's request time
}

// drive sends version creates to paths in turn on a fixed schedule of rate a second for
// dur, with at most inflight in flight (a tick that finds none free is late), and waits
// for the answers.
func drive(ctx context.Context, c *apiClient, paths []string, rate int, dur time.Duration, inflight int) driven {
	d := driven{sentAt: map[string]time.Time{}}
	var (
		mu     sync.Mutex
		failed atomic.Int64
		wg     sync.WaitGroup
	)
	slots := make(chan struct{}, inflight)
	interval := time.Second / time.Duration(rate)
	d.start = time.Now()
	for i := range int(dur / interval) {
		time.Sleep(time.Until(d.start.Add(time.Duration(i) * interval))) // the open loop's schedule
		select {
		case slots <- struct{}{}:
		default:
			d.late++ // every slot busy: the platform is behind the schedule
			continue
		}
		d.sent++
		wg.Add(1)
		go func(path string) {
			defer func() { <-slots; wg.Done() }()
			t0 := time.Now()
			var v struct {
				VersionID string `json:"versionId"`
			}
			if err := c.create(ctx, path, nil, &v); err != nil || v.VersionID == "" {
				failed.Add(1)
				return
			}
			mu.Lock()
			d.sentAt[v.VersionID] = t0
			d.answers = append(d.answers, time.Since(t0))
			mu.Unlock()
		}(paths[i%len(paths)])
	}
	d.dur = time.Since(d.start)
	wg.Wait()
	d.failed = int(failed.Load())
	return d
}

// eventGroups are the processes whose CPU the run records: the gateway, the pages and
// webhooks services (the event's path), the other services, PostgreSQL and this process
// (the embedded broker, the load generator and the receiver).
func eventGroups(s *system) ([]group, error) {
	pm, err := postmasterPID(s.pgData)
	if err != nil {
		return nil, err
	}
	var others []int
	for _, spec := range devstack.Services {
		if spec.Name != "pages" && spec.Name != "webhooks" {
			others = append(others, s.stack.PID(spec.Name))
		}
	}
	return []group{
		{label: roleGateway, roots: []int{s.stack.PID("gateway")}},
		{label: "pages service", roots: []int{s.stack.PID("pages")}},
		{label: "webhooks service", roots: []int{s.stack.PID("webhooks")}},
		{label: roleOthers, roots: others},
		{label: rolePostgres, roots: []int{pm}},
		{label: "loadbench process (broker, load, receiver)", roots: []int{os.Getpid()}, self: true},
	}, nil
}

// waitFor polls cond until it holds, ctx ends or within passes.
func waitFor(ctx context.Context, within time.Duration, cond func() bool) error {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// eventReport renders a run as the "events" section of the benchmarks document.
func eventReport(command string, started time.Time, machine string, r eventResult) string {
	var b strings.Builder
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	fmt.Fprintf(&b, "Command: `%s` (%s; %s).\n\n", command, started.Format("2006-01-02 15:04"), machine)
	o := r.opts
	fmt.Fprintf(&b, "Audience version creates through the gateway, open loop at %d/s for %s over %d audiences "+
		"(at most %d in flight), each awaited as a signed `page.version.created` delivery at a receiver on "+
		"127.0.0.1. Before the measured load, the same load for %s, then ANALYZE of the databases (as autovacuum "+
		"does within its first minute of a growing table).\n\n", o.rate, o.dur, o.audiences, o.inflight, o.warmup)
	achieved := float64(r.created) / r.sendDur.Seconds()
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| creates sent / answered 201 / failed / late (no slot free) | %d / %d / %d / %d |\n", r.sent, r.created, r.failed, r.late)
	fmt.Fprintf(&b, "| creates per second achieved | %.0f |\n", achieved)
	fmt.Fprintf(&b, "| events delivered / missing / redelivered | %d / %d / %d |\n", r.delivered, r.missing, r.duplicate)
	if len(r.e2e) > 0 {
		fmt.Fprintf(&b, "| create → delivery p50 / p90 / p99 / max | %s / %s / %s / %s |\n",
			ms(percentile(r.e2e, 0.50)), ms(percentile(r.e2e, 0.90)), ms(percentile(r.e2e, 0.99)), ms(r.e2e[len(r.e2e)-1]))
	}
	if len(r.answer) > 0 {
		fmt.Fprintf(&b, "| create's answer p50 / p99 | %s / %s |\n", ms(percentile(r.answer, 0.50)), ms(percentile(r.answer, 0.99)))
	}
	for i, st := range r.stages {
		if len(st) > 0 {
			fmt.Fprintf(&b, "| stage %d, %s: p50 / p90 / p99 / max | %s / %s / %s / %s |\n", i+1, stageNames[i],
				ms(percentile(st, 0.50)), ms(percentile(st, 0.90)), ms(percentile(st, 0.99)), ms(st[len(st)-1]))
		}
	}
	fmt.Fprintf(&b, "| last delivery after the first send | %.1f s |\n", r.lastArrival.Seconds())
	fmt.Fprintf(&b, "| versions the version worker finished while measured / still waiting at the end | %d / %d |\n", r.processed, r.waiting)
	if r.delivered > 0 {
		fmt.Fprintf(&b, "| whole machine's busy CPU per event | %.0f µs |\n", float64(r.machine.Microseconds())/float64(r.delivered))
		labels := make([]string, 0, len(r.cpu))
		for k := range r.cpu {
			labels = append(labels, k)
		}
		slices.Sort(labels)
		for _, k := range labels {
			fmt.Fprintf(&b, "| CPU per event: %s | %.0f µs |\n", k, float64(r.cpu[k].Microseconds())/float64(r.delivered))
		}
	}
	if len(r.postgres) > 0 && r.delivered > 0 {
		fmt.Fprintf(&b, "\nPostgreSQL's CPU per event by process (from /proc; a client backend's system time is its "+
			"socket reads and writes and the WAL writes and flushes of its commits):\n\n")
		fmt.Fprintf(&b, "| processes | user µs per event | system µs per event |\n|---|---|---|\n")
		kinds := make([]string, 0, len(r.postgres))
		for k := range r.postgres {
			kinds = append(kinds, k)
		}
		slices.SortFunc(kinds, func(a, b string) int {
			ta, tb := r.postgres[a].user+r.postgres[a].sys, r.postgres[b].user+r.postgres[b].sys
			return cmp.Or(cmp.Compare(tb, ta), strings.Compare(a, b))
		})
		for _, k := range kinds {
			v := r.postgres[k]
			if v.user+v.sys == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %.0f | %.0f |\n", k, float64(v.user.Microseconds())/float64(r.delivered),
				float64(v.sys.Microseconds())/float64(r.delivered))
		}
	}
	if len(r.statements) > 0 && r.delivered > 0 {
		fmt.Fprintf(&b, "\nWhere PostgreSQL's time goes (pg_stat_statements over the run, the %d costliest statements of each database):\n\n", 6)
		fmt.Fprintf(&b, "| database | statement | calls per event | execution ms per event | pages per call |\n|---|---|---|---|---|\n")
		for _, st := range r.statements {
			q := shortStatement(st.query)
			fmt.Fprintf(&b, "| %s | `%s` | %.2f | %.3f | %.0f |\n", st.db, strings.ReplaceAll(q, "|", "\\|"),
				float64(st.calls)/float64(r.delivered), st.totalMs/float64(r.delivered), float64(st.blocks)/float64(max(st.calls, 1)))
		}
	}
	return b.String()
}

// selectList is a statement's select list, which shortStatement leaves out.
var selectList = regexp.MustCompile(`(?is)^(\s*SELECT\s+)(.+?)(\s+FROM\s)`)

// shortStatement is a statement on one line, its select list elided (the WHERE clause
// says which statement it is), at most 160 characters.
func shortStatement(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if m := selectList.FindStringSubmatchIndex(q); m != nil && m[5]-m[4] > 40 {
		q = q[:m[4]] + "…" + q[m[5]:]
	}
	if len(q) > 160 {
		q = q[:160] + "…"
	}
	return q
}

// statementDBs are the databases on the event's path whose statements are reported.
var statementDBs = []string{"pages", "webhooks"}

// statement is one row of pg_stat_statements.
type statement struct {
	db, query string
	calls     int64
	totalMs   float64
	// blocks counts the shared buffers the calls touched (hit or read): a statement
	// that walks index entries of deleted rows shows here before it shows in time.
	blocks int64
}

// database is a one-connection pool on db of the system's PostgreSQL, as its superuser.
func (s *system) database(ctx context.Context, db string) (*pgxpool.Pool, error) {
	return postgres.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&pool_max_conns=1", s.opts.PostgresPort, db))
}

// analyzeAndResetStatements analyzes db, creates pg_stat_statements in it and clears its
// figures.
func (s *system) analyzeAndResetStatements(ctx context.Context, db string) error {
	conn, err := s.database(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Exec(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("%s: analyze: %w", db, err)
	}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return fmt.Errorf("%s: pg_stat_statements: %w", db, err)
	}
	_, err = conn.Exec(ctx, "SELECT pg_stat_statements_reset()")
	return err
}

// versionWork counts the versions the pages service's version worker has finished and
// those still queued or processing.
func (s *system) versionWork(ctx context.Context) (processed, waiting int64, err error) {
	conn, err := s.database(ctx, "pages")
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status NOT IN ('queued', 'processing')),
		count(*) FILTER (WHERE status IN ('queued', 'processing')) FROM audience_versions`).Scan(&processed, &waiting)
	if err != nil {
		return 0, 0, fmt.Errorf("pages: count versions: %w", err)
	}
	return processed, waiting, nil
}

// topStatements are db's n statements of the largest total execution time.
func (s *system) topStatements(ctx context.Context, db string, n int) ([]statement, error) {
	conn, err := s.database(ctx, db)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.Query(ctx, `SELECT query, calls, total_exec_time, shared_blks_hit + shared_blks_read FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT $1`, n)
	if err != nil {
		return nil, fmt.Errorf("%s: pg_stat_statements: %w", db, err)
	}
	defer rows.Close()
	var out []statement
	for rows.Next() {
		st := statement{db: db}
		if err := rows.Scan(&st.query, &st.calls, &st.totalMs, &st.blocks); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// eventStages reads, for every version in sentAt that arrived, its delivery's created_at
// and first attempted_at from the webhooks database, and returns the three stages of
// stageNames, each sorted. The database's times are truncated to the millisecond, so a
// stage may read up to 1 ms short (never below zero).
func (s *system) eventStages(ctx context.Context, sentAt, arrived map[string]time.Time) ([][]time.Duration, error) {
	conn, err := s.database(ctx, "webhooks")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.Query(ctx, `SELECT convert_from(d.body, 'UTF8')::jsonb->'payload'->>'versionId', d.created_at, min(a.attempted_at)
		FROM deliveries d JOIN delivery_attempts a USING (tenant_id, delivery_id)
		WHERE d.event_type = 'page.version.created' GROUP BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("webhooks: delivery times: %w", err)
	}
	defer rows.Close()
	stages := make([][]time.Duration, len(stageNames))
	since := func(a, b time.Time) time.Duration { return max(b.Sub(a), 0) }
	for rows.Next() {
		var id string
		var stored, attempted time.Time
		if err := rows.Scan(&id, &stored, &attempted); err != nil {
			return nil, err
		}
		t0, sent := sentAt[id]
		at, ok := arrived[id]
		if !sent || !ok {
			continue // not of the measured run
		}
		stages[0] = append(stages[0], since(t0, stored))
		stages[1] = append(stages[1], since(stored, attempted))
		stages[2] = append(stages[2], since(attempted, at))
	}
	for _, st := range stages {
		slices.Sort(st)
	}
	return stages, rows.Err()
}

// runEventBench starts one system from binDir, runs the event benchmark and writes its
// section into out (stdout when empty).
func runEventBench(binDir, out string, o eventOptions, env map[string]string) error {
	if o.rate < 1 || o.audiences < 1 || o.inflight < 1 || o.dur <= 0 {
		return fmt.Errorf("-event-rate, -event-audiences, -event-inflight and -event-duration must be positive")
	}
	command, started := commandLine(), time.Now()
	dir, err := runDir("eventbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	abs, err := filepath.Abs(binDir)
	if err != nil {
		return err
	}
	all := map[string]string{"webhooks:WEBHOOK_ALLOW_PRIVATE_TARGETS": "true"} // the receiver is on 127.0.0.1
	for k, v := range env {
		all[k] = v
	}
	s, err := startSystem(ctx, "current", abs, dir, all,
		map[string]string{"shared_preload_libraries": "pg_stat_statements"}, false)
	if err != nil {
		return err
	}
	defer s.stop()
	// After the warm-up: ANALYZE, as autovacuum does within its first minute of a growing
	// table (plans cached while the tables were nearly empty are made anew), and the
	// statement figures start from zero.
	prepare := func() error {
		for _, db := range statementDBs {
			if err := s.analyzeAndResetStatements(ctx, db); err != nil {
				return err
			}
		}
		return nil
	}
	rig, err := newEventRig(ctx, s, o)
	if err != nil {
		return err
	}
	defer rig.close()
	section, md := "events", ""
	if len(o.sweep) > 0 {
		// One system, each rate after the other, lowest first: every stretch warms up at
		// its own rate, so it starts from that rate's steady state.
		section = "events-sweep"
		var results []eventResult
		for i, rate := range o.sweep {
			ro := o
			ro.rate = rate
			fmt.Fprintf(os.Stderr, "events at %d/s...\n", rate)
			p := prepare
			if i > 0 {
				p = nil // the tables are past their first ANALYZE
			}
			r, err := rig.run(ctx, ro, p)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
		md = sweepReport(command, started, machineDescription(), results)
	} else {
		r, err := rig.run(ctx, o, prepare)
		if err != nil {
			return err
		}
		for _, db := range statementDBs {
			top, err := s.topStatements(ctx, db, 6)
			if err != nil {
				return err
			}
			r.statements = append(r.statements, top...)
		}
		md = eventReport(command, started, machineDescription(), r)
	}
	if out == "" {
		fmt.Print(md)
		return nil
	}
	fmt.Fprint(os.Stderr, md)
	return replaceSection(out, section, md)
}

// sweepReport is the table of runs at several rates: per rate, the time from request to
// delivery and in each stage (p50 / p99), the create's answer, and CPU per event.
func sweepReport(command string, started time.Time, machine string, rs []eventResult) string {
	var b strings.Builder
	ms := func(d []time.Duration) string {
		if len(d) == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f / %.1f", float64(percentile(d, 0.50).Microseconds())/1000,
			float64(percentile(d, 0.99).Microseconds())/1000)
	}
	fmt.Fprintf(&b, "Command: `%s` (%s; %s).\n\n", command, started.Format("2006-01-02 15:04"), machine)
	o := rs[0].opts
	fmt.Fprintf(&b, "One system; at each rate, lowest first, %s of the same load, then %s measured "+
		"(open loop over %d audiences, at most %d in flight). Times p50 / p99 in ms; the stages split each "+
		"event where the webhooks database records a time: 1, %s; 2, %s; 3, %s.\n\n",
		o.warmup, o.dur, o.audiences, o.inflight, stageNames[0], stageNames[1], stageNames[2])
	fmt.Fprintf(&b, "| rate | creates/s achieved | delivered / missing | create → delivery | stage 1 | stage 2 | stage 3 | create's answer | machine CPU per event | of it PostgreSQL | versions finished / waiting |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		cpu, pg := "–", "–"
		if r.delivered > 0 {
			cpu = fmt.Sprintf("%.1f ms", float64(r.machine.Microseconds())/1000/float64(r.delivered))
			pg = fmt.Sprintf("%.1f ms", float64(r.cpu[rolePostgres].Microseconds())/1000/float64(r.delivered))
		}
		stage := func(i int) string {
			if i < len(r.stages) {
				return ms(r.stages[i])
			}
			return "–"
		}
		fmt.Fprintf(&b, "| %d/s | %.0f | %d / %d | %s | %s | %s | %s | %s | %s | %s | %d / %d |\n", r.opts.rate,
			float64(r.created)/r.sendDur.Seconds(), r.delivered, r.missing, ms(r.e2e), stage(0), stage(1), stage(2),
			ms(r.answer), cpu, pg, r.processed, r.waiting)
	}
	return b.String()
}
