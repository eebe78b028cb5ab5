package outbox

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/libs/worker"
)

// Publisher sends messages to Kafka; *kafka.Writer is one.
type Publisher interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Relay publishes outbox rows to Kafka. Several replicas may run one each: a session
// advisory lock elects one leader per database, the others stand by, so rows are
// published in order by a single reader. Transient Kafka errors are retried until they
// heal; a row Kafka refuses for good is moved to outbox_dead_letters (see isRefusal).
type Relay struct {
	Pool      *pgxpool.Pool
	Publisher Publisher
	Log       *slog.Logger
	// BatchSize bounds the rows published per round (default 500).
	BatchSize int
	// IdleWake is the backstop wake-up when no notification arrives (default 2s); it only
	// matters if a wake-up is lost (a broken connection, a writer outside the tracer).
	IdleWake time.Duration
	// Metrics, optional.
	Metrics *Metrics
	// CreateTopics, optional, makes sure topics exist before the first publish to each
	// (events.KafkaConfig.EnsureTopics); brokers often refuse to create topics on demand.
	CreateTopics func(ctx context.Context, topics ...string) error
	// Wakeup, when set, wakes the relay in-process while it leads (see Wakeup).
	Wakeup *Wakeup

	created   map[string]bool
	countedAt time.Time // when the dead letters were last counted for the gauge
}

// Metrics are the relay's Prometheus metrics.
type Metrics struct {
	published   prometheus.Counter
	failures    prometheus.Counter
	leader      prometheus.Gauge
	deadLetters *prometheus.CounterVec
	deadRows    prometheus.Gauge
	batch       prometheus.Histogram
	// oldest is the creation time (Unix nanoseconds) of the oldest unpublished row the
	// leader knows of, 0 when there is none; outbox_oldest_pending_seconds is its age at
	// scrape time, so it keeps growing while Kafka is away and the relay waits.
	oldest atomic.Int64
}

// NewMetrics registers the relay metrics on r.
func NewMetrics(r prometheus.Registerer) *Metrics {
	m := &Metrics{
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_published_total", Help: "Events published from the outbox to Kafka."}),
		failures:  prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_publish_failures_total", Help: "Failed attempts to publish an outbox batch."}),
		leader:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_relay_leader", Help: "1 when this replica is the relay leader for its database."}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outbox_dead_letters_total",
			Help: "Outbox rows Kafka refused for good (too large, invalid), moved to outbox_dead_letters."}, []string{"topic"}),
		deadRows: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_dead_letter_rows",
			Help: "Rows in outbox_dead_letters, as counted by the relay leader (0 on other replicas)."}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "outbox_relay_batch_duration_seconds",
			Help:    "Time to relay one batch of outbox rows: publishing to Kafka (retries included) and deleting the rows.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}),
	}
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "outbox_oldest_pending_seconds",
		Help: "Age of the oldest unpublished outbox row, as known to the relay leader (0 when none, and on other replicas: take the max)."},
		func() float64 {
			if t := m.oldest.Load(); t != 0 {
				return max(0, time.Since(time.Unix(0, t)).Seconds())
			}
			return 0
		})
	r.MustRegister(m.published, m.failures, age, m.leader, m.deadLetters, m.deadRows, m.batch)
	return m
}

// Topics starts the dead-letter counter of each topic at 0, so that a query over it has a
// series to read before the first dead letter.
func (m *Metrics) Topics(topics ...string) {
	for _, t := range topics {
		m.deadLetters.WithLabelValues(t)
	}
}

func (m *Metrics) setOldest(t time.Time) {
	if t.IsZero() {
		m.oldest.Store(0)
		return
	}
	m.oldest.Store(t.UnixNano())
}

const notifyChannel = "outbox"

// lockKey is the advisory lock of the relay leader.
var lockKey = func() int64 {
	h := fnv.New64a()
	h.Write([]byte("outbox-relay"))
	return int64(h.Sum64() >> 1)
}()

// Run relays until ctx ends. Errors (database or Kafka unreachable) are logged and
// retried with backoff; Run returns only when ctx is done.
func (r *Relay) Run(ctx context.Context) error {
	if r.BatchSize <= 0 {
		r.BatchSize = 500
	}
	if r.IdleWake <= 0 {
		r.IdleWake = 2 * time.Second
	}
	backoff := worker.Backoff{First: 200 * time.Millisecond}
	for ctx.Err() == nil {
		err := r.lead(ctx)
		if ctx.Err() != nil {
			break
		}
		r.Log.Warn("outbox relay interrupted; retrying", slog.Any("error", err), slog.Duration("backoff", backoff.Peek()))
		if !backoff.Sleep(ctx) {
			break
		}
	}
	return nil
}

// lead takes leadership on a dedicated connection, then drains and waits for
// notifications until an error or ctx ends.
func (r *Relay) lead(ctx context.Context) error {
	pc, err := r.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire: %w", err)
	}
	conn := pc.Hijack() // a session of its own: the lock and LISTEN live on it
	defer conn.Close(context.WithoutCancel(ctx))
	for {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", lockKey).Scan(&ok); err != nil {
			return fmt.Errorf("try lock: %w", err)
		}
		if ok {
			break
		}
		if !worker.Sleep(ctx, 2*time.Second) {
			return ctx.Err()
		}
	}
	if r.Metrics != nil {
		r.Metrics.leader.Set(1)
		defer r.Metrics.leader.Set(0)
		defer r.Metrics.deadRows.Set(0)
		defer r.Metrics.setOldest(time.Time{}) // another replica leads now, or none
		r.countedAt = time.Time{}              // count the dead letters on the first drain
	}
	if r.Wakeup != nil {
		r.Wakeup.leading.Store(true)
		defer r.Wakeup.leading.Store(false)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var from position // this term's reading position: a new leader starts at the beginning
	for {
		pending, err := r.drain(ctx, conn, &from)
		if err != nil {
			return err
		}
		wait := r.IdleWake
		if pending {
			// Rows exist that an older, still-open transaction keeps invisible for now;
			// its end sends no notification when it wrote no outbox row, so look again soon.
			wait = 100 * time.Millisecond
		}
		err = r.wait(ctx, conn, wait)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
	}
}

type row struct {
	id      int64
	topic   string
	eventID string
	key     string
	value   []byte
	headers []byte
	created time.Time
	// txid is the row's transaction; horizon the oldest transaction still running when
	// the row was read (every row below it was visible to that read).
	txid, horizon int64
}

// position is where the relay's reads begin: every row of a transaction below txid has
// been read and removed by this leader. Reading from it, rather than from the start of
// the (txid, id) index, skips the index entries of the rows the relay deleted, which stay
// in the index until VACUUM removes them: under a steady stream of writes autovacuum
// comes round about once a minute, and until then each read walked every row deleted
// since, so the relay's cost per event grew with the time since the last VACUUM
// (docs/architecture.md, the relay).
type position struct{ txid int64 }

// advance moves the position past a batch that was read and removed: to the oldest
// transaction still running when it was read if the batch held every row below it (no
// row of a transaction below that can appear any more), else to the batch's last
// transaction, whose other rows may remain.
func (p *position) advance(rows []row, batchSize int) {
	if len(rows) == 0 {
		return
	}
	if len(rows) < batchSize {
		p.txid = rows[0].horizon
	} else {
		p.txid = rows[len(rows)-1].txid
	}
}

// drain publishes every committed row from the position on, batch by batch, moves the
// rows Kafka refuses for good to the dead letters, and reports whether rows remain that
// are not yet visible in commit order.
func (r *Relay) drain(ctx context.Context, conn *pgx.Conn, from *position) (bool, error) {
	for {
		rows, err := r.fetch(ctx, conn, *from)
		if err != nil {
			return false, err
		}
		if len(rows) == 0 {
			return r.settle(ctx, conn, *from)
		}
		start := time.Now()
		if r.Metrics != nil {
			r.Metrics.setOldest(rows[0].created)
		}
		dead, err := r.publish(ctx, rows)
		if err != nil {
			return false, err
		}
		if err := r.remove(ctx, conn, rows, dead); err != nil {
			// The rows were published; they will be published again (at least once).
			return false, err
		}
		from.advance(rows, r.BatchSize)
		if r.Metrics != nil {
			r.Metrics.published.Add(float64(len(rows) - len(dead)))
			r.Metrics.batch.Observe(time.Since(start).Seconds())
		}
		if len(rows) < r.BatchSize && r.Wakeup != nil {
			// The batch held every row its read could see. A transaction that committed
			// rows since has poked the Wakeup, and the poke waits for the relay's next
			// wait, which then returns at once: a fetch now would mostly find nothing
			// (under load it was one read of the outbox in two).
			return r.settle(ctx, conn, *from)
		}
	}
}

// settle ends a drain: it reads the oldest row left, for the pending-age gauge and to
// report whether rows remain (rows that open transactions keep out of sight, or rows
// committed since the last fetch), and now and then counts the dead letters.
func (r *Relay) settle(ctx context.Context, conn *pgx.Conn, from position) (bool, error) {
	// The first row in the relay's order is the oldest still unpublished (none when the
	// outbox is empty). Read through the (txid, id) index: min(created_at) scanned the
	// whole table, dead rows of the relay's deletes included, and under load it was the
	// costliest statement of a write (docs/benchmarks.md, the end-to-end run).
	var oldest *time.Time
	err := conn.QueryRow(ctx, "SELECT created_at FROM outbox WHERE txid >= $1::text::xid8 ORDER BY txid, id LIMIT 1",
		strconv.FormatInt(from.txid, 10)).Scan(&oldest)
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	if err == nil && r.Metrics != nil {
		if oldest == nil {
			r.Metrics.setOldest(time.Time{})
		} else {
			r.Metrics.setOldest(*oldest)
		}
	}
	if err == nil && r.Metrics != nil && time.Since(r.countedAt) > deadLetterCountEvery {
		err = r.countDeadLetters(ctx, conn)
	}
	return oldest != nil, err
}

// fetchSQL reads the next batch in commit order from a position ($2): the rows of
// transactions from $2 on that ended before the statement's snapshot. xid8 travels as
// text (pgx has no codec for it); its values fit a bigint.
const fetchSQL = `
		SELECT id, topic, event_id, msg_key, value, headers, created_at, txid::text::bigint,
			pg_snapshot_xmin(pg_current_snapshot())::text::bigint
		FROM outbox
		WHERE txid >= $2::text::xid8 AND txid < pg_snapshot_xmin(pg_current_snapshot())
		ORDER BY txid, id
		LIMIT $1`

func (r *Relay) fetch(ctx context.Context, conn *pgx.Conn, from position) ([]row, error) {
	rs, err := conn.Query(ctx, fetchSQL, r.BatchSize, strconv.FormatInt(from.txid, 10))
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	out, err := pgx.CollectRows(rs, func(rw pgx.CollectableRow) (row, error) {
		var x row
		err := rw.Scan(&x.id, &x.topic, &x.eventID, &x.key, &x.value, &x.headers, &x.created, &x.txid, &x.horizon)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return out, nil
}

// publish sends the rows' messages, retrying with backoff until Kafka has taken each of
// them or refused it for good, or ctx ends; while Kafka is down the rows simply wait in
// the outbox. It returns the refused rows, for the dead letters.
func (r *Relay) publish(ctx context.Context, rows []row) ([]deadLetter, error) {
	if err := r.ensureTopics(ctx, rows); err != nil {
		return nil, err
	}
	var dead []deadLetter
	pending := make([]outgoing, 0, len(rows))
	for _, rw := range rows {
		m, err := message(rw)
		if err != nil {
			dead = append(dead, deadLetter{row: rw, err: err})
			continue
		}
		pending = append(pending, outgoing{row: rw, msg: m})
	}
	var backoff worker.Backoff
	for len(pending) > 0 {
		err := r.Publisher.WriteMessages(ctx, messages(pending)...)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		failed, refused := failures(err, len(pending))
		pending = pick(pending, failed)
		if refused {
			// Which message Kafka refuses is certain only when it is sent alone: the broker
			// answers for a whole batch of a partition, and a batch of small messages may be
			// over its limit too.
			d, err := r.publishEach(ctx, pending)
			return append(dead, d...), err
		}
		if !r.retryLater(ctx, err, len(pending), &backoff) {
			return nil, errors.Join(err, ctx.Err())
		}
	}
	return dead, nil
}

// publishEach sends the messages one at a time, in order, each until Kafka takes it or
// refuses it for good.
func (r *Relay) publishEach(ctx context.Context, pending []outgoing) ([]deadLetter, error) {
	var dead []deadLetter
	for _, o := range pending {
		var backoff worker.Backoff
		for {
			err := r.Publisher.WriteMessages(ctx, o.msg)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if _, refused := failures(err, 1); refused {
				dead = append(dead, deadLetter{row: o.row, err: err})
				break
			}
			if !r.retryLater(ctx, err, 1, &backoff) {
				return nil, errors.Join(err, ctx.Err())
			}
		}
	}
	return dead, nil
}

// retryLater counts and logs a failed publish and waits out the backoff, doubling it; it
// reports false when ctx ended first.
func (r *Relay) retryLater(ctx context.Context, err error, n int, backoff *worker.Backoff) bool {
	if r.Metrics != nil {
		r.Metrics.failures.Inc()
	}
	r.Log.Warn("outbox publish failed; will retry", slog.Any("error", err),
		slog.Int("batch", n), slog.Duration("backoff", backoff.Peek()))
	return backoff.Sleep(ctx)
}

// ensureTopics creates, once per process, the topics of rows not seen before; while that
// fails (Kafka down) it retries like a publish.
func (r *Relay) ensureTopics(ctx context.Context, rows []row) error {
	if r.CreateTopics == nil {
		return nil
	}
	if r.created == nil {
		r.created = map[string]bool{}
	}
	var missing []string
	for _, rw := range rows {
		if !r.created[rw.topic] && !slices.Contains(missing, rw.topic) {
			missing = append(missing, rw.topic)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var backoff worker.Backoff
	for {
		err := r.CreateTopics(ctx, missing...)
		if err == nil {
			for _, t := range missing {
				r.created[t] = true
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if r.Metrics != nil {
			r.Metrics.failures.Inc()
		}
		r.Log.Warn("creating Kafka topics failed; will retry", slog.Any("error", err), slog.Duration("backoff", backoff.Peek()))
		if !backoff.Sleep(ctx) {
			return errors.Join(err, ctx.Err())
		}
	}
}

// wait returns on a notification from the database, a local wake-up, or after d.
func (r *Relay) wait(ctx context.Context, conn *pgx.Conn, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if r.Wakeup != nil {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			select {
			case <-r.Wakeup.local.C():
				cancel()
			case <-stop:
			}
		}()
	}
	// pgx.Conn's wait, not pgconn's: a notification that arrived while the drain's
	// statements ran is kept by pgx.Conn, and returned here at once.
	_, err := conn.WaitForNotification(wctx)
	if err == nil || pgconn.Timeout(err) || (errors.Is(err, context.Canceled) && ctx.Err() == nil) {
		return nil
	}
	return err
}
