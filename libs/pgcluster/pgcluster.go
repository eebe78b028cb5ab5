// Package pgcluster runs a private PostgreSQL cluster from the server binaries installed
// on the machine: initdb on first use, then postgres as a child process bound to
// 127.0.0.1. When the caller is root it runs them as an unprivileged user, since
// PostgreSQL refuses to run as root. Tests and `make run` use it; production does not.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options configure a cluster.
type Options struct {
	// Dir holds the data directory ("<Dir>/data") and the server log ("<Dir>/postgres.log").
	Dir string
	// Port is the TCP port on 127.0.0.1.
	Port int
	// Durable keeps fsync and synchronous commit on (make run); tests turn them off.
	Durable bool
	// RunAs names the OS user to run as when the caller is root (default: "postgres" if
	// that user exists, else "nobody").
	RunAs string
	// Settings are extra server settings (name=value).
	Settings map[string]string
}

// Cluster is a running server.
type Cluster struct {
	opts Options
	cmd  *exec.Cmd
	done chan error
}

// BinDir finds the directory of the PostgreSQL server binaries: PG_BINDIR, then the
// directory of pg_ctl on PATH, then the newest /usr/lib/postgresql/*/bin.
func BinDir() (string, error) {
	if d := os.Getenv("PG_BINDIR"); d != "" {
		return d, nil
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("pgcluster: PostgreSQL server binaries not found (install the postgresql package, or set PG_BINDIR or DATABASE_URL)")
}

func versionOf(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// Start initialises the data directory when it is new and starts the server, returning
// once it accepts connections. The caller must Stop it.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, err := credential(opts.RunAs)
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(opts.Dir, "data")
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if cred != nil {
		if err := os.Chown(opts.Dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("pgcluster: chown %s: %w", opts.Dir, err)
		}
		if err := reachable(opts.Dir); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := initdb(ctx, bin, dataDir, cred); err != nil {
			return nil, err
		}
	}
	args := []string{"-D", dataDir, "-p", strconv.Itoa(opts.Port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "max_connections=300", "-c", "shared_buffers=128MB"}
	if !opts.Durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	keys := make([]string, 0, len(opts.Settings))
	for k := range opts.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+opts.Settings[k])
	}
	logf, err := os.OpenFile(filepath.Join(opts.Dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: log file: %w", err)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// SIGINT is PostgreSQL's fast shutdown; the kernel sends it if this process dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGINT, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("pgcluster: start postgres: %w", err)
	}
	c := &Cluster{opts: opts, cmd: cmd, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait(); logf.Close() }()
	if err := c.waitReady(ctx); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

func initdb(ctx context.Context, bin, dataDir string, cred *syscall.Credential) error {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", dataDir, "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgcluster: initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// credential returns the user to run as when root, or nil when not root.
func credential(name string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	if name == "" {
		name = "nobody"
		if _, err := user.Lookup("postgres"); err == nil {
			name = "postgres"
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: running as root needs an unprivileged user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// URL is the connection URL of database db as the superuser.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.opts.Port, db)
}

func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case err := <-c.done:
			c.done <- err
			return fmt.Errorf("pgcluster: postgres exited during start-up (%w); see %s", err,
				filepath.Join(c.opts.Dir, "postgres.log"))
		case <-ctx.Done():
			return fmt.Errorf("pgcluster: postgres not ready: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// CreateDatabase creates db unless it exists.
func (c *Cluster) CreateDatabase(ctx context.Context, db string) error {
	return CreateDatabase(ctx, c.URL("postgres"), db)
}

// CreateDatabase creates db on the server at adminURL unless it exists.
func CreateDatabase(ctx context.Context, adminURL, db string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("pgcluster: connect: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", db).Scan(&exists); err != nil {
		return fmt.Errorf("pgcluster: look up database %s: %w", db, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		return fmt.Errorf("pgcluster: create database %s: %w", db, err)
	}
	return nil
}

// Stop shuts the server down (fast shutdown) and waits for it.
func (c *Cluster) Stop() error {
	if c.cmd.Process == nil {
		return nil
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-c.done:
		c.done <- err
		return nil
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		return errors.New("pgcluster: postgres did not stop within 30s; killed")
	}
}

// Alive reports whether the server process is still running.
func (c *Cluster) Alive() bool {
	select {
	case err := <-c.done:
		c.done <- err
		return false
	default:
		return true
	}
}

// Kill stops the server abruptly (SIGKILL), as a crash would.
func (c *Cluster) Kill() {
	if c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
		err := <-c.done
		c.done <- err
	}
}

// reachable reports a parent of dir that other users cannot enter: the server runs as
// another user than root and would fail in initdb with a bare "Permission denied".
func reachable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	for p := filepath.Dir(abs); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("pgcluster: the server runs as another user and cannot enter %s (mode %v): "+
				"chmod o+x it or choose a directory elsewhere", p, fi.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
