package chartcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// KubeVersion is the Kubernetes version the chart is rendered and linted for (a helm built
// with `go install` would otherwise assume its own default, v1.20).
const KubeVersion = "1.34.0"

// Helm runs the helm binary against the chart.
type Helm struct {
	// Bin is the helm executable.
	Bin string
	// Root is the repository root.
	Root string
}

// FindHelm looks for helm in $HELM, then the versions `make helm` installs under
// .cache/bin, then PATH.
func FindHelm(root string) (string, error) {
	if h := os.Getenv("HELM"); h != "" {
		if _, err := os.Stat(h); err != nil {
			return "", fmt.Errorf("chartcheck: HELM=%s: %w", h, err)
		}
		return h, nil
	}
	local, _ := filepath.Glob(filepath.Join(root, ".cache", "bin", "helm-*", "helm"))
	if len(local) > 0 {
		sort.Strings(local)
		return local[len(local)-1], nil
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p, nil
	}
	return "", errors.New("chartcheck: helm not found: run `make helm` (or set HELM)")
}

// Run runs helm with args in the repository root and returns its standard output; the
// error carries standard error.
func (h Helm) Run(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.Bin, args...)
	cmd.Dir = h.Root
	// A private home: no repositories, plugins or caches of the user's leak in.
	home, err := os.MkdirTemp("", "chartcheck-helm-")
	if err != nil {
		return nil, fmt.Errorf("chartcheck: %w", err)
	}
	defer os.RemoveAll(home)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data", "KUBECONFIG="+home+"/kubeconfig")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Lint runs `helm lint --strict` with the given values files.
func (h Helm) Lint(valuesFiles ...string) ([]byte, error) {
	args := []string{"lint", "--strict", "--kube-version", KubeVersion, ChartDir}
	for _, f := range valuesFiles {
		args = append(args, "-f", f)
	}
	return h.Run(args...)
}

// Template renders the chart as release `release` in namespace `namespace` with the given
// values files and --set values, and decodes every object strictly.
func (h Helm) Template(release, namespace string, valuesFiles []string, set ...string) (*Manifest, error) {
	args := []string{"template", release, ChartDir, "--namespace", namespace, "--kube-version", KubeVersion}
	for _, f := range valuesFiles {
		args = append(args, "-f", f)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := h.Run(args...)
	if err != nil {
		return nil, err
	}
	return Decode(out)
}
