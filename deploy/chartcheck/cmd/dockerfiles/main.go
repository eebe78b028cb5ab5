// Command dockerfiles regenerates deploy/docker/<deployable>.Dockerfile from
// deploy/docker/Dockerfile.tmpl for the gateway and every service (`make dockerfiles`).
package main

import (
	"fmt"
	"os"

	"github.com/customerapi/platform/deploy/chartcheck"
)

func main() {
	root, err := chartcheck.Root()
	if err == nil {
		err = chartcheck.WriteDockerfiles(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dockerfiles:", err)
		os.Exit(1)
	}
}
