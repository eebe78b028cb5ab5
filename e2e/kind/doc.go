// Package kind holds the checks that need the platform running in a real cluster, with
// real pods (make test-kind, deploy/kind/test-kind.sh): faults on its pods under load
// (a service's pod and the PostgreSQL pod deleted under writes, the gateway rolled by
// `helm upgrade` to a new image tag under reads), its NetworkPolicies enforced by the
// cluster's CNI, and `helm upgrade` and `helm rollback` rolling real pods.
//
// The faults are held to the rules of the process-level fault tests (package
// e2e/faultload): every answer a 201 (or 200) or a 503 in the envelope, never a 500, and
// every acknowledged submission's form.submitted and form.enriched at the tenant's
// webhook receiver. Each prints one line starting with "FAULT " with its numbers.
//
// The tests skip unless KIND_NAMESPACE is set. They read:
//
//	E2E_BASE_URL, E2E_ADMIN_URL, E2E_ADMIN_TOKEN  the gateway and its admin API, as for e2e/
//	E2E_RECEIVER_HOST   an address of this host the cluster's pods reach (webhook receivers)
//	KIND_NAMESPACE, KIND_RELEASE, KIND_CHART       the release and the chart it came from
//	KUBECTL, HELM       the binaries (KUBECONFIG points them at the cluster)
//	KIND_ROLL_TAG       an image tag of the gateway loaded in the cluster, other than the
//	                    installed one, for the rolling upgrade under reads
package kind
