package chartcheck

import (
	"bytes"
	"fmt"
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

// TestSkaffold: skaffold.yaml builds exactly the images the chart runs, from the
// generated Dockerfiles, deploys the chart with values that exist, hands each built image
// to the right Deployment, forwards the gateway to 25001, and has a kind profile.
func TestSkaffold(t *testing.T) {
	r := root(t)
	s, err := LoadSkaffold(r)
	if err != nil {
		t.Fatal(err)
	}
	if s.Build.Local == nil || s.Build.Local.UseBuildkit == nil || !*s.Build.Local.UseBuildkit {
		t.Error("the local builder must use BuildKit (the Dockerfiles use cache mounts)")
	}
	for _, a := range s.Build.Artifacts {
		name := strings.TrimPrefix(a.Image, "customerapi/")
		if a.Docker == nil || a.Docker.Dockerfile != DockerfilePath(name) || (a.Context != "" && a.Context != ".") {
			t.Errorf("artifact %s: want context . and dockerfile %s, got %+v", a.Image, DockerfilePath(name), a.Docker)
		}
	}
	if s.Deploy.Helm == nil || len(s.Deploy.Helm.Releases) != 1 {
		t.Fatalf("want one helm release: %+v", s.Deploy.Helm)
	}
	rel := s.Deploy.Helm.Releases[0]
	if rel.ChartPath != ChartDir {
		t.Errorf("chartPath %s, want %s", rel.ChartPath, ChartDir)
	}
	for _, f := range rel.ValuesFiles {
		if _, err := os.Stat(filepath.Join(r, f)); err != nil {
			t.Errorf("valuesFiles: %v", err)
		}
	}
	// Do what skaffold does: fill the templates with each artifact's built image, render.
	var set []string
	want := map[string]string{}
	for _, a := range s.Build.Artifacts {
		key := ImageKey(a.Image)
		name := strings.TrimPrefix(a.Image, "customerapi/")
		path := "services." + name
		if name == "gateway" {
			path = "gateway"
		}
		repo, ok := rel.SetValueTemplates[path+".image.repository"]
		tag, ok2 := rel.SetValueTemplates[path+".image.tag"]
		if !ok || !ok2 || repo != "{{.IMAGE_REPO_"+key+"}}" || tag != "{{.IMAGE_TAG_"+key+"}}@{{.IMAGE_DIGEST_"+key+"}}" {
			t.Errorf("artifact %s: setValueTemplates %s.image.{repository,tag} missing or wrong: %q %q", a.Image, path, repo, tag)
			continue
		}
		built := "registry.test/" + a.Image
		want[name] = built
		digest := fmt.Sprintf("sha256:%064x", len(set)+1)
		set = append(set, path+".image.repository="+built, path+".image.tag=t1@"+digest)
	}
	if len(rel.SetValueTemplates) != len(set) {
		t.Errorf("%d setValueTemplates for %d artifacts", len(rel.SetValueTemplates), len(s.Build.Artifacts))
	}
	h := helm(t)
	m, err := h.Template(rel.Name, rel.Namespace, rel.ValuesFiles, set...)
	if err != nil {
		t.Fatal(err)
	}
	got := Images(m)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Deployment images %v, want what skaffold builds %v", got, want)
	}
	for _, d := range m.Deployments() {
		if img := d.Spec.Template.Spec.Containers[0].Image; !strings.Contains(img, ":t1@sha256:") {
			t.Errorf("%s: image %s is not pinned by digest", d.Name, img)
		}
	}
	// Local builds (kind) have no digest: skaffold drops the trailing "@", the tag alone
	// must do.
	local := make([]string, len(set))
	for i, kv := range set {
		local[i] = kv
		if k, v, _ := strings.Cut(kv, "="); strings.HasSuffix(k, ".tag") {
			local[i] = k + "=" + strings.SplitN(v, "@", 2)[0]
		}
	}
	if _, err := h.Template(rel.Name, rel.Namespace, rel.ValuesFiles, local...); err != nil {
		t.Errorf("local images (tag without digest): %v", err)
	}
	// The port-forward names the rendered public gateway Service and its port.
	fwd := slices.IndexFunc(s.PortForward, func(f SkaffoldForward) bool { return f.LocalPort == 25001 })
	if fwd < 0 {
		t.Fatal("no port-forward to 25001")
	}
	f := s.PortForward[fwd]
	ok := false
	for _, svc := range m.Services() {
		if strings.EqualFold(f.ResourceType, "service") && svc.Name == f.ResourceName && f.Namespace == rel.Namespace {
			for _, p := range svc.Spec.Ports {
				ok = ok || (int(p.Port) == f.Port && p.TargetPort.String() == "http")
			}
		}
	}
	if !ok {
		t.Errorf("port-forward %+v does not reach the gateway's public port", f)
	}
	// The kind profile targets the cluster of deploy/kind/cluster.yaml and pushes nothing.
	cluster := kindCluster(t, r)
	p := slices.IndexFunc(s.Profiles, func(p SkaffoldProfile) bool { return p.Name == "kind" })
	if p < 0 {
		t.Fatal("no kind profile")
	}
	var push, ctx bool
	for _, patch := range s.Profiles[p].Patches {
		push = push || (patch.Path == "/build/local/push" && patch.Value == false)
		ctx = ctx || (patch.Path == "/deploy/kubeContext" && patch.Value == "kind-"+cluster.Name)
	}
	if !push || !ctx {
		t.Errorf("kind profile must set push=false and kubeContext=kind-%s: %+v", cluster.Name, s.Profiles[p])
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
