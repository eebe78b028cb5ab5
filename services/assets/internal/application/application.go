// Package application wires the assets service onto the shared service runtime: its
// storage backend, the routes (with streamed request bodies for uploads), and the janitor
// that purges the trash and removes unclaimed objects.
package application

import (
	"context"
	"fmt"
	"time"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/config"
	"github.com/customerapi/platform/libs/inflight"
	"github.com/customerapi/platform/libs/postgres"
	"github.com/customerapi/platform/libs/service"
	"github.com/customerapi/platform/services/assets/internal/adapters"
	"github.com/customerapi/platform/services/assets/internal/adapters/preview"
	"github.com/customerapi/platform/services/assets/internal/adapters/signing"
	"github.com/customerapi/platform/services/assets/internal/adapters/storage"
	"github.com/customerapi/platform/services/assets/internal/app"
	"github.com/customerapi/platform/services/assets/internal/domain"
	"github.com/customerapi/platform/services/assets/internal/ports"
	"github.com/customerapi/platform/services/assets/migrations"
)

// Name is the service name.
const Name = "assets"

// DefaultAddr is the local listen address.
const DefaultAddr = "127.0.0.1:25014"

// Migrations are the service's own migration sets.
var Migrations = []postgres.MigrationSet{migrations.Set}

// Settings are the assets service's own settings (docs/architecture.md lists them).
type Settings struct {
	// SigningKey signs download links (SIGNING_KEY, at least 32 bytes).
	SigningKey []byte
	// Backend is "local" or "s3" (ASSETS_STORAGE).
	Backend string
	// Dir is the local backend's directory (ASSETS_STORAGE_DIR).
	Dir string
	// S3 configures the s3 backend (ASSETS_S3_*).
	S3 storage.S3Config
	// MaxUploadBytes is the largest file accepted (ASSETS_MAX_UPLOAD_BYTES).
	MaxUploadBytes int64
	// URLTTL is how long download links stay valid (ASSETS_URL_TTL).
	URLTTL time.Duration
	// TrashRetention is how long an asset stays in the trash before it is deleted
	// (ASSETS_TRASH_RETENTION).
	TrashRetention time.Duration
	// JanitorInterval is how often the trash is purged and unclaimed objects removed
	// (ASSETS_JANITOR_INTERVAL).
	JanitorInterval time.Duration
	// TransferTimeout bounds reading one upload and writing one download
	// (ASSETS_TRANSFER_TIMEOUT).
	TransferTimeout time.Duration
	// UploadGrace is how long the objects of an unfinished upload are kept before the
	// janitor removes them (ASSETS_UPLOAD_GRACE; longer than TransferTimeout).
	UploadGrace time.Duration
	// UploadsPerTenant and UploadsPerProcess cap the uploads in flight at once, of one
	// tenant and in all, per replica (ASSETS_UPLOADS_PER_TENANT, ASSETS_UPLOADS_PER_PROCESS).
	UploadsPerTenant  int
	UploadsPerProcess int
	// PreviewMaxEdge, PreviewMaxPixels, PreviewMaxDecodeBytes and PreviewConcurrency bound
	// previews (ASSETS_PREVIEW_MAX_EDGE, ASSETS_PREVIEW_MAX_PIXELS,
	// ASSETS_PREVIEW_MAX_DECODE_BYTES, ASSETS_PREVIEW_CONCURRENCY).
	PreviewMaxEdge        int
	PreviewMaxPixels      int
	PreviewMaxDecodeBytes int
	PreviewConcurrency    int
}

// Default upload caps per replica. An upload on the s3 backend holds about 6 MiB (the
// 1 MiB head of a single PUT and one ASSETS_S3_PART_SIZE part): 16 of them about 96 MiB,
// which with the previews' 2 × 128 MiB stays well within the chart's 512 MiB. A tenant
// may take a quarter of them: it takes four tenants at their cap to fill a replica.
const (
	DefaultUploadsPerTenant  = 4
	DefaultUploadsPerProcess = 16
)

// SettingsFromEnv reads the settings, recording every problem on env.
func SettingsFromEnv(env *config.Env) Settings {
	s := Settings{
		SigningKey: env.Secret("SIGNING_KEY", signing.MinKeyBytes),
		Backend:    env.String("ASSETS_STORAGE", "local"),
		Dir:        env.String("ASSETS_STORAGE_DIR", ".data/assets"),
		S3: storage.S3Config{
			Endpoint:        env.String("ASSETS_S3_ENDPOINT", ""),
			Bucket:          env.String("ASSETS_S3_BUCKET", ""),
			Region:          env.String("ASSETS_S3_REGION", "us-east-1"),
			AccessKeyID:     env.String("ASSETS_S3_ACCESS_KEY_ID", ""),
			SecretAccessKey: env.String("ASSETS_S3_SECRET_ACCESS_KEY", ""),
			UseTLS:          env.Bool("ASSETS_S3_TLS", true),
			PathStyle:       env.Bool("ASSETS_S3_PATH_STYLE", false),
			PartSize:        uint64(env.Int("ASSETS_S3_PART_SIZE", storage.MinPartSize)),
			CreateBucket:    env.Bool("ASSETS_S3_CREATE_BUCKET", false),
		},
		MaxUploadBytes:        int64(env.Int("ASSETS_MAX_UPLOAD_BYTES", 50<<20)),
		URLTTL:                env.Duration("ASSETS_URL_TTL", time.Hour),
		TrashRetention:        env.Duration("ASSETS_TRASH_RETENTION", 30*24*time.Hour),
		JanitorInterval:       env.Duration("ASSETS_JANITOR_INTERVAL", time.Minute),
		TransferTimeout:       env.Duration("ASSETS_TRANSFER_TIMEOUT", 10*time.Minute),
		UploadGrace:           env.Duration("ASSETS_UPLOAD_GRACE", time.Hour),
		UploadsPerTenant:      env.Int("ASSETS_UPLOADS_PER_TENANT", DefaultUploadsPerTenant),
		UploadsPerProcess:     env.Int("ASSETS_UPLOADS_PER_PROCESS", DefaultUploadsPerProcess),
		PreviewMaxEdge:        env.Int("ASSETS_PREVIEW_MAX_EDGE", 512),
		PreviewMaxPixels:      env.Int("ASSETS_PREVIEW_MAX_PIXELS", 25_000_000),
		PreviewConcurrency:    env.Int("ASSETS_PREVIEW_CONCURRENCY", 2),
		PreviewMaxDecodeBytes: env.Int("ASSETS_PREVIEW_MAX_DECODE_BYTES", preview.DefaultMaxDecodeBytes),
	}
	if s.SigningKey == nil {
		env.Fail("SIGNING_KEY", "is required (at least 32 bytes, e.g. 64 hex digits)")
	}
	switch s.Backend {
	case "local":
	case "s3":
		if s.S3.Endpoint == "" || s.S3.Bucket == "" {
			env.Fail("ASSETS_S3_ENDPOINT", "ASSETS_S3_ENDPOINT and ASSETS_S3_BUCKET are required with ASSETS_STORAGE=s3")
		}
		if (s.S3.AccessKeyID == "") != (s.S3.SecretAccessKey == "") {
			env.Fail("ASSETS_S3_ACCESS_KEY_ID", "set both ASSETS_S3_ACCESS_KEY_ID and ASSETS_S3_SECRET_ACCESS_KEY, or neither")
		}
		if s.S3.PartSize < storage.MinPartSize || s.S3.PartSize > 1<<30 {
			env.Fail("ASSETS_S3_PART_SIZE", "must be from 5 MiB (5242880) to 1 GiB")
		}
	default:
		env.Fail("ASSETS_STORAGE", "must be local or s3, got %q", s.Backend)
	}
	// The server's int limits and one part per upload bound the maximum at 1 GiB.
	if s.MaxUploadBytes < 1 || s.MaxUploadBytes > 1<<30 {
		env.Fail("ASSETS_MAX_UPLOAD_BYTES", "must be from 1 to 1073741824")
	}
	for name, d := range map[string]time.Duration{"ASSETS_URL_TTL": s.URLTTL, "ASSETS_TRASH_RETENTION": s.TrashRetention,
		"ASSETS_JANITOR_INTERVAL": s.JanitorInterval, "ASSETS_TRANSFER_TIMEOUT": s.TransferTimeout} {
		if d <= 0 {
			env.Fail(name, "must be positive")
		}
	}
	if s.UploadGrace <= s.TransferTimeout {
		env.Fail("ASSETS_UPLOAD_GRACE", "must be longer than ASSETS_TRANSFER_TIMEOUT (an upload in progress must keep its objects)")
	}
	if s.UploadsPerProcess < 1 || s.UploadsPerProcess > 1024 {
		env.Fail("ASSETS_UPLOADS_PER_PROCESS", "must be from 1 to 1024")
	}
	if s.UploadsPerTenant < 1 || s.UploadsPerTenant > s.UploadsPerProcess {
		env.Fail("ASSETS_UPLOADS_PER_TENANT", "must be from 1 to ASSETS_UPLOADS_PER_PROCESS")
	}
	if s.PreviewMaxEdge < 16 || s.PreviewMaxEdge > 4096 {
		env.Fail("ASSETS_PREVIEW_MAX_EDGE", "must be from 16 to 4096")
	}
	if s.PreviewMaxPixels < 1 {
		env.Fail("ASSETS_PREVIEW_MAX_PIXELS", "must be positive")
	}
	if s.PreviewMaxDecodeBytes < 1 {
		env.Fail("ASSETS_PREVIEW_MAX_DECODE_BYTES", "must be positive")
	}
	if s.PreviewConcurrency < 1 || s.PreviewConcurrency > 64 {
		env.Fail("ASSETS_PREVIEW_CONCURRENCY", "must be from 1 to 64")
	}
	return s
}

// Setup adds the assets routes and the janitor to a runtime.
func Setup(rt *service.Runtime, env *config.Env) error {
	s := SettingsFromEnv(env)
	if err := env.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var store domain.Storage
	var err error
	if s.Backend == "s3" {
		store, err = storage.NewS3(ctx, s.S3)
	} else {
		store, err = storage.NewLocal(s.Dir)
	}
	if err != nil {
		return err
	}
	signer, err := signing.New(s.SigningKey)
	if err != nil {
		return err
	}
	svc := &app.Service{
		Repo: adapters.NewStore(rt.Pool, rt.Outbox), Storage: store, Signer: signer, Log: rt.Log,
		Previews:       preview.NewGenerator(s.PreviewMaxEdge, int64(s.PreviewMaxPixels), int64(s.PreviewMaxDecodeBytes), s.PreviewConcurrency),
		MaxUploadBytes: s.MaxUploadBytes, UploadGrace: s.UploadGrace, URLTTL: s.URLTTL,
		BaseURL: rt.Config.PublicBaseURL,
	}
	// Uploads stream: the handler reads the body as it arrives instead of the server
	// buffering it whole (and fasthttp must not pre-parse multipart forms into memory or
	// temporary files). JSON routes read theirs through a 1 MiB bound (ports.bufferJSON).
	srv := rt.Server.App.Server()
	if srv == nil {
		return fmt.Errorf("assets: the HTTP server is not initialised")
	}
	srv.StreamRequestBody = true
	srv.DisablePreParseMultipartForm = true
	srv.MaxRequestBodySize = apierror.MaxBodyBytes // prefetched before a handler runs; the rest streams
	h := &ports.Handlers{App: svc, Document: rt.Document, Cursors: rt.Cursors, Log: rt.Log, TransferTimeout: s.TransferTimeout,
		Uploads: inflight.New(s.UploadsPerTenant, s.UploadsPerProcess)}
	h.Register(rt.API, rt.Server.App, rt.GatewayOnly)
	rt.Go(func(ctx context.Context) error { return svc.RunJanitor(ctx, s.JanitorInterval, s.TrashRetention) })
	return nil
}
