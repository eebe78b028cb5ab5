package chartcheck

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

// kinds are the object types the chart may render, by apiVersion and kind; anything else
// is an error, so a typo in apiVersion or kind cannot slip through.
var kinds = map[string]func() any{
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Pod":                                  func() any { return &corev1.Pod{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":                     func() any { return &appsv1.StatefulSet{} },
	"autoscaling/v2/HorizontalPodAutoscaler":  func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() any { return &networkingv1.NetworkPolicy{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
	"networking.k8s.io/v1/Ingress":            func() any { return &networkingv1.Ingress{} },
	"gateway.networking.k8s.io/v1/HTTPRoute":  func() any { return &gatewayv1.HTTPRoute{} },
}

// Object is one rendered object, decoded into its Kubernetes API type.
type Object struct {
	Kind string
	Name string
	// Obj is a pointer to the typed object (*appsv1.Deployment, ...).
	Obj any
}

// Manifest is the decoded output of one `helm template`.
type Manifest struct {
	Objects []Object
}

// Deployments returns the rendered Deployments.
func (m *Manifest) Deployments() []*appsv1.Deployment { return all[*appsv1.Deployment](m) }

// StatefulSets returns the rendered StatefulSets.
func (m *Manifest) StatefulSets() []*appsv1.StatefulSet { return all[*appsv1.StatefulSet](m) }

// Services returns the rendered Services.
func (m *Manifest) Services() []*corev1.Service { return all[*corev1.Service](m) }

// Secrets returns the rendered Secrets.
func (m *Manifest) Secrets() []*corev1.Secret { return all[*corev1.Secret](m) }

// Pods returns the rendered bare Pods (the helm test hook).
func (m *Manifest) Pods() []*corev1.Pod { return all[*corev1.Pod](m) }

// PDBs returns the rendered PodDisruptionBudgets.
func (m *Manifest) PDBs() []*policyv1.PodDisruptionBudget {
	return all[*policyv1.PodDisruptionBudget](m)
}

// NetworkPolicies returns the rendered NetworkPolicies.
func (m *Manifest) NetworkPolicies() []*networkingv1.NetworkPolicy {
	return all[*networkingv1.NetworkPolicy](m)
}

// HPAs returns the rendered HorizontalPodAutoscalers.
func (m *Manifest) HPAs() []*autoscalingv2.HorizontalPodAutoscaler {
	return all[*autoscalingv2.HorizontalPodAutoscaler](m)
}

// ServiceMonitors returns the rendered ServiceMonitors.
func (m *Manifest) ServiceMonitors() []*monitoringv1.ServiceMonitor {
	return all[*monitoringv1.ServiceMonitor](m)
}

// PrometheusRules returns the rendered PrometheusRules.
func (m *Manifest) PrometheusRules() []*monitoringv1.PrometheusRule {
	return all[*monitoringv1.PrometheusRule](m)
}

// Ingresses returns the rendered Ingresses.
func (m *Manifest) Ingresses() []*networkingv1.Ingress { return all[*networkingv1.Ingress](m) }

// HTTPRoutes returns the rendered Gateway API HTTPRoutes.
func (m *Manifest) HTTPRoutes() []*gatewayv1.HTTPRoute { return all[*gatewayv1.HTTPRoute](m) }

// ConfigMaps returns the rendered ConfigMaps.
func (m *Manifest) ConfigMaps() []*corev1.ConfigMap { return all[*corev1.ConfigMap](m) }

func all[T any](m *Manifest) []T {
	var out []T
	for _, o := range m.Objects {
		if t, ok := o.Obj.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Decode splits a multi-document YAML stream and decodes each object strictly into its
// Kubernetes API type: an unknown or misspelt field, a duplicate key, a wrong type or an
// unknown kind is an error. Names must be valid DNS names and label values valid.
func Decode(stream []byte) (*Manifest, error) {
	m := &Manifest{}
	seen := map[string]bool{}
	for _, doc := range docSep.Split(string(stream), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("chartcheck: %w in:\n%s", err, doc)
		}
		key := tm.APIVersion + "/" + tm.Kind
		newObj, ok := kinds[key]
		if !ok {
			return nil, fmt.Errorf("chartcheck: unexpected object %s in:\n%s", key, doc)
		}
		obj := newObj()
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("chartcheck: %s: %w in:\n%s", key, err, doc)
		}
		meta := obj.(metav1.Object)
		name := meta.GetName()
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fmt.Errorf("chartcheck: %s %q: %s", tm.Kind, name, strings.Join(errs, "; "))
		}
		if tm.Kind == "Service" {
			if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
				return nil, fmt.Errorf("chartcheck: Service %q: %s", name, strings.Join(errs, "; "))
			}
		}
		for k, v := range meta.GetLabels() {
			if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
				return nil, fmt.Errorf("chartcheck: %s %q label %s=%s: %s", tm.Kind, name, k, v, strings.Join(errs, "; "))
			}
		}
		if seen[tm.Kind+"/"+name] {
			return nil, fmt.Errorf("chartcheck: %s %q rendered twice", tm.Kind, name)
		}
		seen[tm.Kind+"/"+name] = true
		m.Objects = append(m.Objects, Object{Kind: tm.Kind, Name: name, Obj: obj})
	}
	return m, nil
}

func stripComments(doc string) string {
	var b bytes.Buffer
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
