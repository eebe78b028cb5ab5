package events_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/events"
	"github.com/customerapi/platform/libs/events/kafkatest"
)

// The write-time check must never pass a message that the producer or a broker with the
// same limit refuses: a message whose MessageSize is exactly the limit goes through a
// writer with that MaxMessageBytes to a broker whose message.max.bytes is that limit.
func TestMessageSizeBoundsWhatKafkaAccepts(t *testing.T) {
	const limit = 8192
	b, err := kafkatest.StartOn(0, kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(limit)}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	cfg := b.Config()
	cfg.MaxMessageBytes = limit
	w := cfg.Writer()
	defer w.Close()
	if w.BatchBytes != limit {
		t.Fatalf("writer BatchBytes = %d, want MaxMessageBytes %d", w.BatchBytes, limit)
	}
	headers := map[string]string{events.HeaderEventID: "evt_01m86veq0ne3x9cxmjg08jrx0h", events.HeaderEventType: "form.submitted",
		events.HeaderTenantID: "acme", "traceparent": "00-0102030405060708090a0b0c0d0e0f10-0102030405060708-01"}
	key := []byte("audience_01m86veq0ne3x9cxmjg08jrx0h")
	value := []byte(strings.Repeat("v", limit-events.MessageSize(key, nil, headers)))
	if n := events.MessageSize(key, value, headers); n != limit {
		t.Fatalf("MessageSize = %d, want %d", n, limit)
	}
	if err := events.CheckSize("form.submitted", key, value, headers, limit); err != nil {
		t.Fatalf("CheckSize refused a message of exactly the limit: %v", err)
	}
	m := kafka.Message{Topic: "sized", Key: key, Value: value}
	for k, v := range headers {
		m.Headers = append(m.Headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cfg.EnsureTopics(ctx, "sized"); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMessages(ctx, m); err != nil {
		t.Fatalf("a message MessageSize counts as %d bytes was refused with a limit of %d: %v", limit, limit, err)
	}
	err = events.CheckSize("form.submitted", key, append(value, 'v'), headers, limit)
	var tl *events.TooLargeError
	if !errors.Is(err, events.ErrTooLarge) || !errors.As(err, &tl) || tl.Size != limit+1 || tl.Max != limit {
		t.Fatalf("CheckSize one byte over the limit: %v", err)
	}
	if code, msg := tl.Rejection(); code != "too_big" || !strings.Contains(msg, strconv.Itoa(limit)) {
		t.Fatalf("rejection = %s %q", code, msg)
	}
}

func TestMaxMessageBytesSetting(t *testing.T) {
	env := config.FromMap(nil)
	if c := events.KafkaFromEnv(env); c.MaxMessageBytes != events.DefaultMaxMessageBytes || c.Writer().BatchBytes != events.DefaultMaxMessageBytes {
		t.Fatalf("default MaxMessageBytes %d, BatchBytes %d", c.MaxMessageBytes, c.Writer().BatchBytes)
	}
	if err := env.Err(); err != nil {
		t.Fatal(err)
	}
	env = config.FromMap(map[string]string{"KAFKA_MAX_MESSAGE_BYTES": "500000"})
	if c := events.KafkaFromEnv(env); c.MessageLimit() != 500000 || c.Writer().BatchBytes != 500000 || env.Err() != nil {
		t.Fatalf("KAFKA_MAX_MESSAGE_BYTES=500000: limit %d, BatchBytes %d, %v", c.MessageLimit(), c.Writer().BatchBytes, env.Err())
	}
	for _, bad := range []string{"100", "20000000", "1MB"} {
		env := config.FromMap(map[string]string{"KAFKA_MAX_MESSAGE_BYTES": bad})
		events.KafkaFromEnv(env)
		if err := env.Err(); err == nil || !strings.Contains(err.Error(), "KAFKA_MAX_MESSAGE_BYTES") {
			t.Errorf("KAFKA_MAX_MESSAGE_BYTES=%s accepted: %v", bad, err)
		}
	}
	if (events.KafkaConfig{}).MessageLimit() != events.DefaultMaxMessageBytes {
		t.Fatal("an unset MaxMessageBytes must mean the default")
	}
}
