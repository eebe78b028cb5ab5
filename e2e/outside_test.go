package e2e

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The clients used from another project, exactly as docs/clients.md ("Using the clients
// from your own project") says: a throwaway project in a temporary folder outside the
// repository builds against the client the documented way, then creates three topics
// and lists them two at a time with the client's iterator against the running system.
// Each failure names the documented step that broke.

// outsideDoc is where the steps are documented, for the failure messages.
const outsideDoc = `docs/clients.md, "Using the clients from your own project"`

// outsideGoMain is the Go project's program: three topics created, then listed with the
// generated iterator in pages of two.
const outsideGoMain = `package main

import (
	"context"
	"fmt"
	"os"

	customerapi "github.com/customerapi/platform/clients/go"
)

func main() {
	ctx := context.Background()
	api, err := customerapi.New(os.Getenv("CUSTOMER_API_BASE_URL"), os.Getenv("CUSTOMER_API_KEY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "new client:", err)
		os.Exit(1)
	}
	for i := range 3 {
		r, err := api.CreateTopicWithResponse(ctx, nil, customerapi.TopicCreate{Title: fmt.Sprintf("Outside %d", i)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "create a topic:", err)
			os.Exit(1)
		}
		fmt.Println("created", r.JSON201.TopicId)
	}
	limit, n := 2, 0
	for topic, err := range api.ListTopicsAll(ctx, &customerapi.ListTopicsParams{Limit: &limit}) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "list topics:", err)
			os.Exit(1)
		}
		fmt.Println("listed", topic.TopicId)
		n++
	}
	fmt.Println("topics:", n)
}
`

// outsideNodeMain is the Node project's program: the same, with paginate.
const outsideNodeMain = `import { CustomerAPI, paginate } from "@customerapi/client";

const api = new CustomerAPI({ baseUrl: process.env.CUSTOMER_API_BASE_URL, apiKey: process.env.CUSTOMER_API_KEY });
for (let i = 0; i < 3; i++) {
  const topic = await api.post("/v0/topics", { body: { title: "Outside " + i } });
  console.log("created", topic.topicId);
}
let n = 0;
for await (const topic of paginate((cursor) => api.get("/v0/topics", { query: { limit: 2, cursor } }))) {
  console.log("listed", topic.topicId);
  n++;
}
console.log("topics:", n);
`

func TestGoClientFromOutside(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	clientDir := filepath.Join(root, "clients", "go")
	goVersion, err := goDirective(filepath.Join(clientDir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	dir := outsideDir(t, root)
	// Offline from the module cache (which holds every dependency); no go.work, no
	// toolchain switch, no checksum database (the cache was verified when filled).
	env := []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOSUMDB=off", "GOTOOLCHAIN=local"}

	mod := fmt.Sprintf("module example.com/outside\n\ngo %s\n", goVersion)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	outsideStep(t, "go mod edit -replace", dir, env, "go", "mod", "edit", "-replace", "github.com/customerapi/platform/clients/go="+clientDir)
	outsideStep(t, "go get", dir, env, "go", "get", "github.com/customerapi/platform/clients/go")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(outsideGoMain), 0o644); err != nil {
		t.Fatal(err)
	}
	outsideStep(t, "go mod tidy", dir, env, "go", "mod", "tidy")
	outsideStep(t, "go build", dir, env, "go", "build", "-o", "outside", ".")
	out := outsideStep(t, "run the program built against the Go client", dir,
		[]string{"CUSTOMER_API_BASE_URL=" + sys.base, "CUSTOMER_API_KEY=" + newKey(t, nil)}, filepath.Join(dir, "outside"))
	checkOutsideRun(t, "the Go program (ListTopicsAll)", out)
}

func TestTypeScriptClientFromOutside(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkgDir := filepath.Join(root, "clients", "typescript")
	_, errBuilt := os.Stat(filepath.Join(pkgDir, "dist", "src", "index.js"))
	_, errNode := exec.LookPath("node")
	_, errNpm := exec.LookPath("npm")
	if err := errors.Join(errBuilt, errNode, errNpm); err != nil {
		if os.Getenv("E2E_REQUIRE_TS") != "" {
			t.Fatalf("the TypeScript client is not built (make ts-client) or node/npm is missing: %v", err)
		}
		t.Skip("the TypeScript client is not built: make ts-client")
	}
	var pkg struct{ Name, Version string }
	if b, err := os.ReadFile(filepath.Join(pkgDir, "package.json")); err != nil || json.Unmarshal(b, &pkg) != nil {
		t.Fatalf("read clients/typescript/package.json: %v", err)
	}
	// No registry: npm works from its cache only and installs nothing but the tarball.
	env := []string{"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false"}

	packDir := outsideDir(t, root)
	outsideStep(t, "npm pack", pkgDir, env, "npm", "pack", "--offline", "--ignore-scripts", "--pack-destination", packDir)
	tarball := filepath.Join(packDir, fmt.Sprintf("customerapi-client-%s.tgz", pkg.Version))
	files, err := tarballFiles(tarball)
	if err != nil {
		t.Fatalf("step %q (%s): %v", "npm pack", outsideDoc, err)
	}
	for _, want := range []string{"package/package.json", "package/dist/src/index.js", "package/dist/src/index.d.ts",
		"package/dist/src/webhooks.js", "package/dist/src/webhooks.d.ts"} {
		if !slices.Contains(files, want) {
			t.Errorf("step %q (%s): the tarball lacks %s (it has %v)", "npm pack", outsideDoc, want, files)
		}
	}
	for _, f := range files {
		if strings.HasPrefix(f, "package/dist/test/") || strings.HasPrefix(f, "package/node_modules/") {
			t.Errorf("step %q (%s): the tarball carries %s", "npm pack", outsideDoc, f)
		}
	}

	dir := outsideDir(t, root)
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type":"module"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outsideStep(t, "npm install <tarball>", dir, env, "npm", "install", "--offline", "--no-audit", "--no-fund", tarball)
	// Nothing but the client itself: it needs no dev dependency, and the optional peer
	// dependency (standardwebhooks, for the webhooks module only) is not pulled in.
	installed, err := filepath.Glob(filepath.Join(dir, "node_modules", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range installed {
		if name := filepath.Base(p); name != "@customerapi" && name != ".package-lock.json" {
			t.Errorf("step %q (%s): npm installed %s besides the client", "npm install <tarball>", outsideDoc, name)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "outside.mjs"), []byte(outsideNodeMain), 0o644); err != nil {
		t.Fatal(err)
	}
	out := outsideStep(t, "node (import @customerapi/client)", dir,
		[]string{"CUSTOMER_API_BASE_URL=" + sys.base, "CUSTOMER_API_KEY=" + newKey(t, nil)}, "node", "outside.mjs")
	checkOutsideRun(t, "the Node program (paginate)", out)
}

// outsideDir is a new temporary folder, refused when it lies inside the repository (a
// project there could resolve the client through the repository's go.work or files).
func outsideDir(t *testing.T, root string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	if rel, err := filepath.Rel(realRoot, dir); err == nil && !strings.HasPrefix(rel, "..") {
		t.Fatalf("the throwaway project's folder %s is inside the repository %s: point TMPDIR elsewhere", dir, root)
	}
	return dir
}

// outsideStep runs one documented step in dir with the environment plus env, failing the
// test with the step's name and output when it fails.
func outsideStep(t *testing.T, step, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("step %q (%s) failed in %s: %v\n$ %s %s\n%s", step, outsideDoc, dir, err, name, strings.Join(args, " "), out)
	}
	return string(out)
}

// checkOutsideRun checks a program's output: each created topic listed once, and the
// count it printed equal to what it listed (a fresh tenant has no other topics).
func checkOutsideRun(t *testing.T, what, out string) {
	t.Helper()
	created := regexp.MustCompile(`(?m)^created (\S+)$`).FindAllStringSubmatch(out, -1)
	listed := regexp.MustCompile(`(?m)^listed (\S+)$`).FindAllStringSubmatch(out, -1)
	seen := map[string]int{}
	for _, l := range listed {
		seen[l[1]]++
	}
	ok := len(created) == 3 && len(listed) == 3 && strings.Contains(out, "\ntopics: 3\n")
	for _, c := range created {
		ok = ok && seen[c[1]] == 1
	}
	if !ok {
		t.Fatalf("%s: want 3 topics created and each listed once across two pages (\"topics: 3\"), got:\n%s", what, out)
	}
}

// goDirective is the go line of a go.mod (e.g. 1.26.0).
func goDirective(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s has no go line", gomod)
	}
	return string(m[1]), nil
}

// tarballFiles lists the files of a .tgz.
func tarballFiles(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open the packed tarball: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var files []string
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		files = append(files, h.Name)
	}
}
