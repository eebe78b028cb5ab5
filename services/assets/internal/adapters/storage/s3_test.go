package storage_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/customerapi/platform/services/assets/internal/adapters/storage"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

// FakeS3 starts an in-process S3-protocol server on 127.0.0.1 and returns the backend
// configuration that reaches it.
func fakeS3(t *testing.T) storage.S3Config {
	t.Helper()
	faker := gofakes3.New(s3mem.New())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: faker.Server()}}
	srv.Start()
	t.Cleanup(srv.Close)
	return storage.S3Config{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "assets", Region: "us-east-1",
		AccessKeyID: "test", SecretAccessKey: "test-secret", PathStyle: true, CreateBucket: true}
}

func TestS3(t *testing.T) {
	suite(t, func(t *testing.T) domain.Storage {
		s, err := storage.NewS3(context.Background(), fakeS3(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestS3MissingBucket(t *testing.T) {
	cfg := fakeS3(t)
	cfg.CreateBucket = false
	if _, err := storage.NewS3(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing bucket: %v", err)
	}
}
