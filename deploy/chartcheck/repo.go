package chartcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ChartDir is the chart's directory, relative to the repository root.
const ChartDir = "helm/customer-api"

// Root finds the repository root: the nearest directory above the working directory that
// holds go.work.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("chartcheck: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("chartcheck: no go.work above the working directory")
		}
		dir = parent
	}
}

// Deployable is one image and one Deployment: the gateway or a service.
type Deployable struct {
	// Name is the image and component name (gateway, topics, ...).
	Name string
	// Package is the main package's directory relative to the root (gateway, services/topics).
	Package string
}

// Deployables lists the gateway and every directory under services/ that holds a main.go,
// sorted by name with the gateway first.
func Deployables(root string) ([]Deployable, error) {
	out := []Deployable{{Name: "gateway", Package: "gateway"}}
	mains, err := filepath.Glob(filepath.Join(root, "services", "*", "main.go"))
	if err != nil {
		return nil, fmt.Errorf("chartcheck: services: %w", err)
	}
	sort.Strings(mains)
	for _, m := range mains {
		name := filepath.Base(filepath.Dir(m))
		out = append(out, Deployable{Name: name, Package: "services/" + name})
	}
	return out, nil
}

// WorkspaceModules returns the module directories the go.work file uses, relative to the
// root and without the leading "./", in file order.
func WorkspaceModules(root string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		return nil, fmt.Errorf("chartcheck: %w", err)
	}
	var mods []string
	inUse := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "use (":
			inUse = true
		case inUse && line == ")":
			inUse = false
		case inUse && line != "":
			mods = append(mods, strings.TrimPrefix(line, "./"))
		case strings.HasPrefix(line, "use "):
			mods = append(mods, strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, "use ")), "./"))
		}
	}
	return mods, sc.Err()
}
