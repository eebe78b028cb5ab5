package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestParseProcStatCommandWithParentheses(t *testing.T) {
	line := "1234 (a) b (c)) S 77 1234 1234 0 -1 4194560 100 0 0 0 250 40 7 3 20 0 1 0 100 0 0\n"
	p, ok := parseProcStat([]byte(line))
	if !ok {
		t.Fatal("not parsed")
	}
	want := procTimes{ppid: 77, utime: 2500 * time.Millisecond, stime: 400 * time.Millisecond,
		cutime: 70 * time.Millisecond, cstime: 30 * time.Millisecond}
	if p != want {
		t.Fatalf("got %+v, want %+v", p, want)
	}
}

// A tree whose members come and go between the two readings is measured as the kernel's
// own account of it: the resource usage of the root once it has waited for everything.
func TestTreeCPUMatchesRusage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	// Two busy grandchildren under timeout(1): one ends well before the second reading,
	// one just before it; the root, having waited for both, says so and idles until the
	// test has taken that reading (it reads a line of its standard input, or its end).
	cmd := exec.Command("sh", "-c", `timeout 0.4 sh -c 'while :; do :; done' &
timeout 0.9 sh -c 'while :; do :; done' &
wait; echo ended; read -r _ || :`)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	ended := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ended <- line
	}()
	g := []group{{label: "tree", roots: []int{cmd.Process.Pid}}}
	before, err := takeSnapshot(g)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-ended:
		if line != "ended\n" {
			t.Fatalf("the root said %q, want that its children ended", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the busy grandchildren did not end within 30 s")
	}
	after, err := takeSnapshot(g)
	if err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	cpu, _ := after.since(before)
	got, want := cpu["tree"], childCPU(cmd)
	t.Logf("tree from /proc: %s, rusage of the root: %s", got, want)
	if want < 200*time.Millisecond {
		t.Skipf("the busy loops got only %s of CPU; the machine is too busy to compare", want)
	}
	// /proc counts in clock ticks (10 ms), truncated per process and field, and the tree
	// may have run a tick or two before the first reading.
	if d := got - want; d > 100*time.Millisecond || d < -100*time.Millisecond {
		t.Fatalf("tree CPU %s from /proc, %s from rusage", got, want)
	}
}

// This process's stat covers every thread, as getrusage(RUSAGE_SELF) does.
func TestSelfCPUCoversThreads(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	g := []group{{label: "self", roots: []int{os.Getpid()}, self: true}}
	var r0, r1 syscall.Rusage
	before, _ := takeSnapshot(g)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
			}
		}()
	}
	wg.Wait()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	after, _ := takeSnapshot(g)
	cpu, _ := after.since(before)
	want := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
	t.Logf("self from /proc: %s, getrusage: %s", cpu["self"], want)
	if d := cpu["self"] - want; d > 100*time.Millisecond || d < -100*time.Millisecond {
		t.Fatalf("self CPU %s from /proc, %s from getrusage", cpu["self"], want)
	}
}

func TestSpread(t *testing.T) {
	s := spreadOf([]float64{3, 1, 2, 10})
	if s != (spread{2.5, 1, 10}) {
		t.Fatalf("got %+v", s)
	}
	if got := (spread{0.5, 0.4, 0.7}).percent(); got != "50% (40–70%)" {
		t.Fatalf("percent: %q", got)
	}
	if got := (spread{1, 1, 1}).format("%.1f", ""); got != "1.0" {
		t.Fatalf("one round: %q", got)
	}
}

// A PostgreSQL process is named by its title: a client backend by its database.
func TestPostgresKind(t *testing.T) {
	for title, want := range map[string]string{
		"postgres: postgres pages 127.0.0.1(51234) idle\x00\x00":          "backends of pages",
		"postgres: postgres webhooks 127.0.0.1(51236) INSERT waiting\x00": "backends of webhooks",
		"postgres: walwriter \x00":                                        "walwriter",
		"postgres: autovacuum worker pages\x00":                           "autovacuum worker",
		"postgres: checkpointer ":                                         "checkpointer",
		"/usr/lib/postgresql/15/bin/postgres\x00-D\x00/tmp/x":             "other",
	} {
		if got := postgresKind(title); got != want {
			t.Errorf("postgresKind(%q) = %q, want %q", title, got, want)
		}
	}
}

// The breakdown counts what each live child used since the first reading (all of it for
// a child that started in between), and what exited children used since the first
// reading through the postmaster's cutime and cstime, which hold their whole lives.
func TestPostgresBreakdown(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	before := map[int]pgProcess{
		10: {kind: "backends of pages", times: procTimes{utime: ms(100), stime: ms(50)}},
		11: {kind: "walwriter", times: procTimes{utime: ms(5), stime: ms(5)}},
		12: {kind: "autovacuum worker", times: procTimes{utime: ms(70), stime: ms(1)}}, // exits in between
	}
	after := map[int]pgProcess{
		10: {kind: "backends of pages", times: procTimes{utime: ms(160), stime: ms(80)}},
		11: {kind: "walwriter", times: procTimes{utime: ms(5), stime: ms(7)}},
		13: {kind: "backends of pages", times: procTimes{utime: ms(20), stime: ms(10)}}, // new
	}
	got := postgresBreakdown(before, after, procTimes{utime: ms(1), cutime: ms(0)},
		procTimes{utime: ms(2), cutime: ms(90), cstime: ms(3)})
	want := map[string]cpuSplit{
		"backends of pages": {user: ms(80), sys: ms(40)},
		"walwriter":         {user: 0, sys: ms(2)},
		// user: the postmaster's own 1, cutime's 90 less the 70 the worker had used before
		// the first reading; system: cstime's 3 less the worker's 1.
		"postmaster and exited processes": {user: ms(21), sys: ms(2)},
	}
	if len(got) != len(want) {
		t.Fatalf("breakdown %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %v, want %v", k, got[k], w)
		}
	}
}
