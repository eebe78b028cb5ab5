package dockerfilecheck

import (
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// Stage is one FROM section of a Dockerfile.
type Stage struct {
	// Base is the image the stage starts from; Name is its AS name.
	Base, Name string
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
			st := Stage{Base: args[0]}
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
			continue
		}
		stages[len(stages)-1].Instructions = append(stages[len(stages)-1].Instructions, in)
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("dockerfilecheck: no FROM")
	}
	return stages, nil
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
