package chartcheck

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// TestEveryDeployableIsDelivered: the gateway and each service with a main.go have a
// values entry, a generated Dockerfile and a skaffold artifact; nothing is left over.
func TestEveryDeployableIsDelivered(t *testing.T) {
	r := root(t)
	ds, err := Deployables(r)
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Services map[string]any `json:"services"`
	}
	b, err := os.ReadFile(filepath.Join(r, ChartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSkaffold(r)
	if err != nil {
		t.Fatal(err)
	}
	var artifacts []string
	for _, a := range s.Build.Artifacts {
		artifacts = append(artifacts, a.Image)
	}
	for _, d := range ds {
		if d.Name != "gateway" && values.Services[d.Name] == nil {
			t.Errorf("%s: no entry under services in %s/values.yaml", d.Name, ChartDir)
		}
		if !slices.Contains(artifacts, "customerapi/"+d.Name) {
			t.Errorf("%s: no skaffold artifact customerapi/%s", d.Name, d.Name)
		}
		want, err := RenderDockerfile(r, d)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(r, DockerfilePath(d.Name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is missing or out of date: run `make dockerfiles`", DockerfilePath(d.Name))
		}
	}
	files, _ := filepath.Glob(filepath.Join(r, DockerDir, "*.Dockerfile"))
	if len(files) != len(ds) {
		t.Errorf("%d Dockerfiles for %d deployables: run `make dockerfiles`", len(files), len(ds))
	}
}

func kindCluster(t *testing.T, r string) *kindv1alpha4.Cluster {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r, "deploy", "kind", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c kindv1alpha4.Cluster
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		t.Fatalf("deploy/kind/cluster.yaml: %v", err)
	}
	return &c
}

// TestKindConfig: the kind cluster config decodes strictly against kind's v1alpha4 API.
func TestKindConfig(t *testing.T) {
	c := kindCluster(t, root(t))
	if c.Kind != "Cluster" || c.APIVersion != "kind.x-k8s.io/v1alpha4" || c.Name != "customer-api" {
		t.Errorf("kind config: %s %s %s", c.APIVersion, c.Kind, c.Name)
	}
	if len(c.Nodes) == 0 || c.Nodes[0].Role != kindv1alpha4.ControlPlaneRole {
		t.Errorf("kind config nodes: %+v", c.Nodes)
	}
	if c.Networking.DisableDefaultCNI {
		t.Error("the default CNI enforces the NetworkPolicies; keep it")
	}
}

// TestDockerignore: the build context keeps everything the workspace build needs.
func TestDockerignore(t *testing.T) {
	r := root(t)
	b, err := os.ReadFile(filepath.Join(r, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	mods, err := WorkspaceModules(r)
	if err != nil {
		t.Fatal(err)
	}
	needed := append([]string{"go.work", "go.work.sum"}, mods...)
	for _, m := range mods {
		needed = append(needed, m+"/go.mod")
	}
	for _, line := range strings.Split(string(b), "\n") {
		pat := strings.TrimSpace(line)
		if pat == "" || strings.HasPrefix(pat, "#") || strings.HasPrefix(pat, "!") {
			continue
		}
		for _, n := range needed {
			if ok, _ := filepath.Match(pat, n); ok || strings.HasPrefix(n, strings.TrimSuffix(pat, "/")+"/") {
				t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", pat, n)
			}
		}
	}
}
