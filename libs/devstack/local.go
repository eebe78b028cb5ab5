package devstack

// LocalEnv is the settings `make run` adds for the local environment: short webhook
// retries, private webhook targets allowed, files under the data directory. Keys of the
// form "service:VAR" apply to one service.
func LocalEnv(dataDir string) map[string]string {
	return map[string]string{}
}
