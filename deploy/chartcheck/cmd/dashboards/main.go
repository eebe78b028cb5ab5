// Command dashboards regenerates the chart's Grafana dashboards,
// helm/customer-api/dashboards/*.json, from their definitions in deploy/chartcheck
// (`make dashboards`).
package main

import (
	"fmt"
	"os"

	"github.com/customerapi/platform/deploy/chartcheck"
)

func main() {
	root, err := chartcheck.Root()
	if err == nil {
		err = chartcheck.WriteDashboards(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboards:", err)
		os.Exit(1)
	}
}
