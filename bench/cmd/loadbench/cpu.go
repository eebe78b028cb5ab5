package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc (USER_HZ), 100 per second on every
// Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// procTimes is one process's line of /proc/<pid>/stat: its parent and CPU times. The
// times of the thread-group leader's stat cover every thread of the process; cutime and
// cstime are those of its children that have exited and been waited for.
type procTimes struct {
	ppid                         int
	utime, stime, cutime, cstime time.Duration
}

func readProcStat(pid int) (procTimes, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procTimes{}, false
	}
	return parseProcStat(b)
}

// parseProcStat reads the fields after the command name, which is in parentheses and may
// itself hold spaces and parentheses.
func parseProcStat(b []byte) (procTimes, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procTimes{}, false
	}
	// After ") ": state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procTimes{}, false
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	return procTimes{ppid: int(n(4)),
		utime: time.Duration(n(14)) * clockTick, stime: time.Duration(n(15)) * clockTick,
		cutime: time.Duration(n(16)) * clockTick, cstime: time.Duration(n(17)) * clockTick}, true
}

// procTable is every process's times at one moment.
type procTable map[int]procTimes

func readProcTable() procTable {
	t := procTable{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if p, ok := readProcStat(pid); ok {
			t[pid] = p
		}
	}
	return t
}

// group is a set of processes whose CPU is counted together: a tree (a root and every
// descendant, e.g. the postmaster and its backends, nginx's master and workers) or one
// process alone (self: this process, whose children are the processes measured
// separately).
type group struct {
	label string
	roots []int
	self  bool
}

// cpu is the group's CPU time so far. For a tree it counts, for each live member, its
// own time and that of its exited children (cutime, cstime): a backend that exits
// between two readings moves its time into its parent's cutime, so the difference of
// two readings is the tree's CPU in between whether members came or went.
func (g group) cpu(t procTable) time.Duration {
	if g.self {
		var d time.Duration
		for _, r := range g.roots {
			if p, ok := t[r]; ok {
				d += p.utime + p.stime
			}
		}
		return d
	}
	children := map[int][]int{}
	for pid, p := range t {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var d time.Duration
	seen := map[int]bool{}
	var walk func(int)
	walk = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		p, ok := t[pid]
		if !ok {
			return
		}
		d += p.utime + p.stime + p.cutime + p.cstime
		for _, c := range children[pid] {
			walk(c)
		}
	}
	for _, r := range g.roots {
		walk(r)
	}
	return d
}

// machineBusy is the busy CPU time of the whole machine (every core) from /proc/stat:
// user, nice, system, irq, softirq and steal; idle and iowait are not busy.
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy int64
	for _, k := range []int{1, 2, 3, 6, 7, 8} { // user nice system [idle iowait] irq softirq steal
		v, _ := strconv.ParseInt(f[k], 10, 64)
		busy += v
	}
	return time.Duration(busy) * clockTick, nil
}

// snapshot is the CPU of each group and of the machine at one moment.
type snapshot struct {
	at      time.Time
	groups  map[string]time.Duration
	machine time.Duration
}

func takeSnapshot(groups []group) (snapshot, error) {
	m, err := machineBusy()
	if err != nil {
		return snapshot{}, err
	}
	t := readProcTable()
	s := snapshot{at: time.Now(), groups: map[string]time.Duration{}, machine: m}
	for _, g := range groups {
		s.groups[g.label] += g.cpu(t)
	}
	return s, nil
}

// since is the CPU used between a and b, per group and for the machine.
func (b snapshot) since(a snapshot) (map[string]time.Duration, time.Duration) {
	d := map[string]time.Duration{}
	for k, v := range b.groups {
		d[k] = max(v-a.groups[k], 0)
	}
	return d, b.machine - a.machine
}

// postmasterPID reads the PID of a cluster's postmaster from its data directory.
func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// pgProcess is one of the postmaster's children: its kind (from its title) and times.
type pgProcess struct {
	kind  string
	times procTimes
}

// postgresKind names a PostgreSQL process by its title (/proc/<pid>/cmdline, which
// PostgreSQL rewrites): "backends of <database>" for a client backend, else the
// background process's own name ("walwriter", "checkpointer", "autovacuum worker", …).
func postgresKind(title string) string {
	t, ok := strings.CutPrefix(strings.TrimSpace(strings.ReplaceAll(title, "\x00", " ")), "postgres: ")
	if !ok {
		return "other"
	}
	for _, bg := range []string{"walwriter", "checkpointer", "background writer", "autovacuum launcher",
		"autovacuum worker", "logical replication launcher", "walsender", "stats collector", "archiver", "parallel worker"} {
		if strings.HasPrefix(t, bg) {
			return bg
		}
	}
	// A client backend's title is "<user> <database> <host>(<port>) <state>".
	if f := strings.Fields(t); len(f) >= 3 {
		return "backends of " + f[1]
	}
	return "other"
}

// postgresChildren reads the postmaster's children.
func postgresChildren(pm int) map[int]pgProcess {
	out := map[int]pgProcess{}
	for pid, p := range readProcTable() {
		if p.ppid != pm {
			continue
		}
		title, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			continue
		}
		out[pid] = pgProcess{kind: postgresKind(string(title)), times: p}
	}
	return out
}

// cpuSplit is CPU time split into user and system (kernel) time.
type cpuSplit struct{ user, sys time.Duration }

// postgresBreakdown is the CPU of the postmaster's children between two readings, by
// kind, user and system time apart. A child that exited in between is not in the second
// reading; its time (moved into the postmaster's cutime and cstime when it was waited
// for) is reported as "exited processes", with the postmaster's own. That time is the
// child's whole life, so what a child present at the first reading had used by then is
// taken off: a long autovacuum that ends during the run counts only its part in the run.
func postgresBreakdown(before, after map[int]pgProcess, pmBefore, pmAfter procTimes) map[string]cpuSplit {
	out := map[string]cpuSplit{}
	for pid, a := range after {
		b := before[pid] // zero when the process started in between
		s := out[a.kind]
		s.user += max(a.times.utime-b.times.utime, 0)
		s.sys += max(a.times.stime-b.times.stime, 0)
		out[a.kind] = s
	}
	gone := cpuSplit{user: pmAfter.utime - pmBefore.utime + pmAfter.cutime - pmBefore.cutime,
		sys: pmAfter.stime - pmBefore.stime + pmAfter.cstime - pmBefore.cstime}
	for pid, b := range before {
		if _, alive := after[pid]; !alive {
			gone.user -= b.times.utime
			gone.sys -= b.times.stime
		}
	}
	out["postmaster and exited processes"] = cpuSplit{user: max(gone.user, 0), sys: max(gone.sys, 0)}
	return out
}
