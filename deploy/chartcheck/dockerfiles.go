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

// DevDockerDir holds the Dockerfiles of the chart's development dependencies (the in-chart
// PostgreSQL, the development broker, the `helm test` image): not deployables.
const DevDockerDir = DockerDir + "/dev"

// DevBroker is the development Kafka-protocol broker (the embedded kfake broker that `make
// run` uses, as a program): its image is built from the same template as the deployables'.
var DevBroker = Deployable{Name: "devbroker", Package: "cmd/devbroker"}

// DockerfilePath is where the Dockerfile of a deployable lives, relative to the root.
func DockerfilePath(name string) string { return DockerDir + "/" + name + ".Dockerfile" }

// DevBrokerDockerfile is where the development broker's generated Dockerfile lives.
const DevBrokerDockerfile = DevDockerDir + "/devbroker.Dockerfile"

// RenderDockerfile renders the Dockerfile of one deployable (or of DevBroker) from
// deploy/docker/Dockerfile.tmpl: the template is shared, so every image is built the same way.
func RenderDockerfile(root string, d Deployable) ([]byte, error) {
	src, err := os.ReadFile(filepath.Join(root, DockerDir, "Dockerfile.tmpl"))
	if err != nil {
		return nil, fmt.Errorf("chartcheck: %w", err)
	}
	tmpl, err := template.New("Dockerfile").Delims("[[", "]]").Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("chartcheck: Dockerfile.tmpl: %w", err)
	}
	desc, ports, kind, path := "the "+d.Name+" service", "8080", "deployable", DockerfilePath(d.Name)
	switch d {
	case Deployable{Name: "gateway", Package: "gateway"}:
		desc, ports = "the gateway (public API and admin API)", "8080 8081"
	case DevBroker:
		desc, ports, kind, path = "the development Kafka-protocol broker (kfake; not for production)", "9092",
			"development dependency", DevBrokerDockerfile
	}
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, map[string]any{"Name": d.Name, "Package": d.Package,
		"Description": desc, "Ports": ports, "Kind": kind, "Path": path})
	if err != nil {
		return nil, fmt.Errorf("chartcheck: Dockerfile.tmpl: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteDockerfiles regenerates the Dockerfile of every deployable and of the development
// broker, and removes those of deployables that no longer exist.
func WriteDockerfiles(root string) error {
	ds, err := Deployables(root)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, d := range append(ds, DevBroker) {
		b, err := RenderDockerfile(root, d)
		if err != nil {
			return err
		}
		rel := DockerfilePath(d.Name)
		if d == DevBroker {
			rel = DevBrokerDockerfile
		}
		p := filepath.Join(root, rel)
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
