package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
)

// deadLetterCountEvery is how often the leader recounts outbox_dead_letters for the gauge
// (besides right after it moved rows there), so rows an operator replayed or deleted show.
const deadLetterCountEvery = 30 * time.Second

// outgoing is a row and its Kafka message.
type outgoing struct {
	row row
	msg kafka.Message
}

// deadLetter is a row Kafka refused for good, and why.
type deadLetter struct {
	row row
	err error
}

// message builds the Kafka message of a row; an error means the row can never be sent.
func message(rw row) (kafka.Message, error) {
	var hdr map[string]string
	if err := json.Unmarshal(rw.headers, &hdr); err != nil {
		return kafka.Message{}, fmt.Errorf("outbox row %d: headers: %w", rw.id, err)
	}
	m := kafka.Message{Topic: rw.topic, Key: []byte(rw.key), Value: rw.value}
	for k, v := range hdr {
		m.Headers = append(m.Headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	return m, nil
}

func messages(out []outgoing) []kafka.Message {
	msgs := make([]kafka.Message, len(out))
	for i, o := range out {
		msgs[i] = o.msg
	}
	return msgs
}

// pick returns the elements of out at the given indexes, in order.
func pick(out []outgoing, indexes []int) []outgoing {
	if len(indexes) == len(out) {
		return out
	}
	picked := make([]outgoing, len(indexes))
	for i, j := range indexes {
		picked[i] = out[j]
	}
	return picked
}

// failures reads the error of a WriteMessages call of n messages: the indexes of the
// messages that were not written, and whether Kafka refused any of them for good. A
// kafka.WriteErrors tells message by message; any other error fails them all.
func failures(err error, n int) (failed []int, refused bool) {
	var we kafka.WriteErrors
	if errors.As(err, &we) && len(we) == n {
		for i, e := range we {
			if e != nil {
				failed = append(failed, i)
				refused = refused || isRefusal(e)
			}
		}
		if len(failed) > 0 {
			return failed, refused
		}
	}
	failed = make([]int, n)
	for i := range failed {
		failed[i] = i
	}
	return failed, isRefusal(err)
}

// isRefusal reports whether err says Kafka will never take the message, however often it
// is sent: over the producer's size limit (kafka.MessageTooLargeError, before sending) or
// the broker's (message.max.bytes, a topic's max.message.bytes), or refused by the
// broker's validation of the record. Errors of the connection, of leadership, of
// authorisation or of the topic as a whole are not: every message would share them, and
// they heal (or need an operator) without losing events.
func isRefusal(err error) bool {
	return errors.Is(err, kafka.MessageSizeTooLarge) || errors.Is(err, kafka.RecordListTooLarge) ||
		errors.Is(err, kafka.InvalidRecord)
}

// moveSQL moves the dead rows ($2, with the errors $3) to the dead letters and deletes
// every handled row ($1), in one statement.
const moveSQL = `
	WITH moved AS (
		INSERT INTO outbox_dead_letters (id, txid, topic, event_id, msg_key, value, headers, created_at, error)
		SELECT o.id, o.txid, o.topic, o.event_id, o.msg_key, o.value, o.headers, o.created_at, d.error
		FROM outbox o JOIN unnest($4::bigint[], $5::text[]) AS d(id, error) ON d.id = o.id
	)
	` + deleteSQL

// deleteSQL deletes a batch's rows ($1), found within its transactions' range ($2 to
// $3, as text: pgx has no codec for xid8). Without the range, PostgreSQL sometimes chose
// the (txid, id) index for "id = ANY" alone, read as a whole with every entry of a
// deleted row still in it (when the outbox was analyzed nearly empty, both indexes cost
// it the same): 300 to 1,700 pages a delete in the end-to-end run, its costliest
// statement. The range bounds that walk to the batch's own entries.
const deleteSQL = `DELETE FROM outbox WHERE txid BETWEEN $2::text::xid8 AND $3::text::xid8 AND id = ANY($1)`

// remove deletes the handled rows from the outbox, moving the dead ones to the dead
// letters in the same statement.
func (r *Relay) remove(ctx context.Context, conn *pgx.Conn, rows []row, dead []deadLetter) error {
	ids := make([]int64, len(rows))
	for i, rw := range rows {
		ids[i] = rw.id
	}
	lo, hi := strconv.FormatInt(rows[0].txid, 10), strconv.FormatInt(rows[len(rows)-1].txid, 10)
	if len(dead) == 0 {
		if _, err := conn.Exec(ctx, deleteSQL, ids, lo, hi); err != nil {
			return fmt.Errorf("delete published rows: %w", err)
		}
		return nil
	}
	deadIDs, reasons := make([]int64, len(dead)), make([]string, len(dead))
	for i, d := range dead {
		deadIDs[i], reasons[i] = d.row.id, d.err.Error()
	}
	if _, err := conn.Exec(ctx, moveSQL, ids, lo, hi, deadIDs, reasons); err != nil {
		return fmt.Errorf("move refused rows to the dead letters: %w", err)
	}
	for _, d := range dead {
		r.Log.Error("outbox row dead-lettered: Kafka refuses it", slog.Int64("outbox_id", d.row.id),
			slog.String("event_id", d.row.eventID), slog.String("topic", d.row.topic),
			slog.Int("value_bytes", len(d.row.value)), slog.Any("error", d.err))
		if r.Metrics != nil {
			r.Metrics.deadLetters.WithLabelValues(d.row.topic).Inc()
		}
	}
	if r.Metrics != nil {
		if err := r.countDeadLetters(ctx, conn); err != nil {
			r.Log.Warn("counting the outbox dead letters failed", slog.Any("error", err))
		}
	}
	return nil
}

// countDeadLetters sets the gauge of rows in outbox_dead_letters.
func (r *Relay) countDeadLetters(ctx context.Context, conn *pgx.Conn) error {
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM outbox_dead_letters").Scan(&n); err != nil {
		return fmt.Errorf("count dead letters: %w", err)
	}
	r.Metrics.deadRows.Set(float64(n))
	r.countedAt = time.Now()
	return nil
}
