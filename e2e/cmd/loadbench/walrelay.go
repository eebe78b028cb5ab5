package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/segmentio/kafka-go"

	"github.com/customerapi/platform/libs/outbox"
)

// The outbox design issue 17 asked to measure and that the platform does not use: a
// writer emits its event with pg_logical_emit_message in the transaction of its change,
// so the event is written only to the WAL (no outbox row, no relay read, no DELETE), and
// a reader streams the committed messages from a logical replication slot (pgoutput with
// messages on) and publishes them to Kafka, confirming the slot's position once Kafka
// has them. This is the prototype the outbox lever (-outbox-lever) measures against the
// real outbox.Writer and outbox.Relay; docs/architecture.md says why the platform keeps
// the outbox table.

// walPrefix is the prefix of the messages the reader publishes; others are ignored.
const walPrefix = "outbox"

// emitSQL writes one event to the WAL, published only if the transaction commits.
const emitSQL = `SELECT pg_logical_emit_message(true, '` + walPrefix + `', $1::bytea)`

// appendWALEvent frames one event as a message carries it, the Kafka message the relay
// would send: topic, key, headers (a JSON object, as the outbox row holds them) and value,
// each preceded by its length as a uvarint.
func appendWALEvent(b []byte, topic, key string, headers, value []byte) []byte {
	for _, f := range [][]byte{[]byte(topic), []byte(key), headers, value} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// parseWALEvent reads a message framed by appendWALEvent. The message's key and value
// are its own: content is the stream's buffer, which the next receive overwrites.
func parseWALEvent(content []byte) (kafka.Message, error) {
	content = bytes.Clone(content)
	var f [4][]byte
	for i := range f {
		n, k := binary.Uvarint(content)
		if k <= 0 || n > uint64(len(content)-k) {
			return kafka.Message{}, errors.New("truncated event")
		}
		f[i], content = content[k:k+int(n)], content[k+int(n):]
	}
	if len(content) != 0 {
		return kafka.Message{}, errors.New("trailing bytes after the event")
	}
	var headers map[string]string
	if err := json.Unmarshal(f[2], &headers); err != nil {
		return kafka.Message{}, fmt.Errorf("headers: %w", err)
	}
	m := kafka.Message{Topic: string(f[0]), Key: f[1], Value: f[3], Headers: make([]kafka.Header, 0, len(headers))}
	for k, v := range headers {
		m.Headers = append(m.Headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	return m, nil
}

// walReader streams the messages of one slot to a publisher.
type walReader struct {
	// url is a connection string of the database; the reader adds replication=database.
	url         string
	slot        string
	publication string
	pub         outbox.Publisher
	// batch is the most messages published in one call (the relay's BatchSize).
	batch int
	// statusEvery is how often the reader confirms its position when the server asks
	// for nothing sooner (pg_recvlogical's default is 10 s).
	statusEvery time.Duration

	published atomic.Int64
	confirmed atomic.Uint64 // the end of the last transaction whose messages Kafka took
}

// replicationConfig is the reader's connection: a walsender session of the database.
func (r *walReader) replicationConfig() (*pgconn.Config, error) {
	cfg, err := pgconn.ParseConfig(r.url)
	if err != nil {
		return nil, fmt.Errorf("wal reader: %w", err)
	}
	cfg.RuntimeParams["replication"] = "database"
	return cfg, nil
}

// start creates the slot (temporary: it lives as long as the reader's session) and
// begins streaming; once it returns, every transaction that commits is the reader's to
// publish. run then reads until ctx ends or the stream fails.
func (r *walReader) start(ctx context.Context) (*pgconn.PgConn, error) {
	cfg, err := r.replicationConfig()
	if err != nil {
		return nil, err
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("wal reader: connect: %w", err)
	}
	if _, err := pglogrepl.CreateReplicationSlot(ctx, conn, r.slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Temporary: true}); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("wal reader: create slot: %w", err)
	}
	err = pglogrepl.StartReplication(ctx, conn, r.slot, 0, pglogrepl.StartReplicationOptions{PluginArgs: []string{
		"proto_version '1'", "publication_names '" + r.publication + "'", "messages 'true'"}})
	if err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("wal reader: start replication: %w", err)
	}
	return conn, nil
}

// streamed is what the receiving side hands the publishing side: the messages of
// committed transactions up to a transaction's end.
type streamed struct {
	msgs []kafka.Message
	end  pglogrepl.LSN
}

// run receives on conn and publishes until ctx ends or the stream fails. Receiving and
// publishing run side by side: while one batch is with Kafka, the next transactions are
// collected, and the publisher takes everything collected so far (at most batch).
func (r *walReader) run(ctx context.Context, conn *pgconn.PgConn) error {
	defer conn.Close(context.WithoutCancel(ctx))
	st := &stream{ready: make(chan streamed, 64), pubErr: make(chan error, 1)}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { st.pubErr <- r.publishFrom(pctx, st.ready) }()
	for ctx.Err() == nil {
		if err := r.sendStatus(ctx, conn); err != nil {
			return err
		}
		if err := r.receive(ctx, conn, st); err != nil {
			return err
		}
	}
	return nil
}

// stream is the receiving side's state: the messages of the transaction being read,
// and the hand-over to the publishing side.
type stream struct {
	pending []kafka.Message
	ready   chan streamed
	pubErr  chan error
}

// receive handles what the server sends until the next status update is due or the
// server asks for one.
func (r *walReader) receive(ctx context.Context, conn *pgconn.PgConn, st *stream) error {
	rctx, cancel := context.WithTimeout(ctx, r.statusEvery)
	defer cancel()
	for {
		msg, err := conn.ReceiveMessage(rctx)
		switch {
		case err != nil && (ctx.Err() != nil || pgconn.Timeout(err)):
			return nil
		case err != nil:
			return fmt.Errorf("wal reader: receive: %w", err)
		}
		select {
		case err := <-st.pubErr:
			return err
		default:
		}
		cd, ok := msg.(*pgproto3.CopyData)
		if !ok {
			if e, ok := msg.(*pgproto3.ErrorResponse); ok {
				return fmt.Errorf("wal reader: %s", e.Message)
			}
			continue
		}
		switch cd.Data[0] {
		case pglogrepl.PrimaryKeepaliveMessageByteID:
			ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(cd.Data[1:])
			if err != nil {
				return fmt.Errorf("wal reader: keepalive: %w", err)
			}
			if ka.ReplyRequested {
				return nil
			}
		case pglogrepl.XLogDataByteID:
			if err := r.decode(ctx, cd.Data[1:], st); err != nil {
				return err
			}
		}
	}
}

// decode takes one message of the stream: an event is kept until its transaction's
// commit, which hands the transaction's events to the publisher.
func (r *walReader) decode(ctx context.Context, data []byte, st *stream) error {
	x, err := pglogrepl.ParseXLogData(data)
	if err != nil {
		return fmt.Errorf("wal reader: xlog data: %w", err)
	}
	m, err := pglogrepl.Parse(x.WALData)
	if err != nil {
		return fmt.Errorf("wal reader: decode: %w", err)
	}
	switch m := m.(type) {
	case *pglogrepl.LogicalDecodingMessage:
		if m.Prefix != walPrefix {
			return nil
		}
		km, err := parseWALEvent(m.Content)
		if err != nil {
			return fmt.Errorf("wal reader: message at %s: %w", m.LSN, err)
		}
		st.pending = append(st.pending, km)
	case *pglogrepl.CommitMessage:
		if len(st.pending) == 0 {
			return nil
		}
		select {
		case st.ready <- streamed{msgs: st.pending, end: m.TransactionEndLSN}:
		case err := <-st.pubErr:
			return err
		case <-ctx.Done():
			return nil
		}
		st.pending = nil
	}
	return nil
}

// publishFrom publishes what run collects, as many transactions at once as are waiting
// (at most batch messages unless one transaction holds more), retrying until Kafka takes
// them, and records the end of the last transaction published.
func (r *walReader) publishFrom(ctx context.Context, ready <-chan streamed) error {
	var out []kafka.Message
	for {
		var end pglogrepl.LSN
		select {
		case <-ctx.Done():
			return nil
		case s := <-ready:
			out, end = append(out[:0], s.msgs...), s.end
		}
	more:
		for len(out) < r.batch {
			select {
			case s := <-ready:
				out, end = append(out, s.msgs...), s.end
			default:
				break more
			}
		}
		backoff := 100 * time.Millisecond
		for {
			err := r.pub.WriteMessages(ctx, out...)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			var tooLarge kafka.MessageTooLargeError
			if errors.As(err, &tooLarge) {
				return fmt.Errorf("wal reader: %w", err) // the prototype has no dead letters
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		}
		r.published.Add(int64(len(out)))
		r.confirmed.Store(uint64(end))
	}
}

// sendStatus tells the server how far the reader has published: the slot keeps the WAL
// from there on, and a reader that starts again resumes there (at least once).
func (r *walReader) sendStatus(ctx context.Context, conn *pgconn.PgConn) error {
	lsn := pglogrepl.LSN(r.confirmed.Load())
	if err := pglogrepl.SendStandbyStatusUpdate(ctx, conn, pglogrepl.StandbyStatusUpdate{WALWritePosition: lsn}); err != nil {
		return fmt.Errorf("wal reader: status update: %w", err)
	}
	return nil
}
