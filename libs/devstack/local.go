package devstack

import "path/filepath"

// LocalEnv is the settings `make run` adds for the local environment: short webhook
// retries, private webhook targets allowed, files under the data directory. Keys of the
// form "service:VAR" apply to one service.
func LocalEnv(dataDir string) map[string]string {
	return map[string]string{
		// webhooks: retries within a minute instead of a day; receivers on this machine.
		"webhooks:WEBHOOK_RETRY_SCHEDULE":        "1s,2s,5s,10s,30s",
		"webhooks:WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
		// assets: the local storage backend keeps the files beside the database.
		"assets:ASSETS_STORAGE_DIR": filepath.Join(dataDir, "assets"),
	}
}
