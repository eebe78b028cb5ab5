package chartcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// kindProfile is the skaffold profile of the kind cluster (`make dev`, `make test-devloop`).
const kindProfile = "kind"

// devNamespace is where the kind profile deploys: never the namespace of the other
// installs on the same cluster (make test-kind uses customer-api).
const devNamespace = "customer-api-dev"

func loadSkaffold(t *testing.T, r string) *Skaffold {
	t.Helper()
	s, err := LoadSkaffold(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func oneRelease(t *testing.T, s *Skaffold) SkaffoldRelease {
	t.Helper()
	if s.Deploy.Helm == nil || len(s.Deploy.Helm.Releases) != 1 {
		t.Fatalf("want one helm release: %+v", s.Deploy.Helm)
	}
	return s.Deploy.Helm.Releases[0]
}

// componentOf is the deployable an artifact builds (customerapi/topics -> topics).
func componentOf(image string) string { return strings.TrimPrefix(image, "customerapi/") }

// renderAsSkaffold does what skaffold's helm deployer does after a build: it fills the
// release's setValueTemplates with each artifact's built image (pinned by digest when
// digests is true; a local build has none, and skaffold drops the trailing "@"), adds its
// setValues and renders the chart with its values files. It checks that every artifact
// has its two templates and that every Deployment runs the image built for it.
func renderAsSkaffold(t *testing.T, s *Skaffold, rel SkaffoldRelease, digests bool) *Manifest {
	t.Helper()
	var set []string
	want := map[string]string{}
	for i, a := range s.Build.Artifacts {
		key := ImageKey(a.Image)
		name := componentOf(a.Image)
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
		builtTag := "t1"
		if digests {
			builtTag += fmt.Sprintf("@sha256:%064x", i+1)
		}
		set = append(set, path+".image.repository="+built, path+".image.tag="+builtTag)
	}
	if len(rel.SetValueTemplates) != 2*len(s.Build.Artifacts) {
		t.Errorf("%d setValueTemplates for %d artifacts", len(rel.SetValueTemplates), len(s.Build.Artifacts))
	}
	keys := make([]string, 0, len(rel.SetValues))
	for k := range rel.SetValues {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		set = append(set, k+"="+rel.SetValues[k])
	}
	m, err := helm(t).Template(rel.Name, rel.Namespace, rel.ValuesFiles, set...)
	if err != nil {
		t.Fatal(err)
	}
	if got := Images(m); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Deployment images %v, want what skaffold builds %v", got, want)
	}
	for _, d := range m.Deployments() {
		img := d.Spec.Template.Spec.Containers[0].Image
		if digests && !strings.Contains(img, ":t1@sha256:") {
			t.Errorf("%s: image %s is not pinned by digest", d.Name, img)
		}
		if !digests && !strings.HasSuffix(img, ":t1") {
			t.Errorf("%s: image %s is not the locally built t1", d.Name, img)
		}
	}
	return m
}

// checkForward: the port-forward to 25001 names the rendered public gateway Service, in
// the release's namespace, and its port.
func checkForward(t *testing.T, s *Skaffold, rel SkaffoldRelease, m *Manifest) {
	t.Helper()
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
		t.Errorf("port-forward %+v does not reach the gateway's public port in namespace %s", f, rel.Namespace)
	}
}

// TestSkaffold: skaffold.yaml builds exactly the images the chart runs, from the
// generated Dockerfiles, deploys the chart with values that exist, hands each built image
// to the right Deployment, and forwards the gateway to 25001.
func TestSkaffold(t *testing.T) {
	r := root(t)
	s := loadSkaffold(t, r)
	if s.Build.Local == nil || s.Build.Local.UseBuildkit == nil || !*s.Build.Local.UseBuildkit {
		t.Error("the local builder must use BuildKit (the Dockerfiles use cache mounts)")
	}
	for _, a := range s.Build.Artifacts {
		name := componentOf(a.Image)
		if a.Docker == nil || a.Custom != nil || a.Docker.Dockerfile != DockerfilePath(name) || (a.Context != "" && a.Context != ".") {
			t.Errorf("artifact %s: want context . and dockerfile %s, got %+v", a.Image, DockerfilePath(name), a.Docker)
		}
	}
	rel := oneRelease(t, s)
	if rel.ChartPath != ChartDir {
		t.Errorf("chartPath %s, want %s", rel.ChartPath, ChartDir)
	}
	for _, f := range rel.ValuesFiles {
		if _, err := os.Stat(filepath.Join(r, f)); err != nil {
			t.Errorf("valuesFiles: %v", err)
		}
	}
	m := renderAsSkaffold(t, s, rel, true)
	// Local builds have no digest: the tag alone must do.
	renderAsSkaffold(t, s, rel, false)
	checkForward(t, s, rel, m)
}

// TestSkaffoldKindProfile: the kind profile targets the cluster of deploy/kind/cluster.yaml
// (and turns on with its context), pushes nothing, builds every image of the base
// configuration with the project's one image mechanism (deploy/images/images.sh, offline),
// and deploys the same release with the same image wiring into its own namespace, with the
// kind values on top of the development values and a NodePort the host reaches.
func TestSkaffoldKindProfile(t *testing.T) {
	r := root(t)
	s := loadSkaffold(t, r)
	cluster := kindCluster(t, r)
	kubeContext := "kind-" + cluster.Name
	p := s.Profile(kindProfile)
	if p == nil {
		t.Fatalf("no %s profile", kindProfile)
	}
	if !slices.ContainsFunc(p.Activation, func(a SkaffoldActivation) bool { return a.KubeContext == kubeContext }) {
		t.Errorf("the kind profile does not turn on with the context %s: %+v", kubeContext, p.Activation)
	}
	k, err := s.WithProfile(kindProfile)
	if err != nil {
		t.Fatal(err)
	}
	if k.Deploy.KubeContext != kubeContext {
		t.Errorf("kind profile: kubeContext %q, want %q", k.Deploy.KubeContext, kubeContext)
	}
	if k.Build.Local == nil || k.Build.Local.Push == nil || *k.Build.Local.Push {
		t.Errorf("kind profile: the local builder must not push (images are loaded into kind): %+v", k.Build.Local)
	}
	// images.sh prepares one build context per call: one build at a time.
	if k.Build.Local != nil && (k.Build.Local.Concurrency == nil || *k.Build.Local.Concurrency != 1) {
		t.Errorf("kind profile: build concurrency must be 1 (images.sh builds one image at a time)")
	}
	var base, kind []string
	for _, a := range s.Build.Artifacts {
		base = append(base, a.Image)
	}
	for _, a := range k.Build.Artifacts {
		kind = append(kind, a.Image)
		name := componentOf(a.Image)
		want := "deploy/images/images.sh build " + name
		if a.Docker != nil || a.Custom == nil || a.Custom.BuildCommand != want || (a.Context != "" && a.Context != ".") {
			t.Errorf("kind profile: artifact %s: want context . and the custom builder %q, got docker %+v custom %+v", a.Image, want, a.Docker, a.Custom)
		}
	}
	if !slices.Equal(base, kind) {
		t.Errorf("kind profile builds %v, the configuration %v: the same images, in the same order", kind, base)
	}
	rel, baseRel := oneRelease(t, k), oneRelease(t, s)
	if rel.Namespace != devNamespace || rel.Namespace == baseRel.Namespace {
		t.Errorf("kind profile: namespace %q, want %q (its own, not %q)", rel.Namespace, devNamespace, baseRel.Namespace)
	}
	if rel.CreateNamespace == nil || !*rel.CreateNamespace {
		t.Error("kind profile: the release must create its namespace")
	}
	if rel.Name != baseRel.Name || rel.ChartPath != baseRel.ChartPath {
		t.Errorf("kind profile: release %s of %s, want %s of %s", rel.Name, rel.ChartPath, baseRel.Name, baseRel.ChartPath)
	}
	wantValues := append(slices.Clone(baseRel.ValuesFiles), ChartDir+"/values-kind.yaml")
	if !slices.Equal(rel.ValuesFiles, wantValues) {
		t.Errorf("kind profile: valuesFiles %v, want %v", rel.ValuesFiles, wantValues)
	}
	for _, f := range rel.ValuesFiles {
		if _, err := os.Stat(filepath.Join(r, f)); err != nil {
			t.Errorf("kind profile: valuesFiles: %v", err)
		}
	}
	if !reflect.DeepEqual(rel.SetValueTemplates, baseRel.SetValueTemplates) {
		t.Errorf("kind profile: setValueTemplates differ from the configuration's:\n%v\n%v", rel.SetValueTemplates, baseRel.SetValueTemplates)
	}
	if t.Failed() {
		return
	}
	m := renderAsSkaffold(t, k, rel, false)
	nodePort := false
	for _, svc := range m.Services() {
		nodePort = nodePort || (svc.Name == rel.Name+"-gateway" && svc.Spec.Type == "NodePort")
	}
	if !nodePort {
		t.Errorf("kind profile: the gateway's Service %s-gateway is not a NodePort", rel.Name)
	}
	checkForward(t, k, rel, m)
}

// goListed is what `go list` tells of one package.
type goListed struct {
	Dir        string
	GoFiles    []string
	EmbedFiles []string
	Module     *struct{ GoMod string }
}

// depsOf lists, relative to the root, every file inside the repository that the binary of
// pkg (a directory relative to the root) is built from: the Go and embedded files of the
// packages it imports and the go.mod and go.sum of their modules.
func depsOf(t *testing.T, r, pkg string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-json=Dir,GoFiles,EmbedFiles,Module,Standard", "./"+pkg)
	cmd.Dir = r
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list -deps ./%s: %v\n%s", pkg, err, stderr.String())
	}
	set := map[string]bool{}
	rel := func(p string) (string, bool) {
		x, err := filepath.Rel(r, p)
		if err != nil || x == ".." || strings.HasPrefix(x, "../") || strings.HasPrefix(x, ".cache/") {
			return "", false
		}
		return filepath.ToSlash(x), true
	}
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var p goListed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list -deps ./%s: %v", pkg, err)
		}
		dir, ok := rel(p.Dir)
		if !ok {
			continue
		}
		for _, f := range append(p.GoFiles, p.EmbedFiles...) {
			set[dir+"/"+f] = true
		}
		if p.Module != nil && p.Module.GoMod != "" {
			if mod, ok := rel(p.Module.GoMod); ok {
				set[mod] = true
				if _, err := os.Stat(filepath.Join(r, strings.TrimSuffix(mod, ".mod")+".sum")); err == nil {
					set[strings.TrimSuffix(mod, ".mod")+".sum"] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// watched reports whether skaffold watches file for an artifact with these dependencies:
// it lies in (or is) one of the paths and matches none of the ignore patterns.
func watched(dep *SkaffoldCustomDependency, file string) bool {
	in := slices.ContainsFunc(dep.Paths, func(p string) bool { return file == p || strings.HasPrefix(file, p+"/") })
	return in && !slices.ContainsFunc(dep.Ignore, func(g string) bool { return MatchGlob(g, file) })
}

// TestSkaffoldKindDependencies: skaffold rebuilds an image of the kind profile when, and
// only when, something it is built from changes: every file of every package inside the
// repository its binary imports (`go list -deps`: Go and embedded files, go.mod and
// go.sum), the workspace files, its Dockerfile and the image mechanism (images.sh,
// rootfs.sh, the stand-in base images' Dockerfiles); not the other
// deployables' own directories (a change to one service rebuilds that service alone),
// nor tests.
func TestSkaffoldKindDependencies(t *testing.T) {
	r := root(t)
	k, err := loadSkaffold(t, r).WithProfile(kindProfile)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Deployables(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != len(k.Build.Artifacts) {
		t.Fatalf("%d deployables, %d artifacts in the kind profile", len(ds), len(k.Build.Artifacts))
	}
	for _, d := range ds {
		i := slices.IndexFunc(k.Build.Artifacts, func(a SkaffoldArtifact) bool { return a.Image == "customerapi/"+d.Name })
		if i < 0 || k.Build.Artifacts[i].Custom == nil || k.Build.Artifacts[i].Custom.Dependencies == nil {
			t.Errorf("%s: no custom artifact with dependencies in the kind profile", d.Name)
			continue
		}
		dep := k.Build.Artifacts[i].Custom.Dependencies
		for _, p := range dep.Paths {
			// Plain paths (checked here as skaffold expands them): skaffold refuses a path
			// that matches nothing.
			if strings.ContainsAny(p, "*?[") {
				t.Errorf("%s: dependency %q: use plain paths (the check does not expand globs)", d.Name, p)
			}
			if _, err := os.Stat(filepath.Join(r, p)); err != nil {
				t.Errorf("%s: dependency %q: %v", d.Name, p, err)
			}
			for _, other := range ds {
				if other.Name != d.Name && (p == other.Package || strings.HasPrefix(other.Package, p+"/") || p == ".") {
					t.Errorf("%s: dependency %q holds %s's package: a change to %s would rebuild %s", d.Name, p, other.Name, other.Name, d.Name)
				}
			}
		}
		files := depsOf(t, r, d.Package)
		if !slices.Contains(files, d.Package+"/main.go") {
			t.Fatalf("%s: go list -deps does not list %s/main.go: %v", d.Name, d.Package, files)
		}
		// The image mechanism: images.sh, the root file systems and the stand-in base images.
		standins, err := filepath.Glob(filepath.Join(r, DockerDir, "local", "*.Dockerfile"))
		if err != nil || len(standins) == 0 {
			t.Fatalf("no stand-in base images' Dockerfiles in %s/local (%v)", DockerDir, err)
		}
		files = append(files, "go.work", "go.work.sum", DockerfilePath(d.Name), "deploy/images/images.sh", "deploy/images/rootfs.sh")
		for _, f := range standins {
			rel, _ := filepath.Rel(r, f)
			files = append(files, filepath.ToSlash(rel))
		}
		for _, f := range files {
			if !watched(dep, f) {
				t.Errorf("%s: %s is built into the image but skaffold does not watch it (paths %v, ignore %v)", d.Name, f, dep.Paths, dep.Ignore)
			}
		}
		test := d.Package + "/main_test.go"
		if watched(dep, test) || watched(dep, d.Package+"/internal/x/testdata/a.go") {
			t.Errorf("%s: tests and testdata must not trigger a rebuild (ignore %v)", d.Name, dep.Ignore)
		}
	}
}

// TestMatchGlob: the doublestar matching of skaffold's ignore patterns.
func TestMatchGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"**/*_test.go", "gateway/main_test.go", true},
		{"**/*_test.go", "main_test.go", true},
		{"**/*_test.go", "gateway/internal/docs/docs_test.go", true},
		{"**/*_test.go", "gateway/internal/docs/docs.go", false},
		{"**/testdata/**", "libs/x/testdata/a/b.json", true},
		{"**/testdata/**", "libs/x/testdata", true},
		{"**/testdata/**", "libs/x/testdatax/a", false},
		{"gateway/*.go", "gateway/main.go", true},
		{"gateway/*.go", "gateway/internal/main.go", false},
	} {
		if got := MatchGlob(c.pattern, c.name); got != c.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// TestSkaffoldAppliesTheKindProfileAsChecked: skaffold itself (SKAFFOLD, from `make
// skaffold`; `make test-devloop` sets it) resolves the kind profile to the configuration
// the checks above read through WithProfile.
func TestSkaffoldAppliesTheKindProfileAsChecked(t *testing.T) {
	// The Makefile exports SKAFFOLD, the path make skaffold builds, whether it is built or not.
	bin := os.Getenv("SKAFFOLD")
	if bin == "" {
		t.Skip("SKAFFOLD is not set (make skaffold builds it; make test-devloop sets it)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("skaffold is not built yet (make skaffold): %v", err)
	}
	r := root(t)
	k, err := loadSkaffold(t, r).WithProfile(kindProfile)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	global := filepath.Join(home, "skaffold-config.yaml")
	if err := os.WriteFile(global, []byte("global:\n  collect-metrics: false\n  update-check: false\nkubeContexts: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "diagnose", "--yaml-only", "-p", kindProfile, "--config", global,
		"--update-check=false", "--interactive=false")
	cmd.Dir = r
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+filepath.Join(home, "kubeconfig"), "SKAFFOLD_UPDATE_CHECK=false")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("skaffold diagnose: %v\n%s", err, stderr.String())
	}
	// diagnose makes the configuration's paths absolute: back to the root's relative ones.
	out := bytes.ReplaceAll(stdout.Bytes(), []byte(r+"/"), nil)
	out = bytes.ReplaceAll(out, []byte(r), []byte("."))
	var got Skaffold
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatalf("skaffold diagnose's output: %v\n%s", err, stdout.String())
	}
	type view struct {
		Artifacts []SkaffoldArtifact
		Push      *bool
		Context   string
		Releases  []SkaffoldRelease
		Forwards  []SkaffoldForward
	}
	project := func(s *Skaffold) view {
		v := view{Context: s.Deploy.KubeContext}
		for _, f := range s.PortForward {
			if f.Address == "" {
				f.Address = "127.0.0.1" // skaffold's default, written out
			}
			v.Forwards = append(v.Forwards, f)
		}
		for _, a := range s.Build.Artifacts {
			a.Context = "." // skaffold writes the default out
			v.Artifacts = append(v.Artifacts, a)
		}
		if s.Build.Local != nil {
			v.Push = s.Build.Local.Push
		}
		if s.Deploy.Helm != nil {
			v.Releases = s.Deploy.Helm.Releases
		}
		return v
	}
	if want, have := project(k), project(&got); !reflect.DeepEqual(want, have) {
		w, _ := yaml.Marshal(want)
		h, _ := yaml.Marshal(have)
		t.Errorf("skaffold resolves the kind profile differently from the checks:\nchecks:\n%s\nskaffold:\n%s", w, h)
	}
}
