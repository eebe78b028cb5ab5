package service

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultGCPercent is the garbage collector's target when GOGC is not set: the heap may
// grow to five times what is live before a collection (Go's default is twice). A service's
// live heap is small (tens of MB: the OpenAPI document, pools, caches) and a request
// allocates about 20 KB that dies with it, so with Go's default the collector ran every
// few hundred requests and took about 15 µs of CPU per topic create (BenchmarkCreateTopic,
// gc-cpu-ns/op); at 400 it takes 3-6 µs. The price is memory: a few tens of MB more heap.
const DefaultGCPercent = 400

// memoryLimitShare is the part of the container's memory limit the Go heap is held under
// when GOMEMLIMIT is not set: the collector runs more often rather than let the larger
// GOGC target reach the limit.
const memoryLimitShare = 0.75

// tuneGC applies DefaultGCPercent unless GOGC is set, and a soft memory limit of
// memoryLimitShare of the cgroup's memory limit unless GOMEMLIMIT is set.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if limit, ok := cgroupMemoryLimit(cgroupMemoryFiles...); ok {
			debug.SetMemoryLimit(int64(float64(limit) * memoryLimitShare))
		}
	}
}

// cgroupMemoryFiles hold the memory limit of the process's cgroup: v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// cgroupMemoryLimit reads the memory limit from the first of files that exists; false
// when there is none (v2's "max", v1's huge "no limit") or it cannot be read.
func cgroupMemoryLimit(files ...string) (int64, bool) {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || n >= math.MaxInt64/2 { // "max", or v1's "no limit"
			return 0, false
		}
		return n, true
	}
	return 0, false
}
