package sessions

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/services/pages/internal/domain/session"
)

// ComputePending claims up to n pending sessions (skipping rows another replica holds),
// computes their metrics by m and stores the results, all in one transaction: a crash
// before the commit leaves them pending for the next run, and nothing is computed twice.
func (st *Store) ComputePending(ctx context.Context, m session.Metrics, n int, now time.Time) (session.Computed, error) {
	var done session.Computed
	err := postgres.InTx(ctx, st.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+sessionCols+` FROM audience_sessions
			WHERE computation_status = 'pending' ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`, n)
		if err != nil {
			return fmt.Errorf("claim sessions: %w", err)
		}
		claimed, err := collectSessions(rows)
		if err != nil {
			return fmt.Errorf("claim sessions: %w", err)
		}
		if len(claimed) == 0 {
			return nil
		}
		var c session.Computed
		b := &pgx.Batch{}
		for _, s := range claimed {
			r := m.Compute(s)
			if r.Status == session.ComputationFailed {
				c.Failed++
			} else {
				c.Completed++
			}
			b.Queue(`UPDATE audience_sessions SET computation_status = $3, computation_error = $4, is_bounce = $5,
				time_spent_seconds = $6, has_conversion = $7, computed_at = $8, computation_attempts = computation_attempts + 1
				WHERE tenant_id = $1 AND id = $2`,
				s.TenantID, s.ID, r.Status, r.Error, r.IsBounce, r.TimeSpentSeconds, r.HasConversion, now)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("store metrics: %w", err)
		}
		done = c
		return nil
	})
	return done, err
}
