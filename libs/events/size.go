package events

import (
	"errors"
	"fmt"
)

// DefaultMaxMessageBytes is the default of KafkaConfig.MaxMessageBytes: Kafka's default
// message.max.bytes (1048588) less room for the record format's overhead in a full batch.
const DefaultMaxMessageBytes = 1_000_000

// The record format's overhead, as upper bounds: a v2 record batch header (61 bytes) plus
// one record's length, attributes, timestamp and offset deltas, key and value lengths and
// header count (at most 36 bytes); and each header's two length prefixes. Both also cover
// kafka-go's own accounting of a message (22 bytes, plus the header count).
const (
	recordOverhead = 128
	headerOverhead = 10
)

// MessageSize is the number of bytes a Kafka message with this key, value and headers
// counts against the producer's and the broker's size limits, rounded up to cover a record
// batch of its own.
func MessageSize(key, value []byte, headers map[string]string) int {
	n := recordOverhead + len(key) + len(value)
	for k, v := range headers {
		n += headerOverhead + len(k) + len(v)
	}
	return n
}

// ErrTooLarge reports an event whose Kafka message would exceed the maximum message size;
// errors.Is matches every *TooLargeError against it.
var ErrTooLarge = errors.New("events: event too large for a Kafka message")

// TooLargeError is an event whose Kafka message would be Size bytes, over Max.
type TooLargeError struct {
	Type      string
	Size, Max int
}

// Error implements error.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("events: %s event would be a Kafka message of %d bytes, over the limit of %d", e.Type, e.Size, e.Max)
}

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Rejection describes the problem to the API caller whose change would emit the event;
// apierror renders it as a 400 VALIDATION_ERROR.
func (e *TooLargeError) Rejection() (code, message string) {
	return "too_big", fmt.Sprintf("the change would emit a %s event of %d bytes, over the limit of %d bytes: send less data",
		e.Type, e.Size, e.Max)
}

// CheckSize returns a *TooLargeError when the message of an event of type typ, with this
// key, value and headers, is over max bytes (0 means DefaultMaxMessageBytes).
func CheckSize(typ string, key, value []byte, headers map[string]string, max int) error {
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	if n := MessageSize(key, value, headers); n > max {
		return &TooLargeError{Type: typ, Size: n, Max: max}
	}
	return nil
}
