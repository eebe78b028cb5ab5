package chartcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// SkaffoldAPIVersion is the skaffold.yaml schema version the repository uses (skaffold v2).
const SkaffoldAPIVersion = "skaffold/v4beta11"

// Skaffold mirrors the part of skaffold's configuration schema (v4beta11) that
// skaffold.yaml uses, with skaffold's own field names; it is decoded strictly, so a field
// outside this part, or a misspelt one, fails the check.
type Skaffold struct {
	APIVersion  string            `json:"apiVersion"`
	Kind        string            `json:"kind"`
	Metadata    SkaffoldMetadata  `json:"metadata"`
	Build       SkaffoldBuild     `json:"build"`
	Deploy      SkaffoldDeploy    `json:"deploy"`
	PortForward []SkaffoldForward `json:"portForward,omitempty"`
	Profiles    []SkaffoldProfile `json:"profiles,omitempty"`
}

// SkaffoldMetadata names the configuration.
type SkaffoldMetadata struct {
	Name string `json:"name"`
}

// SkaffoldBuild is the build section.
type SkaffoldBuild struct {
	TagPolicy *SkaffoldTagPolicy `json:"tagPolicy,omitempty"`
	Local     *SkaffoldLocal     `json:"local,omitempty"`
	Artifacts []SkaffoldArtifact `json:"artifacts"`
}

// SkaffoldTagPolicy is how images are tagged.
type SkaffoldTagPolicy struct {
	GitCommit *SkaffoldGitTagger `json:"gitCommit,omitempty"`
}

// SkaffoldGitTagger tags images from the git commit.
type SkaffoldGitTagger struct {
	Variant string `json:"variant,omitempty"`
}

// SkaffoldLocal is the local (Docker daemon) builder.
type SkaffoldLocal struct {
	Push        *bool `json:"push,omitempty"`
	UseBuildkit *bool `json:"useBuildkit,omitempty"`
	Concurrency *int  `json:"concurrency,omitempty"`
}

// SkaffoldArtifact is one image skaffold builds.
type SkaffoldArtifact struct {
	Image   string          `json:"image"`
	Context string          `json:"context,omitempty"`
	Docker  *SkaffoldDocker `json:"docker,omitempty"`
}

// SkaffoldDocker is the Dockerfile builder of an artifact.
type SkaffoldDocker struct {
	Dockerfile string            `json:"dockerfile"`
	BuildArgs  map[string]string `json:"buildArgs,omitempty"`
}

// SkaffoldDeploy is the deploy section.
type SkaffoldDeploy struct {
	Helm                       *SkaffoldHelm `json:"helm,omitempty"`
	StatusCheckDeadlineSeconds int           `json:"statusCheckDeadlineSeconds,omitempty"`
	KubeContext                string        `json:"kubeContext,omitempty"`
}

// SkaffoldHelm is the Helm deployer.
type SkaffoldHelm struct {
	Releases []SkaffoldRelease `json:"releases"`
}

// SkaffoldRelease is one Helm release.
type SkaffoldRelease struct {
	Name              string            `json:"name"`
	ChartPath         string            `json:"chartPath"`
	ValuesFiles       []string          `json:"valuesFiles,omitempty"`
	Namespace         string            `json:"namespace,omitempty"`
	CreateNamespace   *bool             `json:"createNamespace,omitempty"`
	Wait              bool              `json:"wait,omitempty"`
	SetValues         map[string]string `json:"setValues,omitempty"`
	SetValueTemplates map[string]string `json:"setValueTemplates,omitempty"`
}

// SkaffoldForward is one port-forward.
type SkaffoldForward struct {
	ResourceType string `json:"resourceType"`
	ResourceName string `json:"resourceName"`
	Namespace    string `json:"namespace,omitempty"`
	Port         int    `json:"port"`
	Address      string `json:"address,omitempty"`
	LocalPort    int    `json:"localPort,omitempty"`
}

// SkaffoldProfile is a named variation of the configuration.
type SkaffoldProfile struct {
	Name       string               `json:"name"`
	Activation []SkaffoldActivation `json:"activation,omitempty"`
	Patches    []SkaffoldPatch      `json:"patches,omitempty"`
}

// SkaffoldActivation activates a profile automatically.
type SkaffoldActivation struct {
	KubeContext string `json:"kubeContext,omitempty"`
	Env         string `json:"env,omitempty"`
	Command     string `json:"command,omitempty"`
}

// SkaffoldPatch is a JSON patch operation a profile applies.
type SkaffoldPatch struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
	From  string `json:"from,omitempty"`
}

// LoadSkaffold reads and strictly decodes skaffold.yaml at the root.
func LoadSkaffold(root string) (*Skaffold, error) {
	b, err := os.ReadFile(filepath.Join(root, "skaffold.yaml"))
	if err != nil {
		return nil, fmt.Errorf("chartcheck: %w", err)
	}
	var s Skaffold
	if err := yaml.UnmarshalStrict(b, &s); err != nil {
		return nil, fmt.Errorf("chartcheck: skaffold.yaml: %w", err)
	}
	if s.APIVersion != SkaffoldAPIVersion || s.Kind != "Config" {
		return nil, fmt.Errorf("chartcheck: skaffold.yaml: apiVersion %q kind %q, want %s Config", s.APIVersion, s.Kind, SkaffoldAPIVersion)
	}
	return &s, nil
}

// ImageKey is how skaffold names an image in template variables: IMAGE_REPO_<key>, with
// every character other than a letter, digit or underscore replaced by an underscore.
func ImageKey(image string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, image)
}
