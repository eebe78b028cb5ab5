package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
	"github.com/customerapi/platform/libs/outbox"
	"github.com/customerapi/platform/libs/pgcluster"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/postgres/pgtest"
)

// The outbox lever (-outbox-lever): the write path's event design side by side. Each
// design has its own durable PostgreSQL cluster (fsync and synchronous commit on, as make
// run's) and the same embedded broker, and runs the same creates: a row and its event in
// one transaction, sent as one implicit-transaction batch by concurrent writers. The
// outbox table (today's design) writes the event as an outbox row, published and deleted
// by the real outbox.Relay, woken by the real outbox.Wakeup; the WAL message design
// writes it with pg_logical_emit_message on a wal_level=logical cluster, published by
// walReader. A run ends when every create's event has been published, so each design's
// CPU per create holds its relay's work too.

// leverTopic is the Kafka topic of the lever's events.
const leverTopic = "lever.events"

// leverSchema is the table of the creates, shaped like a topic.
const leverSchema = `CREATE TABLE IF NOT EXISTS items (
	tenant_id  text NOT NULL,
	item_id    text NOT NULL,
	title      text NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (tenant_id, item_id))`

const insertItemSQL = `INSERT INTO items (tenant_id, item_id, title) VALUES ($1, $2, $3)`

// countingPublisher counts what Kafka took.
type countingPublisher struct {
	w *kafka.Writer
	n atomic.Int64
}

func (p *countingPublisher) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	if err := p.w.WriteMessages(ctx, msgs...); err != nil {
		return err
	}
	p.n.Add(int64(len(msgs)))
	return nil
}

// leverDesign is one event design on its own cluster.
type leverDesign struct {
	name    string
	cluster *pgcluster.Cluster
	dataDir string
	pool    *pgxpool.Pool
	// queue adds one create's event to its batch.
	queue     func(ctx context.Context, b *pgx.Batch, e events.Envelope) error
	published func() int64
	created   atomic.Int64
	samples   []leverSample
}

// leverSample is one run of one design.
type leverSample struct {
	sample
	pg, bench time.Duration // CPU of the PostgreSQL cluster and of this process
	walBytes  int64
	// postgres is the cluster's CPU by kind of process.
	postgres map[string]cpuSplit
}

type leverOptions struct {
	rounds  int
	dur     time.Duration
	writers int
	pause   time.Duration
}

func runOutboxLever(out string, o leverOptions) error {
	if o.rounds < 1 || o.writers < 1 || o.dur <= 0 {
		return fmt.Errorf("-rounds, -write-conns and -write-duration must be positive")
	}
	if _, err := pgcluster.BinDir(); err != nil {
		return err
	}
	command, started := commandLine(), time.Now()
	dir, err := runDir("outboxlever-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	var tasks sync.WaitGroup
	defer tasks.Wait() // after cancel: the relay, its wake-ups and the reader stop
	defer cancel()

	broker, err := kafkatest.StartOn(0)
	if err != nil {
		return err
	}
	defer broker.Stop()
	kcfg := broker.Config()
	if err := kcfg.EnsureTopics(ctx, leverTopic); err != nil {
		return err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	// Today's design: the service's own pieces.
	wake := outbox.NewWakeup()
	table, err := startLeverDesign(ctx, filepath.Join(dir, "outbox"), "outbox table (today): row + outbox row, outbox.Relay", nil, wake, o.writers)
	if err != nil {
		return err
	}
	defer table.stop()
	wal, err := startLeverDesign(ctx, filepath.Join(dir, "wal"), "WAL message: row + pg_logical_emit_message, logical replication reader",
		map[string]string{"wal_level": "logical", "max_wal_senders": "4", "max_replication_slots": "4"}, nil, o.writers)
	if err != nil {
		return err
	}
	defer wal.stop()

	if err := postgres.Migrate(ctx, table.pool, quiet, outbox.Migrations); err != nil {
		return err
	}
	tablePub := &countingPublisher{w: kcfg.Writer()}
	defer tablePub.w.Close()
	w := outbox.Writer{}
	table.queue = func(ctx context.Context, b *pgx.Batch, e events.Envelope) error {
		return w.Queue(ctx, b, leverTopic, e)
	}
	table.published = tablePub.n.Load
	relay := &outbox.Relay{Pool: table.pool, Publisher: tablePub, Log: quiet, Wakeup: wake}
	tasks.Add(2)
	go func() { defer tasks.Done(); wake.Run(ctx, table.pool, quiet) }()
	go func() { defer tasks.Done(); _ = relay.Run(ctx) }()

	// The alternative: the message, and the reader of the slot.
	if _, err := wal.pool.Exec(ctx, "CREATE PUBLICATION outbox_messages"); err != nil {
		return err
	}
	walPub := &countingPublisher{w: kcfg.Writer()}
	defer walPub.w.Close()
	reader := &walReader{url: wal.cluster.URL("lever"), slot: "outbox", publication: "outbox_messages", pub: walPub,
		batch: 500, statusEvery: time.Second}
	conn, err := reader.start(ctx)
	if err != nil {
		return err
	}
	readerErr := make(chan error, 1)
	tasks.Add(1)
	go func() { defer tasks.Done(); readerErr <- reader.run(ctx, conn) }()
	wal.queue = func(ctx context.Context, b *pgx.Batch, e events.Envelope) error {
		v, err := walMessage(ctx, leverTopic, e)
		if err != nil {
			return err
		}
		b.Queue(emitSQL, v)
		return nil
	}
	wal.published = walPub.n.Load

	designs := []*leverDesign{table, wal}
	for round := range o.rounds {
		for _, d := range designs {
			fmt.Fprintf(os.Stderr, "round %d/%d outbox lever: %s: ", round+1, o.rounds, d.name)
			s, err := d.measure(ctx, o)
			if err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
			select {
			case err := <-readerErr:
				return fmt.Errorf("wal reader stopped: %w", cmp.Or(err, errors.New("no error")))
			default:
			}
			d.samples = append(d.samples, s)
			fmt.Fprintf(os.Stderr, "%d creates, %.0f/s, p99 %s, CPU µs/create: PostgreSQL %.1f, this process %.1f, machine %.1f; WAL %d B/create; published %s after the load\n",
				s.load.requests, s.load.rps, s.load.p99, s.perOp(s.pg), s.perOp(s.bench), s.perOp(s.machine),
				s.walBytes/max(s.load.requests, 1), s.drain.Round(time.Millisecond))
		}
	}
	lag, err := slotLag(ctx, wal.pool)
	if err != nil {
		return err
	}
	md := leverReport(command, started, machineDescription(), o, table, wal, lag)
	if out == "" {
		fmt.Print(md)
		return nil
	}
	fmt.Fprint(os.Stderr, md)
	return replaceSection(out, "outbox-lever", md)
}

// startLeverDesign starts a durable cluster in dir with settings, creates the "lever"
// database and its table, and connects to it with room for the writers and the relay;
// tracer, when not nil, sees every statement (the outbox's Wakeup sees the commits of
// outbox rows through it).
func startLeverDesign(ctx context.Context, dir, name string, settings map[string]string, tracer pgx.QueryTracer, writers int) (*leverDesign, error) {
	port, err := pgtest.FreePort() // below the ephemeral range: no client socket takes it meanwhile
	if err != nil {
		return nil, err
	}
	c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: dir, Port: port, Durable: true, Settings: settings})
	if err != nil {
		return nil, err
	}
	d := &leverDesign{name: name, cluster: c, dataDir: filepath.Join(dir, "data")}
	if err := c.CreateDatabase(ctx, "lever"); err != nil {
		d.stop()
		return nil, err
	}
	d.pool, err = postgres.ConnectWith(ctx, c.URL("lever"), func(cfg *pgxpool.Config) {
		cfg.MaxConns = int32(writers + 4)
		if tracer != nil {
			cfg.ConnConfig.Tracer = tracer
		}
	})
	if err != nil {
		d.stop()
		return nil, err
	}
	if _, err := d.pool.Exec(ctx, leverSchema); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

func (d *leverDesign) stop() {
	if d.pool != nil {
		d.pool.Close()
	}
	_ = d.cluster.Stop()
}

// walMessage is an event as the WAL message design writes it: what outbox.Writer
// stores in an outbox row (the event as JSON, the subject as key, the headers with the
// trace context as a JSON object), framed by appendWALEvent.
func walMessage(ctx context.Context, topic string, e events.Envelope) ([]byte, error) {
	v, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	h, err := json.Marshal(e.Headers(ctx))
	if err != nil {
		return nil, err
	}
	return appendWALEvent(make([]byte, 0, len(topic)+len(e.Subject)+len(h)+len(v)+8), topic, e.Subject, h, v), nil
}

// measure runs the writers for o.dur, waits until every create's event is published,
// and reads the CPU and the WAL written over that span.
func (d *leverDesign) measure(ctx context.Context, o leverOptions) (leverSample, error) {
	pm, err := postmasterPID(d.dataDir)
	if err != nil {
		return leverSample{}, err
	}
	const pgLabel, selfLabel = "postgres", "self"
	groups := []group{{label: pgLabel, roots: []int{pm}}, {label: selfLabel, roots: []int{os.Getpid()}, self: true}}
	// Leftovers of the run before, if any, are published on that run's account.
	if err := waitFor(ctx, time.Minute, func() bool { return d.published() >= d.created.Load() }); err != nil {
		return leverSample{}, fmt.Errorf("events of the run before not published: %w", err)
	}
	time.Sleep(o.pause)
	lsn0, err := walPosition(ctx, d.pool)
	if err != nil {
		return leverSample{}, err
	}
	pgBefore := postgresChildren(pm)
	before, err := takeSnapshot(groups)
	if err != nil {
		return leverSample{}, err
	}
	pmBefore, _ := readProcStat(pm)
	pub0 := d.published()
	load, err := d.write(ctx, o)
	if err != nil {
		return leverSample{}, err
	}
	loadEnd := time.Now()
	want := pub0 + load.requests
	if err := waitFor(ctx, time.Minute, func() bool { return d.published() >= want }); err != nil {
		return leverSample{}, fmt.Errorf("%d of %d events published: %w", d.published()-pub0, load.requests, err)
	}
	drain := time.Since(loadEnd)
	after, err := takeSnapshot(groups)
	if err != nil {
		return leverSample{}, err
	}
	pmAfter, _ := readProcStat(pm)
	breakdown := postgresBreakdown(pgBefore, postgresChildren(pm), pmBefore, pmAfter)
	if got := d.published() - pub0; got != load.requests {
		return leverSample{}, fmt.Errorf("%d creates but %d events published", load.requests, got)
	}
	lsn1, err := walPosition(ctx, d.pool)
	if err != nil {
		return leverSample{}, err
	}
	cpu, machine := after.since(before)
	return leverSample{sample: sample{load: load, cpu: cpu, machine: machine, window: after.at.Sub(before.at), drain: drain},
		pg: cpu[pgLabel], bench: cpu[selfLabel], walBytes: lsn1 - lsn0, postgres: breakdown}, nil
}

// write runs o.writers writers for o.dur, each on its own connection, each create one
// batch: the row and its event, committed together.
func (d *leverDesign) write(ctx context.Context, o leverOptions) (loadResult, error) {
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	deadline := time.Now().Add(o.dur)
	start := time.Now()
	for w := range o.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			err := d.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
				for i := 0; time.Now().Before(deadline); i++ {
					n := d.created.Add(1)
					id := fmt.Sprintf("item_%d", n)
					e, err := events.New("lever", "item.created", id, map[string]any{"itemId": id, "title": "bench item", "sortOrder": i})
					if err != nil {
						return err
					}
					t0 := time.Now()
					b := &pgx.Batch{}
					b.Queue(insertItemSQL, "lever", id, "bench item")
					if err := d.queue(ctx, b, e); err != nil {
						return err
					}
					if err := c.SendBatch(ctx, b).Close(); err != nil {
						d.created.Add(-1)
						return fmt.Errorf("writer %d: %w", w, err)
					}
					mine = append(mine, time.Since(t0))
				}
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, mine...)
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return loadResult{}, errs[0]
	}
	elapsed := time.Since(start)
	slices.Sort(lat)
	n := int64(len(lat))
	return loadResult{requests: n, rps: float64(n) / elapsed.Seconds(), p50: percentile(lat, 0.5), p99: percentile(lat, 0.99)}, nil
}

// walPosition is the cluster's current WAL position in bytes.
func walPosition(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var lsn int64
	err := pool.QueryRow(ctx, "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").Scan(&lsn)
	return lsn, err
}

// slotLag is how much WAL the slot keeps behind the current position: what a reader
// that stopped would hold on the database's disk.
func slotLag(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var lag int64
	err := pool.QueryRow(ctx, `SELECT coalesce(max(pg_current_wal_lsn() - confirmed_flush_lsn), 0)::bigint FROM pg_replication_slots`).Scan(&lag)
	return lag, err
}

// leverReport renders the "outbox-lever" section.
func leverReport(command string, started time.Time, machine string, o leverOptions, table, wal *leverDesign, lag int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s with `%s`.\n\n", started.UTC().Format("2006-01-02 15:04 UTC"), machine, command)
	fmt.Fprintf(&b, "%d rounds of %s per design, in turn; %d writers, each create one batch (the row and its event in one implicit transaction); "+
		"a run ends when Kafka has every create's event. Each cell is the median over the rounds, the lowest and highest in brackets. "+
		"CPU per create: PostgreSQL is the cluster's postmaster and every process under it (backends, WAL writer, checkpointer, "+
		"the slot's walsender); this process holds the writers, the relay or the reader, and the broker; the whole machine is busy time in `/proc/stat`.\n\n",
		o.rounds, o.dur, o.writers)
	b.WriteString("| design | creates/s | p99 ms | CPU µs/create: PostgreSQL | this process | whole machine | WAL bytes/create | published after the load |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, d := range []*leverDesign{table, wal} {
		s := d.samples
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", d.name,
			collect(s, func(x leverSample) float64 { return x.load.rps }).format("%.0f", ""),
			collect(s, func(x leverSample) float64 { return p99ms(x.sample) }).format("%.2f", ""),
			collect(s, func(x leverSample) float64 { return x.perOp(x.pg) }).format("%.1f", ""),
			collect(s, func(x leverSample) float64 { return x.perOp(x.bench) }).format("%.1f", ""),
			collect(s, func(x leverSample) float64 { return x.perOp(x.machine) }).format("%.1f", ""),
			collect(s, func(x leverSample) float64 { return float64(x.walBytes) / float64(max(x.load.requests, 1)) }).format("%.0f", ""),
			collect(s, func(x leverSample) float64 { return float64(x.drain.Milliseconds()) }).format("%.0f", " ms"))
	}
	b.WriteString("\nPostgreSQL's CPU per create by process, µs (median over the rounds; user + system time):\n\n")
	b.WriteString("| process | outbox table | WAL message |\n|---|---|---|\n")
	kinds := map[string]bool{}
	for _, d := range []*leverDesign{table, wal} {
		for _, s := range d.samples {
			for k := range s.postgres {
				kinds[k] = true
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		row, busy := "| "+k, false
		for _, d := range []*leverDesign{table, wal} {
			s := collect(d.samples, func(x leverSample) float64 {
				c := x.postgres[k]
				return x.perOp(c.user + c.sys)
			})
			busy = busy || s.hi >= 0.05
			row += " | " + s.format("%.1f", "")
		}
		if busy { // processes idle in every run (the launchers, say) are left out
			b.WriteString(row + " |\n")
		}
	}
	fmt.Fprintf(&b, "\nWAL message ÷ outbox table, round by round: creates/s %s; PostgreSQL's CPU per create %s; the whole machine's %s. "+
		"The slot held %d bytes of WAL behind the current position at the end (the reader confirms its position every second).\n",
		ratio(wal.samples, table.samples, func(x leverSample) float64 { return x.load.rps }).times(),
		ratio(wal.samples, table.samples, func(x leverSample) float64 { return x.perOp(x.pg) }).times(),
		ratio(wal.samples, table.samples, func(x leverSample) float64 { return x.perOp(x.machine) }).times(), lag)
	return b.String()
}
