package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// purgeBatch is how many deliveries one statement deletes: small enough that a purge
// never holds many row locks or one long transaction.
const purgeBatch = 1000

// RunRetention deletes finished deliveries older than keep, at start and then hourly, in
// batches of purgeBatch until a batch comes back short. It returns when ctx ends; a
// failed pass is logged and tried again at the next hour.
func RunRetention(ctx context.Context, p domain.Purger, keep time.Duration, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		for {
			n, err := p.PurgeFinished(ctx, time.Now().Add(-keep), purgeBatch)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("purging old deliveries failed", slog.Any("error", fmt.Errorf("retention: %w", err)))
				}
				break
			}
			if n < purgeBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
