package chartcheck

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDevBrokerDockerfile: the development broker's Dockerfile is the template's, as the
// deployables' are (`make dockerfiles` writes it), and builds its own command.
func TestDevBrokerDockerfile(t *testing.T) {
	r := root(t)
	want, err := RenderDockerfile(r, DevBroker)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(r, DevBrokerDockerfile))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is missing or out of date: run `make dockerfiles` (%v)", DevBrokerDockerfile, err)
	}
	if !bytes.Contains(got, []byte("./cmd/devbroker\n")) || !bytes.Contains(got, []byte("EXPOSE 9092\n")) {
		t.Errorf("%s does not build ./cmd/devbroker or expose 9092", DevBrokerDockerfile)
	}
	if _, err := os.Stat(filepath.Join(r, DevBroker.Package, "main.go")); err != nil {
		t.Error(err)
	}
}

// TestKindValuesUseTheLocalImages: a kind install (values-dev.yaml + values-kind.yaml)
// runs only the images `make images` builds (deploy/images/images.sh list), never pulls,
// and runs the development broker with its advertised host and a data directory on its
// volume; the development values alone keep Apache Kafka's image and scripts.
func TestKindValuesUseTheLocalImages(t *testing.T) {
	h := helm(t)
	r := root(t)
	m, err := h.Template("kind", "customer-api", []string{ChartDir + "/values-dev.yaml", ChartDir + "/values-kind.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Deployables(r)
	if err != nil {
		t.Fatal(err)
	}
	// What images.sh list prints: the deployables and the three dependencies.
	allowed := []string{"customerapi/devbroker:dev", "customerapi/postgresql:dev", "customerapi/busybox:dev"}
	for _, d := range ds {
		allowed = append(allowed, "customerapi/"+d.Name+":dev")
	}
	n := 0
	check := func(owner, image, policy string) {
		n++
		if !slices.Contains(allowed, image) {
			t.Errorf("%s runs %s, which make images does not build", owner, image)
		}
		if policy != "Never" {
			t.Errorf("%s: imagePullPolicy %s, want Never (nothing is pulled on kind)", owner, policy)
		}
	}
	for _, d := range m.Deployments() {
		for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
			check(d.Name+"/"+c.Name, c.Image, string(c.ImagePullPolicy))
		}
	}
	var broker bool
	for _, s := range m.StatefulSets() {
		for _, c := range append(s.Spec.Template.Spec.InitContainers, s.Spec.Template.Spec.Containers...) {
			check(s.Name+"/"+c.Name, c.Image, string(c.ImagePullPolicy))
			if c.Image != "customerapi/devbroker:dev" {
				continue
			}
			broker = true
			args := strings.Join(c.Args, " ")
			if len(c.Command) > 0 || !strings.Contains(args, "-listen 0.0.0.0:9092") || !strings.Contains(args, "-data /var/lib/kafka/data/") {
				t.Errorf("devbroker: command %q args %q: want the image's entrypoint listening on 0.0.0.0:9092 with its data on the volume", c.Command, args)
			}
			var adv string
			for _, e := range c.Env {
				if e.Name == "DEVBROKER_ADVERTISED_HOST" {
					adv = e.Value
				}
			}
			if want := s.Name + "-0." + s.Spec.ServiceName + ".customer-api.svc"; adv != want {
				t.Errorf("devbroker advertises %q, want the pod's stable name %s", adv, want)
			}
		}
	}
	for _, p := range m.Pods() {
		for _, c := range p.Spec.Containers {
			check(p.Name+"/"+c.Name, c.Image, string(c.ImagePullPolicy))
		}
	}
	if !broker || n < len(ds)+3 {
		t.Errorf("%d containers checked, development broker found: %v", n, broker)
	}
	for _, cm := range m.ConfigMaps() {
		if strings.HasSuffix(cm.Name, "-kafka") {
			t.Errorf("ConfigMap %s (Apache Kafka's server.properties) rendered for the development broker", cm.Name)
		}
	}

	// The development values alone: Apache Kafka as before.
	m, err = h.Template("dev", "customer-api", []string{ChartDir + "/values-dev.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	apache := false
	for _, s := range m.StatefulSets() {
		for _, c := range s.Spec.Template.Spec.Containers {
			apache = apache || strings.HasPrefix(c.Image, "apache/kafka:") && len(c.Command) > 0 &&
				strings.Contains(strings.Join(c.Command, " "), "kafka-server-start.sh")
		}
	}
	if !apache {
		t.Error("values-dev.yaml alone no longer runs Apache Kafka's image with its scripts")
	}
	if _, err := h.Template("bad", "customer-api", []string{ChartDir + "/values-dev.yaml"}, "kafka.implementation=redpanda"); err == nil {
		t.Error("kafka.implementation=redpanda renders")
	}
}
