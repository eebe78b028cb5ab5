// Package docscheck holds the checks of the repository's Markdown: every relative link
// and anchor resolves, and the README stays short. It needs no running system.
package docscheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/customerapi/platform/e2e"
)

// readmeMaxLines is the README's budget: what the platform is, the two commands, where to
// go next. Everything else has its page in docs/.
const readmeMaxLines = 80

var (
	fenced   = regexp.MustCompile("(?ms)^ {0,3}```.*?^ {0,3}```[^\n]*$")
	inline   = regexp.MustCompile("`[^`\n]*`")
	link     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	heading  = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	htmlName = regexp.MustCompile(`<a (?:name|id)="([^"]+)"`)
)

func TestEveryRelativeLinkResolves(t *testing.T) {
	root, err := e2e.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files := markdownFiles(t, root)
	if len(files) < 10 {
		t.Fatalf("found only %d Markdown files under %s", len(files), root)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		anchors[path] = headingAnchors(string(b))
		return anchors[path]
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := inline.ReplaceAllString(fenced.ReplaceAllString(string(b), ""), "")
		rel, _ := filepath.Rel(root, f)
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: %s does not exist", rel, target, path)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if !anchorsOf(dest)[anchor] {
				t.Errorf("%s: link %q: no heading of %s has the anchor #%s", rel, target, filepath.Base(dest), anchor)
			}
		}
	}
	t.Logf("%d relative links in %d Markdown files resolve", checked, len(files))
}

func TestReadmeIsShort(t *testing.T) {
	root, err := e2e.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move details to a page of docs/ and link it", n, readmeMaxLines)
	}
	for _, want := range []string{"make run", "make test", "LICENSE", "docs/concepts.md", "docs/quickstart.md"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README.md does not mention %s", want)
		}
	}
}

func TestAnchorsFollowGitHub(t *testing.T) {
	got := headingAnchors("# Title\n## On a real API server (`make test-cluster`, no Docker)\n## Title\n## Événements: 5xx & co.\n")
	for _, want := range []string{"title", "on-a-real-api-server-make-test-cluster-no-docker", "title-1", "événements-5xx--co"} {
		if !got[want] {
			t.Errorf("no anchor %q among %v", want, got)
		}
	}
}

// markdownFiles lists the repository's own Markdown files (not dependencies or caches).
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".cache", ".data", ".git", "node_modules", "vendor", "testdata", "bin", ".artifacts":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".md") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// headingAnchors returns the anchors GitHub gives a document's headings: lower case,
// punctuation dropped but for '-' and '_', spaces made '-', a repeated one suffixed -1, -2;
// and the explicit <a name> ones.
func headingAnchors(doc string) map[string]bool {
	doc = fenced.ReplaceAllString(doc, "")
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(doc, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	for _, m := range htmlName.FindAllStringSubmatch(doc, -1) {
		out[m[1]] = true
	}
	return out
}
