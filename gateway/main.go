// Command gateway is the platform's only public entry point: it authenticates API keys,
// applies rate limits and routes each request to the service that owns it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/customerapi/platform/gateway/internal/application"
	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/telemetry"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg, err := application.ConfigFromEnv(config.FromOS())
	if err != nil {
		return err
	}
	log, tracing, shutdown, err := telemetry.Setup(ctx, "gateway", cfg.LogLevel)
	if err != nil {
		return err
	}
	defer shutdown()
	a, err := application.New(ctx, cfg, log, tracing)
	if err != nil {
		return err
	}
	defer a.Close()
	return a.Run(ctx)
}
