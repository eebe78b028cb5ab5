package chartcheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryVariableIsRead: each environment variable the chart sets (in a Deployment or a
// Secret it makes) is one the code reads, so a misspelt optional setting cannot be
// silently ignored.
func TestEveryVariableIsRead(t *testing.T) {
	h := helm(t)
	r := root(t)
	var src strings.Builder
	for _, dir := range []string{"gateway", "services", "libs"} {
		err := filepath.WalkDir(filepath.Join(r, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			src.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	code := src.String()
	read := func(name string) bool {
		if strings.HasPrefix(name, "UPSTREAM_") && strings.HasSuffix(name, "_URL") {
			name = "UPSTREAM_" // built by app.UpstreamVar
		}
		return strings.Contains(code, `"`+name+`"`)
	}
	for _, variant := range []struct {
		name   string
		values []string
		set    []string
	}{{"development", []string{devValues}, nil}, {"production", []string{prodValues}, inlineSecrets}} {
		m, err := h.Template(release, namespace, variant.values, variant.set...)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for _, d := range m.Deployments() {
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				names[e.Name] = d.Name
			}
		}
		for _, s := range m.Secrets() {
			if s.Labels[ComponentLabel] == "postgresql" {
				continue // read by the postgres image
			}
			for k := range s.StringData {
				names[k] = "Secret " + s.Name
			}
		}
		for n, where := range names {
			if !read(n) {
				t.Errorf("%s: %s sets %s, which no code reads", variant.name, where, n)
			}
		}
	}
}
