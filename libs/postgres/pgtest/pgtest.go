// Package pgtest gives tests a real, empty PostgreSQL database: from TEST_DATABASE_URL
// when set (a server the tests may create databases on), else from a throwaway cluster
// that Main starts from the machine's server binaries and removes afterwards.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/customerapi/platform/libs/pgcluster"
	"github.com/customerapi/platform/libs/postgres"
)

// EnvURL names the variable holding an admin URL of a PostgreSQL server for tests.
const EnvURL = "TEST_DATABASE_URL"

// Main runs the tests of a package that uses databases: with TEST_DATABASE_URL unset it
// starts a throwaway cluster for the duration of the run. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	if os.Getenv(EnvURL) != "" {
		return m.Run()
	}
	c, cleanup, err := StartCluster(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	}
	defer cleanup()
	os.Setenv(EnvURL, c.URL("postgres"))
	return m.Run()
}

// StartCluster starts a throwaway cluster in a temporary directory on a free port; the
// cleanup function stops it and removes the directory.
func StartCluster(ctx context.Context) (*pgcluster.Cluster, func(), error) {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, nil, err
	}
	c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: dir, Port: port})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return c, func() { _ = c.Stop(); os.RemoveAll(dir) }, nil
}

// handedOut holds the ports FreePort returned in this process: a port it handed out is
// free again until its user listens, and must not be handed out twice meanwhile. (The
// one package-level variable here: the set must span every caller in the process.)
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, below the
// ephemeral range so a client socket cannot take it meanwhile, and never the same port
// twice in one process. It is for servers in other processes; a server in this process
// should be handed a listener bound to port 0 instead, which no one can take.
func FreePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	var b [2]byte
	for i := 0; i < 200; i++ {
		_, _ = rand.Read(b[:])
		port := 20000 + (int(b[0])<<8|int(b[1]))%12000
		if handedOut.ports[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			ln.Close()
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("pgtest: no free port found")
}

// Listen binds a port the kernel picks on 127.0.0.1 for a server in this process, closed
// when the test ends if the server never took it over. Unlike FreePort, no concurrent
// test can take the port between its choice and the listen.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// NewDatabase creates an empty database for the test, dropped when the test ends, and
// returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvURL)
	if admin == "" {
		t.Fatalf("pgtest: %s is not set; call pgtest.Main from TestMain", EnvURL)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "test_" + strings.ToLower(hex.EncodeToString(b[:]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pgcluster.CreateDatabase(ctx, admin, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// NewPool creates an empty database with the given migration sets applied and returns a
// pool on it, closed when the test ends.
func NewPool(t testing.TB, sets ...postgres.MigrationSet) *pgxpool.Pool {
	t.Helper()
	dbURL := NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := postgres.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := postgres.Migrate(ctx, pool, nil, sets...); err != nil {
		t.Fatal(err)
	}
	return pool
}

// Traced returns a second pool on pool's database whose connections report to tracer
// (a StatementLog, RoundTrips, …), closed when the test ends: the statements a test wants
// to watch go through it, its set-up through pool.
func Traced(t testing.TB, pool *pgxpool.Pool, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config().Copy()
	cfg.ConnConfig.Tracer = tracer
	traced, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traced.Close)
	return traced
}
