package e2e

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoRoot is the repository's root: the folder of the go.work the tests run in.
func RepoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil {
		return "", err
	}
	w := strings.TrimSpace(string(out))
	if w == "" || w == "off" {
		return "", errors.New("e2e: run inside the repository's go.work")
	}
	return filepath.Dir(w), nil
}
