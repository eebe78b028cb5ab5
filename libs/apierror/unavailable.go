package apierror

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// unavailable returns a 503 for an error that says a dependency (the database, a peer
// over the network) is down, restarting or refusing connections, and nil for any other
// error. Such a failure is the client's cue to retry later, not a bug of ours.
func unavailable(err error) *Error {
	if err == nil || !IsUnavailable(err) {
		return nil
	}
	e := Unavailable("a dependency of the service is unavailable; retry shortly")
	e.cause = err
	return e.WithHeader("Retry-After", "1")
}

// IsUnavailable reports whether err comes from a dependency being unreachable or
// restarting (connection refused or lost, PostgreSQL shutting down, starting up, out of
// connections or read-only during a failover), rather than from a bad statement.
func IsUnavailable(err error) bool {
	// A connection that could not be made is an outage whatever the server said: it may
	// carry the server's refusal, such as 55000 "database is not currently accepting
	// connections" while an operator or a failover holds connections off.
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableState(pgErr.Code)
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return true
	}
	// pgxpool reports a pool closed at shutdown and pgconn a connection closed under it
	// only in their texts.
	msg := err.Error()
	return strings.Contains(msg, "closed pool") || strings.Contains(msg, "conn closed")
}

// unavailableState reports whether a PostgreSQL SQLSTATE means the server cannot serve
// now: class 08 (connection exception), 53 (insufficient resources, such as too many
// connections), 57P01-57P05 (shutting down, starting up, idle timeouts), and 25006
// (read-only transaction: a standby during a failover).
func unavailableState(code string) bool {
	return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "53") ||
		strings.HasPrefix(code, "57P") || code == "25006"
}
