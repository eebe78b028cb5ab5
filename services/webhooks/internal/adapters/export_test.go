package adapters

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/customerapi/platform/services/webhooks/internal/domain"
)

// ClaimIn is Claim inside tx: a benchmark or a diagnosis rolls tx back to give the
// leases back. Its jobs' secrets stay sealed as stored: nothing sends them.
func ClaimIn(ctx context.Context, tx pgx.Tx, req domain.ClaimRequest) (domain.Claimed, error) {
	return claim(ctx, tx, req)
}
