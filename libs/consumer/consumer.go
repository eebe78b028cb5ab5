// Package consumer runs idempotent Kafka consumers: a kafka-go consumer group whose
// offsets are committed only after the handler's database transaction commits, with an
// inbox table of processed event IDs so a redelivered event changes nothing, bounded
// retries, and a dead-letter table for what still fails.
//
// The rule every consumer keeps: the offset moves on only past an event that was
// processed or durably dead-lettered. A dependency that is unavailable (the database
// down, restarting, refusing connections) is waited out, however long, and never counts
// as a failed attempt of the event.
package consumer

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/worker"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations is the inbox's schema; every service that consumes events applies it.
var Migrations = postgres.EmbeddedMigrations("inbox", migrationFS, "migrations")

// Handler processes one event inside tx; the event counts as processed only if tx
// commits. Return Permanent(err) for an event that can never succeed.
type Handler func(ctx context.Context, tx pgx.Tx, evt events.Envelope) error

type permanent struct{ error }

// Permanent marks an error that retrying cannot fix; the event goes to the dead letters
// at once.
func Permanent(err error) error { return permanent{err} }

// Consumer is one consumer group reading some topics into one handler.
type Consumer struct {
	// Name is the consumer group ID and the inbox's consumer name.
	Name   string
	Topics []string
	// Types, when set, limits handling to these event types; others are skipped cheaply.
	Types   []string
	Kafka   events.KafkaConfig
	Pool    *pgxpool.Pool
	Handler Handler
	Log     *slog.Logger
	Tracer  trace.Tracer
	// MaxAttempts bounds the tries per event before it is dead-lettered (default 5).
	MaxAttempts int
	// BatchSize bounds the messages handled in one transaction (default 100).
	BatchSize int
	Metrics   *Metrics
}

// Metrics are the consumer metrics. How far a group is behind is the LagMonitor's
// (kafka_consumer_lag_messages, per partition, read from the broker).
type Metrics struct {
	handled *prometheus.CounterVec
	batch   *prometheus.HistogramVec
	waiting *prometheus.GaugeVec
	waits   *prometheus.CounterVec
}

// outcomes are the values of consumer_events_total's outcome label.
var outcomes = []string{"processed", "duplicate", "skipped", "dead_letter"}

// NewMetrics registers the consumer metrics on r.
func NewMetrics(r prometheus.Registerer) *Metrics {
	m := &Metrics{
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "consumer_events_total",
			Help: "Events seen by a consumer, by outcome (processed, duplicate, skipped, dead_letter)."},
			[]string{"consumer", "outcome"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "consumer_batch_duration_seconds",
			Help:    "Time to handle one fetched batch of events, its transaction and the offset commit included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
			[]string{"consumer"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "consumer_dependency_waiting",
			Help: "1 while a consumer waits out an unavailable dependency (its database), its offsets held where they are."},
			[]string{"consumer"}),
		waits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "consumer_dependency_unavailable_total",
			Help: "Tries of a consumer that failed because a dependency was unavailable; they are waited out, not counted against the event."},
			[]string{"consumer"}),
	}
	r.MustRegister(m.handled, m.batch, m.waiting, m.waits)
	return m
}

// start makes the consumer's series exist at 0 before its first event, so that a
// dead-letter alert or a dashboard has something to read.
func (m *Metrics) start(consumer string) {
	for _, o := range outcomes {
		m.handled.WithLabelValues(consumer, o)
	}
	m.batch.WithLabelValues(consumer)
	m.waiting.WithLabelValues(consumer)
	m.waits.WithLabelValues(consumer)
}

func (c *Consumer) count(outcome string, n int) {
	if c.Metrics != nil && n > 0 {
		c.Metrics.handled.WithLabelValues(c.Name, outcome).Add(float64(n))
	}
}

// Run consumes until ctx ends.
func (c *Consumer) Run(ctx context.Context) error {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 5
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider().Tracer("")
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:        c.Kafka.Brokers,
		GroupID:        c.Name,
		GroupTopics:    c.Topics,
		Dialer:         c.Kafka.Dialer(),
		StartOffset:    kafka.FirstOffset,
		MinBytes:       1,
		MaxBytes:       10 << 20,
		MaxWait:        250 * time.Millisecond,
		CommitInterval: 0, // commit synchronously, after the handler's transaction
		// A member that vanished without leaving the group (a crash, a kill) holds its
		// partitions until its session expires, and a rebalance waits this long for the
		// members to rejoin: 10 s each instead of kafka-go's 30 s bounds the pause after a
		// replica dies or restarts.
		SessionTimeout:   10 * time.Second,
		RebalanceTimeout: 10 * time.Second,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			c.Log.Debug("kafka reader: "+fmt.Sprintf(msg, args...), slog.String("consumer", c.Name))
		}),
	})
	defer r.Close()
	if c.Metrics != nil {
		c.Metrics.start(c.Name)
	}
	for ctx.Err() == nil {
		batch, err := c.fetchBatch(ctx, r)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			c.Log.Warn("kafka fetch failed; retrying", slog.String("consumer", c.Name), slog.Any("error", err))
			worker.Sleep(ctx, time.Second)
			continue
		}
		start := time.Now()
		c.handleBatch(ctx, batch)
		if ctx.Err() != nil {
			break // not committed: the batch is redelivered after restart, and deduplicated
		}
		if err := commit(ctx, r, batch); err != nil {
			c.Log.Warn("kafka commit failed; the batch may be redelivered", slog.String("consumer", c.Name), slog.Any("error", err))
		}
		if c.Metrics != nil {
			c.Metrics.batch.WithLabelValues(c.Name).Observe(time.Since(start).Seconds())
		}
	}
	return nil
}

func commit(ctx context.Context, r *kafka.Reader, batch []kafka.Message) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return r.CommitMessages(cctx, batch...)
}

// sleep waits d and reports true, or reports false as soon as ctx ends.

// fetchBatch blocks for one message, then takes what else is already buffered, up to
// BatchSize, so a busy consumer handles many events per transaction.
func (c *Consumer) fetchBatch(ctx context.Context, r *kafka.Reader) ([]kafka.Message, error) {
	m, err := r.FetchMessage(ctx)
	if err != nil {
		return nil, err
	}
	batch := []kafka.Message{m}
	for len(batch) < c.BatchSize {
		qctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		m, err := r.FetchMessage(qctx)
		cancel()
		if err != nil {
			break
		}
		batch = append(batch, m)
	}
	return batch, nil
}

type item struct {
	msg kafka.Message
	evt events.Envelope
	err error // decode error
}

// handleBatch processes the batch in one transaction; if that fails it falls back to one
// transaction per message, so one bad event cannot hold back the others.
func (c *Consumer) handleBatch(ctx context.Context, batch []kafka.Message) {
	items := make([]item, 0, len(batch))
	for _, m := range batch {
		evt, err := events.Decode(m)
		if err == nil && !c.wants(evt.Type) {
			c.count("skipped", 1)
			continue
		}
		items = append(items, item{msg: m, evt: evt, err: err})
	}
	var good []item
	for _, it := range items {
		if it.err != nil {
			c.deadLetter(ctx, it, it.err)
			continue
		}
		good = append(good, it)
	}
	if len(good) == 0 {
		return
	}
	if len(good) > 1 {
		var processed, dup int
		err := c.untilAvailable(ctx, func() (err error) {
			processed, dup, err = c.process(ctx, good)
			return err
		})
		if err == nil {
			c.count("processed", processed)
			c.count("duplicate", dup)
			return
		}
		if ctx.Err() != nil {
			return
		}
	}
	for _, it := range good {
		c.handleOne(ctx, it)
		if ctx.Err() != nil {
			return
		}
	}
}

func (c *Consumer) wants(typ string) bool {
	if len(c.Types) == 0 {
		return true
	}
	for _, t := range c.Types {
		if t == typ {
			return true
		}
	}
	return false
}

// handleOne tries one event up to MaxAttempts times, then dead-letters it. A try that
// failed because a dependency was unavailable is not an attempt: it is waited out.
func (c *Consumer) handleOne(ctx context.Context, it item) {
	backoff := worker.Backoff{Max: maxBackoff}
	var err error
	for attempt := 1; attempt <= c.MaxAttempts; attempt++ {
		var processed, dup int
		err = c.untilAvailable(ctx, func() (err error) {
			processed, dup, err = c.process(ctx, []item{it})
			return err
		})
		if err == nil {
			c.count("processed", processed)
			c.count("duplicate", dup)
			return
		}
		if ctx.Err() != nil {
			return
		}
		var p permanent
		if errors.As(err, &p) {
			break
		}
		c.Log.Warn("event handling failed; retrying", slog.String("consumer", c.Name),
			slog.String("event_id", it.evt.ID), slog.Int("attempt", attempt), slog.Any("error", err))
		backoff.Sleep(ctx)
	}
	c.deadLetter(ctx, it, err)
}

// process handles items in one transaction, skipping those already in the inbox. The
// inbox rows of all items are written by one statement, which returns the events new to
// this consumer (an event twice in items is new once).
func (c *Consumer) process(ctx context.Context, items []item) (processed, duplicates int, err error) {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.evt.ID
	}
	err = postgres.InTx(ctx, c.Pool, func(tx pgx.Tx) error {
		processed, duplicates = 0, 0
		rows, err := tx.Query(ctx, `INSERT INTO inbox (consumer, event_id) SELECT $1, unnest($2::text[])
			ON CONFLICT DO NOTHING RETURNING event_id`, c.Name, ids)
		if err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		fresh, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		isNew := make(map[string]bool, len(fresh))
		for _, id := range fresh {
			isNew[id] = true
		}
		for _, it := range items {
			if !isNew[it.evt.ID] {
				duplicates++
				continue
			}
			delete(isNew, it.evt.ID)
			if err := c.handle(ctx, tx, it); err != nil {
				return err
			}
			processed++
		}
		return nil
	})
	return processed, duplicates, err
}

func (c *Consumer) handle(ctx context.Context, tx pgx.Tx, it item) error {
	msg := it.msg
	ctx, span := c.Tracer.Start(events.ContextFrom(ctx, &msg), "process "+it.evt.Type,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.system", "kafka"),
			attribute.String("messaging.destination.name", msg.Topic),
			attribute.String("messaging.consumer.group.name", c.Name),
			attribute.String("messaging.message.id", it.evt.ID)))
	defer span.End()
	if err := c.Handler(ctx, tx, it.evt); err != nil {
		span.SetStatus(codes.Error, err.Error())
		return fmt.Errorf("handle %s %s: %w", it.evt.Type, it.evt.ID, err)
	}
	return nil
}

// deadLetter records the event in inbox_dead_letters, trying until the row is written
// (or ctx ends, when the batch is not committed and comes back after a restart): an
// event whose dead letter was not recorded must not be passed by the offset.
func (c *Consumer) deadLetter(ctx context.Context, it item, cause error) {
	c.Log.Error("event dead-lettered", slog.String("consumer", c.Name), slog.String("topic", it.msg.Topic),
		slog.Int("partition", it.msg.Partition), slog.Int64("offset", it.msg.Offset),
		slog.String("event_id", it.evt.ID), slog.Any("error", cause))
	var eventID *string
	if it.evt.ID != "" {
		eventID = &it.evt.ID
	}
	insert := func() error {
		_, err := c.Pool.Exec(ctx, `INSERT INTO inbox_dead_letters
		(consumer, topic, kafka_partition, kafka_offset, event_id, error, value) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			c.Name, it.msg.Topic, it.msg.Partition, it.msg.Offset, eventID, fmt.Sprint(cause), it.msg.Value)
		return err
	}
	backoff := worker.Backoff{Max: maxBackoff}
	for held := false; ; {
		err := c.untilAvailable(ctx, insert)
		if held && (err == nil || ctx.Err() != nil) {
			c.setWaiting(false)
		}
		if err == nil {
			c.count("dead_letter", 1)
			return
		}
		if ctx.Err() != nil {
			return
		}
		// Not an outage, yet not written: keep the event and try again, never move past it.
		c.Log.Error("dead letter not recorded; retrying", slog.String("consumer", c.Name),
			slog.String("event_id", it.evt.ID), slog.Any("error", err))
		held = true
		c.setWaiting(true)
		if !backoff.Sleep(ctx) {
			return
		}
	}
}

// maxBackoff caps the wait between tries of an unavailable dependency.
const maxBackoff = 5 * time.Second

// untilAvailable runs fn until it succeeds, fails for a reason other than an unavailable
// dependency, or ctx ends. Failures of an unavailable dependency are waited out with
// backoff (capped at maxBackoff), shown by consumer_dependency_waiting, and logged once
// when the outage begins and once when it ends.
func (c *Consumer) untilAvailable(ctx context.Context, fn func() error) error {
	backoff := worker.Backoff{Max: maxBackoff}
	var since time.Time
	for {
		err := fn()
		if err == nil || !apierror.IsUnavailable(err) || ctx.Err() != nil {
			if !since.IsZero() {
				c.setWaiting(false)
				c.Log.Info("dependency available again; consuming", slog.String("consumer", c.Name),
					slog.Duration("waited", time.Since(since)))
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if since.IsZero() {
			since = time.Now()
			c.setWaiting(true)
			c.Log.Warn("dependency unavailable; waiting it out, the offset held", slog.String("consumer", c.Name),
				slog.Any("error", err))
		}
		if c.Metrics != nil {
			c.Metrics.waits.WithLabelValues(c.Name).Inc()
		}
		if !backoff.Sleep(ctx) {
			c.setWaiting(false)
			return ctx.Err()
		}
	}
}

func (c *Consumer) setWaiting(on bool) {
	if c.Metrics == nil {
		return
	}
	v := 0.0
	if on {
		v = 1
	}
	c.Metrics.waiting.WithLabelValues(c.Name).Set(v)
}
