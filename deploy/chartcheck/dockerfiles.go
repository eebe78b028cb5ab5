package chartcheck

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// DockerDir holds the Dockerfile template and the Dockerfiles generated from it.
const DockerDir = "deploy/docker"

// DockerfilePath is where the Dockerfile of a deployable lives, relative to the root.
func DockerfilePath(name string) string { return DockerDir + "/" + name + ".Dockerfile" }

// RenderDockerfile renders the Dockerfile of one deployable from deploy/docker/Dockerfile.tmpl:
// the template is shared, so every image is built the same way.
func RenderDockerfile(root string, d Deployable) ([]byte, error) {
	src, err := os.ReadFile(filepath.Join(root, DockerDir, "Dockerfile.tmpl"))
	if err != nil {
		return nil, fmt.Errorf("chartcheck: %w", err)
	}
	tmpl, err := template.New("Dockerfile").Delims("[[", "]]").Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("chartcheck: Dockerfile.tmpl: %w", err)
	}
	desc, ports := "the "+d.Name+" service", "8080"
	if d.Name == "gateway" {
		desc, ports = "the gateway (public API and admin API)", "8080 8081"
	}
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, map[string]any{"Name": d.Name, "Package": d.Package,
		"Description": desc, "Ports": ports})
	if err != nil {
		return nil, fmt.Errorf("chartcheck: Dockerfile.tmpl: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteDockerfiles regenerates the Dockerfile of every deployable and removes those of
// deployables that no longer exist.
func WriteDockerfiles(root string) error {
	ds, err := Deployables(root)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, d := range ds {
		b, err := RenderDockerfile(root, d)
		if err != nil {
			return err
		}
		p := filepath.Join(root, DockerfilePath(d.Name))
		keep[p] = true
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return fmt.Errorf("chartcheck: %w", err)
		}
	}
	old, _ := filepath.Glob(filepath.Join(root, DockerDir, "*.Dockerfile"))
	for _, p := range old {
		if !keep[p] && strings.HasSuffix(p, ".Dockerfile") {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("chartcheck: %w", err)
			}
		}
	}
	return nil
}
