package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// ResealBatch is how many subscriptions one short transaction seals again.
const ResealBatch = 100

// RunReseal keeps every stored signing secret sealed under the primary key of
// WEBHOOK_SECRETS_KEYS: at start and then every period until ctx ends, it seals again the
// secrets still in plaintext (written before sealing existed) or under an older key
// (after a rotation, or written by a replica that had another primary key during a
// rolling update). A pass that sealed or left something is logged; a failed pass is
// logged and tried at the next period.
func RunReseal(ctx context.Context, s domain.Resealer, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r, err := s.ResealSecrets(ctx, ResealBatch)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("sealing webhook secrets again failed; retrying later", slog.Any("error", err))
		case len(r.Unreadable) > 0:
			log.Error("webhook secrets no key of WEBHOOK_SECRETS_KEYS opens: put the key they were sealed with back",
				slog.Int("sealed", r.Sealed), slog.Int("unreadable", len(r.Unreadable)),
				slog.Any("subscriptions", r.Unreadable[:min(len(r.Unreadable), 20)]), slog.Int64("remaining", r.Remaining))
		case r.Sealed > 0 || r.Remaining > 0:
			log.Info("webhook secrets sealed again under the primary key", slog.Int("sealed", r.Sealed),
				slog.Int64("remaining", r.Remaining))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
