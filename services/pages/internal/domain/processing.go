package domain

// MaxAttempts bounds the claims of one version: a version whose processing failed this
// often (its worker crashed or erred every time) is cancelled instead of retried forever.
const MaxAttempts = 5

// Claim is a version a worker holds for processing. Attempts is the fencing token: only
// the holder of the latest claim can finish the version.
type Claim struct {
	TenantID, VersionID string
	Attempts            int
}
