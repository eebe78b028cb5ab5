package dockerfilecheck

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parseFile parses a Dockerfile and reports the rules of its text and its base images.
func parseFile(t *testing.T, f string) []Stage {
	t.Helper()
	src, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := Parse(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range append(CheckSource(src), CheckBases(stages)...) {
		t.Error(err)
	}
	return stages
}

// TestDockerfiles: the deployables' Dockerfiles, and the development broker's (the same
// template), follow every rule; their base images default to the public golang and
// distroless images.
func TestDockerfiles(t *testing.T) {
	files, err := filepath.Glob("../docker/*.Dockerfile")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Dockerfiles under deploy/docker: %v", err)
	}
	for _, f := range append(files, "../docker/dev/devbroker.Dockerfile") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			stages := parseFile(t, f)
			for _, err := range Check(stages) {
				t.Error(err)
			}
			name := strings.TrimSuffix(filepath.Base(f), ".Dockerfile")
			final := stages[len(stages)-1]
			if !strings.HasPrefix(final.Base, "gcr.io/distroless/static") || final.From != "${RUNTIME_IMAGE}" {
				t.Errorf("final base %s (%s), want ${RUNTIME_IMAGE} defaulting to distroless static", final.From, final.Base)
			}
			if !strings.HasPrefix(stages[0].Base, "golang:") || stages[0].From != "${BUILD_IMAGE}" {
				t.Errorf("build base %s (%s), want ${BUILD_IMAGE} defaulting to golang", stages[0].From, stages[0].Base)
			}
			found := false
			for _, in := range final.Instructions {
				found = found || (in.Cmd == "entrypoint" && len(in.Args) == 1 && in.Args[0] == "/usr/local/bin/"+name)
			}
			if !found {
				t.Errorf("ENTRYPOINT is not /usr/local/bin/%s", name)
			}
		})
	}
}

// TestDependencyDockerfiles: the images of the chart's development dependencies and the
// local stand-ins parse, fetch no front end, take their base images as build arguments
// with public defaults, and the dependencies run as the non-root users the chart's pods
// run as (PostgreSQL 999 as the official image, busybox nobody).
func TestDependencyDockerfiles(t *testing.T) {
	users := map[string]string{"postgresql": "999:999", "busybox": "65534:65534", "static": "65532:65532"}
	files, _ := filepath.Glob("../docker/dev/*.Dockerfile")
	local, _ := filepath.Glob("../docker/local/*.Dockerfile")
	if len(files) < 3 || len(local) < 2 {
		t.Fatalf("dev Dockerfiles %v, local ones %v", files, local)
	}
	for _, f := range append(files, local...) {
		name := strings.TrimSuffix(filepath.Base(f), ".Dockerfile")
		t.Run(name, func(t *testing.T) {
			stages := parseFile(t, f)
			if !strings.Contains(stages[0].Base, "bookworm") && !strings.HasPrefix(stages[0].Base, "golang:") {
				t.Errorf("first base %s: want a Debian bookworm default", stages[0].Base)
			}
			want, ok := users[name]
			if !ok {
				return
			}
			var user string
			for _, in := range stages[len(stages)-1].Instructions {
				if in.Cmd == "user" {
					user = in.Args[0]
				}
			}
			if user != want {
				t.Errorf("USER %q, want %s", user, want)
			}
		})
	}
}

// TestCheckCatchesBadImages: the rules fail on Dockerfiles that break them.
func TestCheckCatchesBadImages(t *testing.T) {
	cases := []struct{ name, dockerfile, want string }{
		{"single stage", "FROM golang:1.26\nRUN go build -o /app .\nENTRYPOINT [\"/app\"]\n", "multi-stage"},
		{"root final stage", good(strings.Replace(goodFinal, "USER 65532:65532", "USER root", 1)), "non-root"},
		{"uid 0", good(strings.Replace(goodFinal, "USER 65532:65532", "USER 0", 1)), "non-root"},
		{"no USER", good(strings.Replace(goodFinal, "USER 65532:65532\n", "", 1)), "no USER"},
		{"cgo", strings.Replace(good(goodFinal), "ENV CGO_ENABLED=0\n", "", 1), "CGO_ENABLED=0"},
		{"no labels", good(strings.Replace(goodFinal, `LABEL org.opencontainers.image.title=x org.opencontainers.image.version=1 org.opencontainers.image.revision=r org.opencontainers.image.created=c`, "", 1)), "label"},
		{"shell entrypoint", good(strings.Replace(goodFinal, `ENTRYPOINT ["/app"]`, "ENTRYPOINT /app", 1)), "ENTRYPOINT"},
		{"literal base", strings.Replace(good(goodFinal), "FROM ${BUILD_IMAGE} AS build", "FROM golang:1.26 AS build", 1), "not a build argument"},
		{"no default", strings.Replace(good(goodFinal), "ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot", "ARG RUNTIME_IMAGE", 1), "no default"},
		{"syntax directive", "# syntax=docker/dockerfile:1\n" + good(goodFinal), "front end"},
	}
	all := func(src string) []error {
		stages, err := Parse(strings.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		return append(append(Check(stages), CheckBases(stages)...), CheckSource([]byte(src))...)
	}
	if errs := all(good(goodFinal)); len(errs) > 0 {
		t.Fatalf("good Dockerfile fails: %v", errs)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := all(c.dockerfile)
			ok := false
			for _, e := range errs {
				ok = ok || strings.Contains(e.Error(), c.want)
			}
			if !ok {
				t.Fatalf("no error mentions %q: %v", c.want, errs)
			}
		})
	}
}

const goodFinal = `FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title=x org.opencontainers.image.version=1 org.opencontainers.image.revision=r org.opencontainers.image.created=c
COPY --from=build /out/app /app
USER 65532:65532
ENTRYPOINT ["/app"]
`

func good(final string) string {
	return "# A comment, not a directive\nARG BUILD_IMAGE=golang:1.26\nARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot\n" +
		"FROM ${BUILD_IMAGE} AS build\nENV CGO_ENABLED=0\nRUN go build -o /out/app .\n" + final
}
