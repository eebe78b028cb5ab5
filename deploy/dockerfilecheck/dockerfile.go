package dockerfilecheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"iter"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// Stage is one FROM section of a Dockerfile.
type Stage struct {
	// Base is the image the stage starts from, with the build arguments declared before
	// the first FROM replaced by their defaults; Name is its AS name.
	Base, Name string
	// From is the image as the FROM line writes it (e.g. ${RUNTIME_IMAGE}), and Line its line.
	From string
	Line int
	// Args are the build arguments that From uses (none for a literal image).
	Args []string
	// noDefault: one of Args has no default value.
	noDefault bool
	// Instructions are the stage's instructions (lower-case keyword and arguments).
	Instructions []Instruction
}

// Instruction is one parsed instruction.
type Instruction struct {
	Cmd   string
	Args  []string
	Flags []string
	JSON  bool
	Line  int
}

// Parse parses a Dockerfile with BuildKit's parser and groups its instructions by stage.
func Parse(r io.Reader) ([]Stage, error) {
	res, err := parser.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("dockerfilecheck: %w", err)
	}
	// The build arguments declared before the first FROM (name -> default; "" when none),
	// which FROM lines may use.
	meta := map[string]*string{}
	var stages []Stage
	for _, n := range res.AST.Children {
		var args []string
		for a := n.Next; a != nil; a = a.Next {
			args = append(args, a.Value)
		}
		in := Instruction{Cmd: strings.ToLower(n.Value), Args: args, Flags: n.Flags, JSON: n.Attributes["json"], Line: n.StartLine}
		if in.Cmd == "from" {
			if len(args) == 0 {
				return nil, fmt.Errorf("dockerfilecheck: line %d: FROM without an image", n.StartLine)
			}
			st := Stage{From: args[0], Line: n.StartLine}
			st.Base = os.Expand(args[0], func(name string) string {
				st.Args = append(st.Args, name)
				if v := meta[name]; v != nil && *v != "" {
					return *v
				}
				st.noDefault = true
				return ""
			})
			if len(args) == 3 && strings.EqualFold(args[1], "as") {
				st.Name = args[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.Cmd != "arg" {
				return nil, fmt.Errorf("dockerfilecheck: line %d: %s before the first FROM", n.StartLine, in.Cmd)
			}
			for _, a := range args {
				name, def, ok := strings.Cut(a, "=")
				if ok {
					meta[name] = &def
				} else {
					meta[name] = nil
				}
			}
			continue
		}
		stages[len(stages)-1].Instructions = append(stages[len(stages)-1].Instructions, in)
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("dockerfilecheck: no FROM")
	}
	return stages, nil
}

// syntaxDirective matches a `# syntax=` parser directive.
var syntaxDirective = regexp.MustCompile(`(?i)^#\s*syntax\s*=`)

// CheckSource returns the ways a Dockerfile's text breaks the rules the parsed stages do
// not show: a `# syntax=` directive makes BuildKit fetch its Dockerfile front end from a
// registry (none is reachable where the images are built here; the built-in front end
// of Docker 20.10+ reads these files).
func CheckSource(src []byte) []error {
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(src))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text != "" && !strings.HasPrefix(text, "#") {
			break // directives come before the first instruction
		}
		if syntaxDirective.MatchString(text) {
			errs = append(errs, fmt.Errorf("line %d: a syntax directive (%s) makes BuildKit fetch its front end from a registry", line, text))
		}
	}
	return errs
}

// CheckBases returns the stages whose base image is not configurable: every stage that
// does not start from an earlier stage or from scratch must name its base with a build
// argument declared before the first FROM with a default (the public image), so the same
// Dockerfile builds with the public images where a registry is reachable and with local
// stand-ins (--build-arg) where none is.
func CheckBases(stages []Stage) []error {
	var errs []error
	named := map[string]bool{}
	for _, st := range stages {
		switch {
		case named[st.From] || st.From == "scratch":
		case len(st.Args) == 0:
			errs = append(errs, fmt.Errorf("line %d: FROM %s: the base image is not a build argument", st.Line, st.From))
		case st.noDefault:
			errs = append(errs, fmt.Errorf("line %d: FROM %s: the build argument has no default image", st.Line, st.From))
		}
		if st.Name != "" {
			named[st.Name] = true
		}
	}
	return errs
}

// RequiredLabels are the OCI annotations every image carries.
var RequiredLabels = []string{
	"org.opencontainers.image.title", "org.opencontainers.image.version",
	"org.opencontainers.image.revision", "org.opencontainers.image.created",
}

// Check returns every way the stages break the image rules: at least two stages, a static
// (CGO_ENABLED=0) go build in a build stage, a final stage that copies the binary from it,
// runs as an explicit non-root numeric user, carries the metadata labels and has an
// exec-form ENTRYPOINT.
func Check(stages []Stage) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(stages) < 2 {
		fail("not a multi-stage build (%d stage)", len(stages))
		return errs
	}
	build := false
	for _, st := range stages[:len(stages)-1] {
		cgoOff := false
		for _, in := range st.Instructions {
			if in.Cmd == "env" {
				for k, v := range pairs(in.Args) {
					cgoOff = cgoOff || (k == "CGO_ENABLED" && v == "0")
				}
			}
			if in.Cmd == "run" && strings.Contains(strings.Join(in.Args, " "), "go build") {
				build = true
				if !cgoOff && !strings.Contains(strings.Join(in.Args, " "), "CGO_ENABLED=0") {
					fail("line %d: go build without CGO_ENABLED=0 (the binary must be static)", in.Line)
				}
			}
		}
	}
	if !build {
		fail("no go build in a build stage")
	}
	final := stages[len(stages)-1]
	var user string
	labels := map[string]bool{}
	copied, entry := false, false
	for _, in := range final.Instructions {
		switch in.Cmd {
		case "user":
			user = in.Args[0]
		case "label":
			for k := range pairs(in.Args) {
				labels[k] = true
			}
		case "copy":
			for _, f := range in.Flags {
				copied = copied || strings.HasPrefix(f, "--from=")
			}
		case "entrypoint":
			entry = in.JSON
		case "run":
			fail("line %d: the final stage runs commands (it has no shell)", in.Line)
		}
	}
	if user == "" {
		fail("final stage (%s) sets no USER", final.Base)
	} else if !nonRoot(user) {
		fail("final stage runs as %q, not a non-root numeric uid", user)
	}
	for _, l := range RequiredLabels {
		if !labels[l] {
			fail("final stage lacks label %s", l)
		}
	}
	if !copied {
		fail("final stage copies nothing from the build stage")
	}
	if !entry {
		fail("final stage has no exec-form ENTRYPOINT")
	}
	return errs
}

// pairs yields the key-value pairs of an ENV or LABEL instruction, which the parser gives
// as (key, value, separator) triples.
func pairs(args []string) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for i := 0; i+1 < len(args); i += 3 {
			if !yield(args[i], args[i+1]) {
				return
			}
		}
	}
}

// nonRoot reports whether a USER value names a numeric non-zero uid (and gid), which
// Kubernetes' runAsNonRoot can verify without reading /etc/passwd.
func nonRoot(user string) bool {
	for _, part := range strings.Split(user, ":") {
		n, err := strconv.Atoi(part)
		if err != nil || n == 0 {
			return false
		}
	}
	return true
}
