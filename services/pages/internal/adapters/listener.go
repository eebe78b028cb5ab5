package adapters

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/postgres"
)

// WorkChannel is the NOTIFY channel on which a new version wakes the processing workers.
const WorkChannel = "pages_versions"

// Listener wakes the processing workers on WorkChannel's notifications (domain.Wakeups),
// and at the latest every Poll (expired leases are found this way).
type Listener struct {
	Pool *pgxpool.Pool
	Poll time.Duration
	Log  *slog.Logger
}

// Listen calls wake on every notification, once at start (and after a reconnection),
// and at the latest every Poll, until ctx ends.
func (l Listener) Listen(ctx context.Context, wake func()) {
	postgres.ListenLoop(ctx, l.Pool, WorkChannel, l.Poll, l.Log, func(context.Context) (time.Duration, error) {
		wake()
		return 0, nil
	})
}
