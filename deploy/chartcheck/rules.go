package chartcheck

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ComponentLabel names the deployable (or dependency) a pod belongs to.
const ComponentLabel = "app.kubernetes.io/component"

// Rules are the settings the checks compare a manifest with.
type Rules struct {
	// ExternalSecrets are Secrets that exist outside the chart (existingSecret values).
	ExternalSecrets []string
	// MetricsFrom are the peers besides the gateway that may reach a service (scrapers),
	// on its metrics port only.
	MetricsFrom []networkingv1.NetworkPolicyPeer
}

// Check applies every rule to the manifest and returns each violation.
func Check(m *Manifest, r Rules) []error {
	var errs []error
	for _, d := range m.Deployments() {
		errs = append(errs, checkPod("Deployment "+d.Name, d.Spec.Template.Spec, true, nil)...)
		errs = append(errs, checkDeployment(m, d, r)...)
	}
	for _, s := range m.StatefulSets() {
		var claims []string
		for _, c := range s.Spec.VolumeClaimTemplates {
			claims = append(claims, c.Name)
		}
		errs = append(errs, checkPod("StatefulSet "+s.Name, s.Spec.Template.Spec, true, claims)...)
		if !selects(s.Spec.Selector, s.Spec.Template.Labels) {
			errs = append(errs, fmt.Errorf("StatefulSet %s: selector does not match its pods", s.Name))
		}
		if len(policiesFor(m, s.Spec.Template.Labels)) == 0 {
			errs = append(errs, fmt.Errorf("StatefulSet %s: no NetworkPolicy selects its pods", s.Name))
		}
	}
	for _, p := range m.Pods() {
		// One-shot hook pods: hardened like the rest, but probes make no sense for them.
		errs = append(errs, checkPod("Pod "+p.Name, p.Spec, false, nil)...)
	}
	errs = append(errs, checkNetwork(m, r)...)
	return errs
}

// checkPod holds the hardening every pod follows: non-root, seccomp, no service account
// token, and per container resources, a locked-down security context, a pinned image and
// (for long-running containers) liveness and readiness probes. claims are the volumes a
// StatefulSet's volume claim templates add.
func checkPod(what string, spec corev1.PodSpec, probes bool, claims []string) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(what+": "+format, args...)) }
	psc := spec.SecurityContext
	podNonRoot := psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
	if !podNonRoot {
		fail("pod securityContext.runAsNonRoot is not true")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		fail("pod seccompProfile is not RuntimeDefault")
	}
	if psc != nil && psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		fail("pod runs as uid 0")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		fail("automountServiceAccountToken is not false")
	}
	volumes := map[string]bool{}
	for _, c := range claims {
		volumes[c] = true
	}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	type entry struct {
		c    corev1.Container
		init bool
	}
	var all []entry
	for _, c := range spec.InitContainers {
		all = append(all, entry{c, true})
	}
	for _, c := range spec.Containers {
		all = append(all, entry{c, false})
	}
	for _, e := range all {
		c := e.c
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Requests[res]; !ok || q.IsZero() {
				fail("container %s has no %s request", c.Name, res)
			}
			if q, ok := c.Resources.Limits[res]; !ok || q.IsZero() {
				fail("container %s has no %s limit", c.Name, res)
			}
		}
		sc := c.SecurityContext
		if sc == nil {
			fail("container %s has no securityContext", c.Name)
		} else {
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				fail("container %s: allowPrivilegeEscalation is not false", c.Name)
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				fail("container %s: readOnlyRootFilesystem is not true", c.Name)
			}
			if sc.Privileged != nil && *sc.Privileged {
				fail("container %s is privileged", c.Name)
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
				fail("container %s does not drop ALL capabilities", c.Name)
			} else if len(sc.Capabilities.Add) > 0 {
				fail("container %s adds capabilities %v", c.Name, sc.Capabilities.Add)
			}
			if !podNonRoot && (sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) {
				fail("container %s may run as root", c.Name)
			}
			if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
				fail("container %s runs as uid 0", c.Name)
			}
		}
		if _, tag := splitImage(c.Image); tag == "" || tag == "latest" {
			fail("container %s: image %q has no pinned tag", c.Name, c.Image)
		}
		if probes && !e.init && (c.LivenessProbe == nil || c.ReadinessProbe == nil) {
			fail("container %s lacks a liveness or readiness probe", c.Name)
		}
		for _, vm := range c.VolumeMounts {
			if !volumes[vm.Name] {
				fail("container %s mounts unknown volume %s", c.Name, vm.Name)
			}
		}
	}
	return errs
}

// checkDeployment holds the rules of a deployable: /healthz and /readyz probes, a PDB, a
// NetworkPolicy and a Service that select its pods, an HPA that owns the replica count,
// and Secrets that exist.
func checkDeployment(m *Manifest, d *appsv1.Deployment, r Rules) []error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("Deployment "+d.Name+": "+format, args...))
	}
	podLabels := d.Spec.Template.Labels
	if !selects(d.Spec.Selector, podLabels) {
		fail("selector does not match its pods")
	}
	main := d.Spec.Template.Spec.Containers[0]
	if p := main.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		fail("liveness probe is not GET /healthz")
	}
	if p := main.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz/local" {
		fail("readiness probe is not GET /readyz/local")
	}
	pdbs := 0
	for _, p := range m.PDBs() {
		if selects(p.Spec.Selector, podLabels) {
			pdbs++
		}
	}
	if pdbs != 1 {
		fail("%d PodDisruptionBudgets select its pods, want 1", pdbs)
	}
	if len(policiesFor(m, podLabels)) == 0 {
		fail("no NetworkPolicy selects its pods")
	}
	services := 0
	for _, s := range m.Services() {
		if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(podLabels)) {
			services++
		}
	}
	if services == 0 {
		fail("no Service selects its pods")
	}
	for _, h := range m.HPAs() {
		if h.Spec.ScaleTargetRef.Kind == "Deployment" && h.Spec.ScaleTargetRef.Name == d.Name && d.Spec.Replicas != nil {
			fail("has replicas although HorizontalPodAutoscaler %s scales it", h.Name)
		}
	}
	if envValue(main, "ASSETS_STORAGE") == "local" {
		// Files on a pod's own volume are invisible to another replica.
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
			fail("stores files on its own volume (ASSETS_STORAGE=local) but may run more than one replica")
		}
	}
	secrets := map[string]bool{}
	for _, s := range m.Secrets() {
		secrets[s.Name] = true
	}
	for _, s := range r.ExternalSecrets {
		secrets[s] = true
	}
	for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil && !secrets[ef.SecretRef.Name] {
				fail("container %s reads Secret %s, which neither the chart nor the values provide", c.Name, ef.SecretRef.Name)
			}
		}
		for _, ev := range c.Env {
			if ev.ValueFrom != nil && ev.ValueFrom.SecretKeyRef != nil && !secrets[ev.ValueFrom.SecretKeyRef.Name] {
				fail("container %s reads Secret %s, which neither the chart nor the values provide", c.Name, ev.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	return errs
}

// checkNetwork holds the reachability rules: a service's API port only from the gateway,
// its metrics port only from the metrics scrapers (which must never reach the API port:
// whatever reaches it may send tenant headers), the gateway's admin port never open to
// everyone nor on a public Service, and no Service but the gateway's public one other
// than ClusterIP.
func checkNetwork(m *Manifest, r Rules) []error {
	var errs []error
	var gateway *appsv1.Deployment
	for _, d := range m.Deployments() {
		if d.Spec.Template.Labels[ComponentLabel] == "gateway" {
			gateway = d
		}
	}
	if gateway == nil {
		return []error{fmt.Errorf("no gateway Deployment")}
	}
	gwLabels := gateway.Spec.Template.Labels
	for _, d := range m.Deployments() {
		isGateway := d == gateway
		for _, np := range policiesFor(m, d.Spec.Template.Labels) {
			if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
				errs = append(errs, fmt.Errorf("NetworkPolicy %s: does not restrict ingress", np.Name))
			}
			for i, rule := range np.Spec.Ingress {
				if isGateway {
					if coversPort(rule, "admin", 8081) && len(rule.From) == 0 {
						errs = append(errs, fmt.Errorf("NetworkPolicy %s: rule %d opens the gateway's admin port to everyone", np.Name, i))
					}
					continue
				}
				if len(rule.From) == 0 {
					errs = append(errs, fmt.Errorf("NetworkPolicy %s: rule %d admits everyone to %s", np.Name, i, d.Name))
				}
				for _, peer := range rule.From {
					switch {
					case peerIsGateway(peer, gwLabels):
						if !onlyPort(rule, "http", 8080) {
							errs = append(errs, fmt.Errorf("NetworkPolicy %s: rule %d admits the gateway to ports other than http: %v", np.Name, i, rule.Ports))
						}
					case slices.ContainsFunc(r.MetricsFrom, func(p networkingv1.NetworkPolicyPeer) bool { return reflect.DeepEqual(p, peer) }):
						if !onlyPort(rule, "metrics", 9090) {
							errs = append(errs, fmt.Errorf("NetworkPolicy %s: rule %d admits metrics peers to ports other than metrics (%v): "+
								"they must not reach the API port", np.Name, i, rule.Ports))
						}
					default:
						errs = append(errs, fmt.Errorf("NetworkPolicy %s: rule %d admits a peer other than the gateway: %+v", np.Name, i, peer))
					}
				}
			}
		}
	}
	for _, s := range m.Services() {
		public := s.Spec.Type != "" && s.Spec.Type != corev1.ServiceTypeClusterIP
		selectsGateway := len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(gwLabels))
		if public && !selectsGateway {
			errs = append(errs, fmt.Errorf("the Service %s: type %s exposes something other than the gateway", s.Name, s.Spec.Type))
		}
		for _, p := range s.Spec.Ports {
			admin := p.TargetPort.String() == "admin" || p.TargetPort.IntValue() == 8081
			if selectsGateway && admin && public {
				errs = append(errs, fmt.Errorf("the Service %s: exposes the gateway's admin port publicly", s.Name))
			}
			if selectsGateway && admin && strings.HasSuffix(s.Name, "-gateway") {
				errs = append(errs, fmt.Errorf("the Service %s: the public gateway Service carries the admin port", s.Name))
			}
		}
	}
	return errs
}

// Images returns the image repository (without tag or digest) of every Deployment's main
// container, by component.
func Images(m *Manifest) map[string]string {
	out := map[string]string{}
	for _, d := range m.Deployments() {
		repo, _ := splitImage(d.Spec.Template.Spec.Containers[0].Image)
		out[d.Spec.Template.Labels[ComponentLabel]] = repo
	}
	return out
}

// splitImage splits an image reference into repository and tag (or digest).
func splitImage(image string) (repo, tag string) {
	if repo, tag, ok := strings.Cut(image, "@"); ok {
		if j := strings.LastIndex(repo, ":"); j > strings.LastIndex(repo, "/") {
			repo = repo[:j]
		}
		return repo, tag
	}
	if j := strings.LastIndex(image, ":"); j > strings.LastIndex(image, "/") {
		return image[:j], image[j+1:]
	}
	return image, ""
}

func selects(sel *metav1.LabelSelector, podLabels map[string]string) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(labels.Set(podLabels))
}

func policiesFor(m *Manifest, podLabels map[string]string) []*networkingv1.NetworkPolicy {
	var out []*networkingv1.NetworkPolicy
	for _, np := range m.NetworkPolicies() {
		if selects(&np.Spec.PodSelector, podLabels) {
			out = append(out, np)
		}
	}
	return out
}

func peerIsGateway(p networkingv1.NetworkPolicyPeer, gwLabels map[string]string) bool {
	return p.NamespaceSelector == nil && p.IPBlock == nil && selects(p.PodSelector, gwLabels)
}

// onlyPort reports whether a rule admits to the named (or numbered) port and no other.
func onlyPort(rule networkingv1.NetworkPolicyIngressRule, name string, number int) bool {
	for _, p := range rule.Ports {
		if p.Port == nil || p.EndPort != nil || (p.Port.String() != name && p.Port.IntValue() != number) {
			return false
		}
	}
	return len(rule.Ports) > 0
}

func coversPort(rule networkingv1.NetworkPolicyIngressRule, name string, number int) bool {
	if len(rule.Ports) == 0 {
		return true
	}
	for _, p := range rule.Ports {
		if p.Port == nil || p.Port.String() == name || p.Port.IntValue() == number {
			return true
		}
	}
	return false
}

// envValue returns the plain value of a container's environment variable ("" when unset
// or taken from elsewhere).
func envValue(c corev1.Container, name string) string {
	for _, ev := range c.Env {
		if ev.Name == name {
			return ev.Value
		}
	}
	return ""
}
