package apierror

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A dependency that is down is 503 SERVICE_UNAVAILABLE with Retry-After, never a 500: the
// failures a database or a network peer gives while it restarts are classified here.
func TestDependencyFailuresAreUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, 503},
		{"connection reset", fmt.Errorf("query: %w", syscall.ECONNRESET), 503},
		{"broken pipe", fmt.Errorf("query: %w", syscall.EPIPE), 503},
		{"unexpected EOF mid-answer", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), 503},
		{"connect error", &pgconn.ConnectError{}, 503},
		{"admin shutdown (57P01)", &pgconn.PgError{Code: "57P01"}, 503},
		{"crash shutdown (57P02)", &pgconn.PgError{Code: "57P02"}, 503},
		{"starting up (57P03)", &pgconn.PgError{Code: "57P03"}, 503},
		{"connection exception (08006)", &pgconn.PgError{Code: "08006"}, 503},
		{"too many connections (53300)", &pgconn.PgError{Code: "53300"}, 503},
		{"read-only during failover (25006)", &pgconn.PgError{Code: "25006"}, 503},
		{"a wrapped PgError", fmt.Errorf("store: %w", &pgconn.PgError{Code: "57P01"}), 503},
		{"a constraint violation is a bug, not an outage", &pgconn.PgError{Code: "23505"}, 500},
		{"a syntax error is a bug", &pgconn.PgError{Code: "42601"}, 500},
		{"anything else", errors.New("boom"), 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := From(tc.err)
			if e.Status != tc.want {
				t.Fatalf("%v: status %d, want %d (a dependency that is down is 503, a bug is 500)", tc.err, e.Status, tc.want)
			}
			if tc.want == 503 && (e.Code != CodeServiceUnavailable || e.Headers["Retry-After"] == "") {
				t.Fatalf("503 must say SERVICE_UNAVAILABLE with Retry-After, got %s %v", e.Code, e.Headers)
			}
			if e2 := Internal(tc.err); e2.Status != tc.want {
				t.Fatalf("Internal(%v) = %d, want %d: handlers' fallbacks must classify too", tc.err, e2.Status, tc.want)
			}
		})
	}
}
