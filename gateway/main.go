// Command gateway is the platform's only public entry point: it authenticates API keys,
// applies rate limits and routes each request to the service that owns it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/customerapi/platform/gateway/internal/app"
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
	cfg, err := app.ConfigFromEnv(config.FromOS())
	if err != nil {
		return err
	}
	log := telemetry.NewLogger(os.Stdout, "gateway", cfg.LogLevel)
	tracing, err := telemetry.SetupTracing(ctx, "gateway")
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tracing.Shutdown(sctx)
	}()
	a, cleanup, err := app.New(ctx, cfg, log, tracing)
	if err != nil {
		return err
	}
	defer cleanup()
	return a.Run(ctx)
}
