package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/customerapi/platform/libs/testwait"
)

// quickstartBlock is a fenced sh block of docs/quickstart.md; background blocks run in a
// terminal of their own, until their output shows ready.
type quickstartBlock struct {
	code       string
	background bool
	ready      string
}

var fence = regexp.MustCompile("(?ms)^```sh( \\{background: \"([^\"]+)\"\\})?\\n(.*?)^```")

func quickstartBlocks(doc string) []quickstartBlock {
	var out []quickstartBlock
	for _, m := range fence.FindAllStringSubmatch(doc, -1) {
		out = append(out, quickstartBlock{code: m[3], background: m[1] != "", ready: m[2]})
	}
	return out
}

// quickstartScript turns the blocks into one bash script: one shell, as a reader's
// first terminal, with each background block started beside it (its output in
// logs/bg<N>.log) and waited for until it prints its ready text.
func quickstartScript(blocks []quickstartBlock, logs string) string {
	var b strings.Builder
	b.WriteString(`set -euo pipefail
wait_for() { # file text seconds
  for _ in $(seq $(($3 * 5))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done
  echo "timed out waiting for '$2' in $1:"; cat "$1"; return 1
}
`)
	for i, bl := range blocks {
		if bl.background {
			log := filepath.Join(logs, fmt.Sprintf("bg%d.log", i))
			fmt.Fprintf(&b, "echo \"[${SECONDS}s]\"\ncat <<'QUICKSTART_EOF'\n$ (in a terminal of its own) %s\nQUICKSTART_EOF\n(\n%s) > %s 2>&1 &\nwait_for %s %s 900\n",
				strings.TrimSpace(strings.SplitN(bl.code, "\n", 2)[0]), bl.code, log, log, strconv.Quote(bl.ready))
			continue
		}
		// Show each command as a reader types it (a quoted here-document expands nothing),
		// after the seconds the quickstart has taken so far.
		b.WriteString("echo \"[${SECONDS}s]\"\ncat <<'QUICKSTART_EOF'\n")
		for _, line := range strings.Split(strings.TrimSpace(bl.code), "\n") {
			b.WriteString("$ " + line + "\n")
		}
		b.WriteString("QUICKSTART_EOF\n")
		b.WriteString(bl.code)
	}
	return b.String()
}

// The quickstart, run as written on a clean clone of the committed tree: make run, a
// first call with each client, both example receivers subscribed, a test event each,
// verified, and real events replayed. It needs the quickstart's fixed ports (25001, 25002, 4000, 4001, and make
// run's PostgreSQL and broker ports) free; otherwise it is skipped, unless
// E2E_REQUIRE_QUICKSTART is set. Slow (a clean build of everything): it runs when
// E2E_QUICKSTART is set (make quickstart-test and make test set it).
func TestQuickstart(t *testing.T) {
	if os.Getenv("E2E_QUICKSTART") == "" {
		t.Skip("set E2E_QUICKSTART=1 (make quickstart-test)")
	}
	for _, port := range []int{25001, 25002, 4000, 4001} {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
			if os.Getenv("E2E_REQUIRE_QUICKSTART") != "" {
				t.Fatalf("port %d is taken: the quickstart needs it (is a make run going?)", port)
			}
			t.Skipf("port %d is taken: the quickstart needs it (is a make run going?)", port)
		} else {
			l.Close()
		}
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "quickstart.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := quickstartBlocks(string(doc))
	if len(blocks) < 8 {
		t.Fatalf("found %d sh blocks in docs/quickstart.md", len(blocks))
	}

	// Not t.TempDir: PostgreSQL runs as an unprivileged user when we are root, and must
	// reach its files through every parent directory.
	tmp, err := os.MkdirTemp("", "quickstart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(tmp, "customer-api")
	if out, err := exec.Command("git", "clone", "-q", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	logs := filepath.Join(tmp, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(tmp, "quickstart.sh")
	if err := os.WriteFile(script, []byte(quickstartScript(blocks, logs)), 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = clone
	// A fresh environment of a reader: no test settings; the key comes from .data.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "E2E_BASE_URL=", "DATA_DIR=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	// The background processes (make run, the receivers) are in the script's process
	// group: stop them all at the end, gently first, as Ctrl-C would.
	defer func() {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		testwait.Until(30*time.Second, func() bool { return syscall.Kill(-pgid, 0) != nil }) // the group is gone
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}()
	err = cmd.Wait()
	t.Logf("the quickstart's commands and their output:\n%s", out.String())
	if err != nil {
		t.Fatalf("the quickstart failed: %v", err)
	}
	for _, want := range []string{`created topic_`, `the tenant has`} {
		if strings.Count(out.String(), want) != 2 {
			t.Fatalf("expected %q from both first calls", want)
		}
	}
	// Each receiver verified its test event, and saw from the signed body that it is one.
	verified := map[string]bool{}
	testwait.Eventually(t, 30*time.Second, "both receivers to verify their test event", func() bool {
		entries, _ := os.ReadDir(logs)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(logs, e.Name()))
			for _, typ := range []string{"form.submitted", "page.version.published"} {
				if regexp.MustCompile(`(?m)^verified evt_[0-9a-z]{26} ` + regexp.QuoteMeta(typ) + ` \(test\)$`).Match(b) {
					verified[typ] = true
				}
			}
		}
		return len(verified) == 2
	})
	// The Go receiver got the page's published version twice: delivered, then replayed
	// with the same eventId.
	testwait.Eventually(t, 30*time.Second, "the replayed events at the Go receiver", func() bool {
		entries, _ := os.ReadDir(logs)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(logs, e.Name()))
			seen := map[string]int{}
			for _, m := range regexp.MustCompile(`(?m)^verified (evt_[0-9a-z]{26}) page\.version\.published$`).FindAllSubmatch(b, -1) {
				if seen[string(m[1])]++; seen[string(m[1])] == 2 {
					return true
				}
			}
		}
		return false
	})
}
