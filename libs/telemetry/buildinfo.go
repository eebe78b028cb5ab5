package telemetry

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version and Revision name the build; image builds set them with
// -ldflags "-X github.com/customerapi/platform/libs/telemetry.Version=…" (the Dockerfiles
// pass their VERSION and REVISION arguments). A plain `go build` leaves them empty, and
// BuildInfo falls back to what the Go toolchain recorded.
var (
	Version  string
	Revision string
)

// BuildInfo returns the customerapi_build_info gauge of a process: always 1, with the
// service, version, revision and Go version as labels, so that a query can join any
// series to the build that produced it, and a dashboard can show what runs where.
func BuildInfo(service string) prometheus.Collector {
	version, revision := Version, Revision
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && revision == "" {
				revision = s.Value
			}
		}
	}
	if version == "" {
		version = "dev"
	}
	if revision == "" {
		revision = "unknown"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "customerapi_build_info",
		Help: "Always 1: the service, version and revision of the running build, and its Go version.",
		ConstLabels: prometheus.Labels{"service": service, "version": version, "revision": revision,
			"go_version": runtime.Version()},
	})
	g.Set(1)
	return g
}
