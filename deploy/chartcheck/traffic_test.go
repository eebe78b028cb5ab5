package chartcheck

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// gatewayService returns the gateway's public Service of a rendered manifest.
func gatewayService(t *testing.T, m *Manifest) *corev1.Service {
	t.Helper()
	for _, s := range m.Services() {
		if s.Name == release+"-gateway" {
			return s
		}
	}
	t.Fatal("no gateway Service rendered")
	return nil
}

// TestGatewayTrafficPolicy: gateway.service.externalTrafficPolicy renders on the gateway's
// public Service (Kubernetes' default, Cluster, when unset, as before), is refused with a
// ClusterIP Service, and the production example's LoadBalancer keeps client addresses
// (Local, for the per-client download cap) and serves TLS only.
func TestGatewayTrafficPolicy(t *testing.T) {
	h := helm(t)
	m, err := h.Template(release, namespace, []string{devValues})
	if err != nil {
		t.Fatal(err)
	}
	if s := gatewayService(t, m); s.Spec.ExternalTrafficPolicy != "" || s.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("default values: type %s, externalTrafficPolicy %q; want ClusterIP and none, as before", s.Spec.Type, s.Spec.ExternalTrafficPolicy)
	}
	for _, policy := range []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyLocal, corev1.ServiceExternalTrafficPolicyCluster} {
		m, err := h.Template(release, namespace, []string{devValues}, "gateway.service.type=NodePort",
			"gateway.service.externalTrafficPolicy="+string(policy))
		if err != nil {
			t.Fatal(err)
		}
		if s := gatewayService(t, m); s.Spec.ExternalTrafficPolicy != policy || s.Spec.Type != corev1.ServiceTypeNodePort {
			t.Errorf("externalTrafficPolicy=%s: rendered type %s, policy %q", policy, s.Spec.Type, s.Spec.ExternalTrafficPolicy)
		}
		for _, s := range m.Services() {
			if s.Name != release+"-gateway" && s.Spec.ExternalTrafficPolicy != "" {
				t.Errorf("Service %s got externalTrafficPolicy %q: only the gateway's public Service takes it", s.Name, s.Spec.ExternalTrafficPolicy)
			}
		}
	}
	if _, err := h.Template(release, namespace, []string{devValues}, "gateway.service.externalTrafficPolicy=Local"); err == nil ||
		!strings.Contains(err.Error(), "externalTrafficPolicy needs gateway.service.type LoadBalancer or NodePort") {
		t.Errorf("externalTrafficPolicy on a ClusterIP Service: %v; want a refusal naming the rule", err)
	}
	if _, err := h.Template(release, namespace, []string{devValues}, "gateway.service.type=LoadBalancer",
		"gateway.service.externalTrafficPolicy=Sometimes"); err == nil || !strings.Contains(err.Error(), "externalTrafficPolicy") {
		t.Errorf("an unknown externalTrafficPolicy: %v; want the schema to refuse it", err)
	}

	prod, err := h.Template(release, namespace, []string{prodValues})
	if err != nil {
		t.Fatal(err)
	}
	s := gatewayService(t, prod)
	if s.Spec.Type != corev1.ServiceTypeLoadBalancer || s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		t.Errorf("production example: type %s, externalTrafficPolicy %q; want a LoadBalancer with Local (client addresses for the per-client cap)",
			s.Spec.Type, s.Spec.ExternalTrafficPolicy)
	}
	if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 443 {
		t.Errorf("production example's ports %v: want 443 alone, no plain HTTP", s.Spec.Ports)
	}
	a := s.Annotations
	if a["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] == "" || a["service.beta.kubernetes.io/aws-load-balancer-ssl-ports"] != "443" ||
		a["service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"] != "instance" {
		t.Errorf("production example's annotations %v: want TLS terminated on 443 with instance targets (which keep client addresses)", a)
	}
}

// TestWebhookSecretsKeys: the webhooks service's chart-made Secret holds
// WEBHOOK_SECRETS_KEYS from secrets.webhookSecretsKeys, no other deployable's does, and a
// chart-made webhooks Secret without it fails to render, naming the setting.
func TestWebhookSecretsKeys(t *testing.T) {
	h := helm(t)
	for _, variant := range []struct {
		name   string
		values []string
		set    []string
	}{{"development", []string{devValues}, nil}, {"production", []string{prodValues}, inlineSecrets}} {
		m, err := h.Template(release, namespace, variant.values, variant.set...)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range m.Secrets() {
			got := s.StringData["WEBHOOK_SECRETS_KEYS"]
			if (s.Name == release+"-webhooks") != (got != "") {
				t.Errorf("%s: Secret %s holds WEBHOOK_SECRETS_KEYS %q; want it in the webhooks Secret only", variant.name, s.Name, got)
			}
		}
	}
	_, err := h.Template(release, namespace, []string{devValues}, "secrets.webhookSecretsKeys=")
	if err == nil || !strings.Contains(err.Error(), "secrets.webhookSecretsKeys is required (or webhooks.existingSecret)") {
		t.Errorf("no webhookSecretsKeys: %v; want a refusal naming the setting", err)
	}
	if _, err := h.Template(release, namespace, []string{devValues}, "secrets.webhookSecretsKeys=k1:short"); err == nil ||
		!strings.Contains(err.Error(), "webhookSecretsKeys") {
		t.Errorf("a malformed webhookSecretsKeys: %v; want the schema to refuse it", err)
	}
}
