package dockerfilecheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDockerfiles(t *testing.T) {
	files, err := filepath.Glob("../docker/*.Dockerfile")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Dockerfiles under deploy/docker: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			stages, err := Parse(fh)
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range Check(stages) {
				t.Error(err)
			}
			name := strings.TrimSuffix(filepath.Base(f), ".Dockerfile")
			final := stages[len(stages)-1]
			if !strings.HasPrefix(final.Base, "gcr.io/distroless/static") {
				t.Errorf("final base %s, want distroless static", final.Base)
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
	}
	stages, err := Parse(strings.NewReader(good(goodFinal)))
	if err != nil {
		t.Fatal(err)
	}
	if errs := Check(stages); len(errs) > 0 {
		t.Fatalf("good Dockerfile fails: %v", errs)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stages, err := Parse(strings.NewReader(c.dockerfile))
			if err != nil {
				t.Fatal(err)
			}
			errs := Check(stages)
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

const goodFinal = `FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title=x org.opencontainers.image.version=1 org.opencontainers.image.revision=r org.opencontainers.image.created=c
COPY --from=build /out/app /app
USER 65532:65532
ENTRYPOINT ["/app"]
`

func good(final string) string {
	return "FROM golang:1.26 AS build\nENV CGO_ENABLED=0\nRUN go build -o /out/app .\n" + final
}
