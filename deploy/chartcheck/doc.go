// Package chartcheck holds the checks of the Kubernetes delivery that run without Docker or
// a cluster: helm lint and helm template of the chart with the development and the
// production values, every rendered object decoded strictly against the Kubernetes API
// types, the hardening and wiring rules every workload must follow, skaffold.yaml checked
// against the chart, and the Dockerfiles parsed and checked for a non-root final stage.
package chartcheck
