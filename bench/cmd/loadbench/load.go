package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/customerapi/platform/libs/pgcluster"
)

// loadResult is what one load generator run reports.
type loadResult struct {
	requests int64 // completed, whatever their status
	rps      float64
	p50, p99 time.Duration
	errors   int64 // non-2xx/3xx answers and socket errors (wrk), failed transactions (pgbench)
	// cpu is the load generator's own CPU (every thread), from its resource usage.
	cpu time.Duration
}

var (
	wrkRequestsRe = regexp.MustCompile(`(\d+) requests in `)
	wrkRPSRe      = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	wrkP50Re      = regexp.MustCompile(`\n\s+50%\s+(\S+)`)
	wrkP99Re      = regexp.MustCompile(`\n\s+99%\s+(\S+)`)
	wrkNon2xxRe   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkSocketRe   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// seconds is a run's duration in whole seconds (wrk and pgbench take no fractions).
func seconds(d time.Duration) int { return max(int(d.Round(time.Second).Seconds()), 1) }

// runWrk drives url with conns connections for dur; headers are "Name: value".
func runWrk(url string, conns int, dur time.Duration, headers []string, script string) (loadResult, error) {
	args := []string{"-t", strconv.Itoa(min(conns, 2)), "-c", strconv.Itoa(conns),
		"-d", strconv.Itoa(seconds(dur)) + "s", "--latency"}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	if script != "" {
		args = append(args, "-s", script)
	}
	cmd := exec.Command("wrk", append(args, url)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return loadResult{}, fmt.Errorf("wrk %s: %w: %s", url, err, out)
	}
	r := loadResult{cpu: childCPU(cmd)}
	if m := wrkRequestsRe.FindSubmatch(out); m != nil {
		r.requests, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if m := wrkRPSRe.FindSubmatch(out); m != nil {
		r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	if m := wrkP50Re.FindSubmatch(out); m != nil {
		r.p50, _ = time.ParseDuration(string(m[1]))
	}
	if m := wrkP99Re.FindSubmatch(out); m != nil {
		r.p99, _ = time.ParseDuration(string(m[1]))
	}
	if m := wrkNon2xxRe.FindSubmatch(out); m != nil {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		r.errors += n
	}
	if m := wrkSocketRe.FindSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(string(s), 10, 64)
			r.errors += n
		}
	}
	if r.requests == 0 {
		return r, fmt.Errorf("wrk %s: no requests completed: %s", url, out)
	}
	return r, nil
}

// childCPU is the user and system CPU of a finished child process, all its threads.
func childCPU(cmd *exec.Cmd) time.Duration {
	if cmd.ProcessState == nil {
		return 0
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pgbench runs single-row INSERTs against one PostgreSQL cluster; prepare creates its
// database and table once.
type pgbench struct {
	bin, dir string
	port     int
}

func newPgbench(ctx context.Context, port int, dir string) (*pgbench, error) {
	admin := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := pgcluster.CreateDatabase(ctx, admin, "pgbench"); err != nil {
		return nil, err
	}
	bindir, err := pgcluster.BinDir()
	if err != nil {
		return nil, err
	}
	psql := exec.Command(filepath.Join(bindir, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres",
		"-d", "pgbench", "-c", "CREATE TABLE IF NOT EXISTS bench (id bigserial PRIMARY KEY, v text NOT NULL)")
	if out, err := psql.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("psql: %w: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "pgbench-insert.sql"), []byte("INSERT INTO bench (v) VALUES ('x');\n"), 0o644); err != nil {
		return nil, err
	}
	return &pgbench{bin: filepath.Join(bindir, "pgbench"), dir: dir, port: port}, nil
}

var (
	pgTxRe     = regexp.MustCompile(`number of transactions actually processed: (\d+)`)
	pgFailedRe = regexp.MustCompile(`number of failed transactions: (\d+)`)
	pgTPSRe    = regexp.MustCompile(`tps = ([\d.]+)`)
)

// run drives the cluster with clients for dur. Every tenth transaction's latency is
// logged (pgbench --log --sampling-rate) for the percentiles pgbench does not report.
func (p *pgbench) run(clients int, dur time.Duration) (loadResult, error) {
	logDir, err := os.MkdirTemp(p.dir, "pgbench-log-")
	if err != nil {
		return loadResult{}, err
	}
	defer os.RemoveAll(logDir)
	cmd := exec.Command(p.bin, "-h", "127.0.0.1", "-p", strconv.Itoa(p.port), "-U", "postgres",
		"-n", "-c", strconv.Itoa(clients), "-j", "2", "-T", strconv.Itoa(seconds(dur)),
		"-f", filepath.Join(p.dir, "pgbench-insert.sql"),
		"--log", "--sampling-rate", "0.1", "--log-prefix", filepath.Join(logDir, "tx"), "pgbench")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return loadResult{}, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	r := loadResult{cpu: childCPU(cmd)}
	if m := pgTxRe.FindSubmatch(out); m != nil {
		r.requests, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if m := pgFailedRe.FindSubmatch(out); m != nil {
		r.errors, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if m := pgTPSRe.FindSubmatch(out); m != nil {
		r.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	lat, err := pgbenchLatencies(logDir)
	if err != nil {
		return r, err
	}
	r.p50, r.p99 = percentile(lat, 0.50), percentile(lat, 0.99)
	if r.requests == 0 {
		return r, fmt.Errorf("pgbench: no transactions: %s", out)
	}
	return r, nil
}

// pgbenchLatencies reads the per-transaction logs (one file per thread): the third field
// of each line is the latency in µs.
func pgbenchLatencies(dir string) ([]time.Duration, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "tx*"))
	var lat []time.Duration
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 3 {
				continue
			}
			if us, err := strconv.ParseInt(fields[2], 10, 64); err == nil {
				lat = append(lat, time.Duration(us)*time.Microsecond)
			}
		}
		fh.Close()
	}
	slices.Sort(lat)
	return lat, nil
}

// percentile of sorted values (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
