// Command devstack is `make run`: it starts the whole platform locally and stays in the
// foreground until Ctrl-C or SIGTERM, then stops everything it started.
//
// Settings: DATA_DIR (default .data), BIN_DIR (default bin), ADMIN_TOKEN (default: read
// from or saved to DATA_DIR/admin-token), DATABASE_URL and KAFKA_BROKERS (default: a
// private cluster and the embedded broker), LOGS=stdout to stream the processes' logs.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/devstack"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	stopWithParent()
	env := config.FromOS()
	dataDir, _ := filepath.Abs(env.String("DATA_DIR", ".data"))
	binDir, _ := filepath.Abs(env.String("BIN_DIR", "bin"))
	opts := devstack.Options{
		Dir:          dataDir,
		BinDir:       binDir,
		AdminToken:   env.String("ADMIN_TOKEN", ""),
		DatabaseURL:  env.String("DATABASE_URL", ""),
		KafkaBrokers: env.List("KAFKA_BROKERS", nil),
		Env:          devstack.LocalEnv(dataDir),
	}
	if env.String("LOGS", "") == "stdout" {
		opts.Logs = os.Stdout
	}
	if err := env.Err(); err != nil {
		return err
	}
	fmt.Println("Starting the Customer API platform (PostgreSQL, Kafka broker, services, gateway)...")
	s, err := devstack.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("\nStopping...")
		s.Stop()
		fmt.Println("Stopped.")
	}()
	logs := filepath.Join(dataDir, "logs")
	if opts.Logs != nil {
		logs = "this terminal"
	}
	fmt.Printf(`
Customer API is ready.

  API:          %s   (OpenAPI: %s/v0/openapi.json)
  Admin API:    %s
  Admin token:  %s   (saved in %s)
  Dev API key:  %s   (tenant "dev")
  Brokers:      %s
  Metrics:      %s/metrics, each service on its port + 100 (e.g. %s/metrics)
  Logs:         %s

Try:
  curl -s -H 'x-api-key: %s' %s/v0/topics
  curl -s -X POST -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \
       -d '{"tenantIds":["acme"]}' %s/admin/v0/keys

Press Ctrl-C to stop.
`, s.GatewayURL, s.GatewayURL, s.AdminURL, s.AdminToken, filepath.Join(dataDir, "admin-token"), s.DevKey,
		strings.Join(s.Brokers(), ","), s.AdminURL, s.MetricsURL("topics"), logs, s.DevKey, s.GatewayURL, s.AdminToken, s.AdminURL)
	<-ctx.Done()
	return nil
}
