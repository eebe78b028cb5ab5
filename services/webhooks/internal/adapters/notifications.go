package adapters

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// Channel is the NOTIFY channel that wakes the delivery workers when deliveries become
// due (new events, manual retries). The payload (NotificationPayload) names the
// deliveries' tenant, so that the next claim visits that tenant at once instead of
// finding it in its turn across the tenants with pending deliveries (with many of them,
// say waiting for retries, that turn takes many claims), and says when they are due, so
// that the engine's floors of the tenant (domain.ClaimRequest.Floors) never pass them.
const Channel = "webhook_deliveries"

// NotificationPayload is what a notification on Channel says of pending deliveries of
// tenantID due at due: the tenant ID, a space and due in microseconds since the epoch
// (recordSQL writes the same in SQL). Tenant IDs hold no spaces.
func NotificationPayload(tenantID string, due time.Time) string {
	return tenantID + " " + strconv.FormatInt(due.UnixMicro(), 10)
}

// ParseNotification reads a payload of Channel. known is false when it names the tenant
// alone (as replicas of earlier versions write it): when the deliveries are due is unknown.
func ParseNotification(payload string) (tenantID string, due time.Time, known bool) {
	i := strings.LastIndexByte(payload, ' ')
	if i < 0 {
		return payload, time.Time{}, false
	}
	us, err := strconv.ParseInt(payload[i+1:], 10, 64)
	if err != nil {
		return payload, time.Time{}, false
	}
	return payload[:i], time.UnixMicro(us), true
}

// notify sends the notification of pending deliveries of tenantID due at due, when tx commits.
func notify(ctx context.Context, tx pgx.Tx, tenantID string, due time.Time) error {
	if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, NotificationPayload(tenantID, due)); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// Listener listens for the notifications on Channel (domain.Notifications).
type Listener struct {
	Pool *pgxpool.Pool
	Log  *slog.Logger
}

// Listen passes every notification to h on a dedicated connection (libs/postgres.Listen),
// and reconnects with backoff, until ctx ends.
func (l *Listener) Listen(ctx context.Context, idle time.Duration, h domain.NotificationHandler) {
	postgres.Listen(ctx, l.Pool, Channel, idle, l.Log, notifications{h})
}

// notifications drives a domain.NotificationHandler as a postgres.Listener.
type notifications struct{ h domain.NotificationHandler }

func (n notifications) Listening() { n.h.Listening() }

func (n notifications) Wait(context.Context) (time.Duration, error) {
	n.h.Waiting()
	return 0, nil // the idle wait
}

func (n notifications) Notified(payload string) {
	if payload != "" {
		n.h.Notified(ParseNotification(payload))
	}
}
