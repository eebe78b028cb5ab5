package chartcheck

import (
	"fmt"
	"os"
	"path"
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

// SkaffoldArtifact is one image skaffold builds, with one of the builders.
type SkaffoldArtifact struct {
	Image   string          `json:"image"`
	Context string          `json:"context,omitempty"`
	Docker  *SkaffoldDocker `json:"docker,omitempty"`
	Custom  *SkaffoldCustom `json:"custom,omitempty"`
}

// SkaffoldCustom is the custom builder of an artifact: a command that builds the image
// named by $IMAGE.
type SkaffoldCustom struct {
	BuildCommand string                    `json:"buildCommand"`
	Dependencies *SkaffoldCustomDependency `json:"dependencies,omitempty"`
}

// SkaffoldCustomDependency is what skaffold watches for a custom artifact: the files
// under Paths (paths or globs relative to the context), less those matching Ignore
// (doublestar globs).
type SkaffoldCustomDependency struct {
	Paths  []string `json:"paths,omitempty"`
	Ignore []string `json:"ignore,omitempty"`
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
	// TolerateFailuresUntilDeadline keeps the status check waiting through container
	// exits until the deadline.
	TolerateFailuresUntilDeadline bool `json:"tolerateFailuresUntilDeadline,omitempty"`
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

// SkaffoldProfile is a named variation of the configuration: the sections it sets
// override the configuration's (see WithProfile), then its patches apply.
type SkaffoldProfile struct {
	Name        string               `json:"name"`
	Activation  []SkaffoldActivation `json:"activation,omitempty"`
	Build       *SkaffoldBuild       `json:"build,omitempty"`
	Deploy      *SkaffoldDeploy      `json:"deploy,omitempty"`
	PortForward []SkaffoldForward    `json:"portForward,omitempty"`
	Patches     []SkaffoldPatch      `json:"patches,omitempty"`
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

// Profile returns the profile called name, or nil.
func (s *Skaffold) Profile(name string) *SkaffoldProfile {
	for i := range s.Profiles {
		if s.Profiles[i].Name == name {
			return &s.Profiles[i]
		}
	}
	return nil
}

// WithProfile returns the configuration as skaffold runs it with `-p name`, overlaying the
// profile's sections the way skaffold does (pkg/skaffold/schema/profiles.go): a list the
// profile sets (artifacts, releases, port-forwards) replaces the configuration's whole, as
// does a builder (build.local) or deployer (deploy.helm) it sets; a scalar it sets
// replaces the configuration's; what it leaves unset is kept. Profiles with patches are
// refused: their effect is not mirrored here, so the checks would not see it.
func (s *Skaffold) WithProfile(name string) (*Skaffold, error) {
	p := s.Profile(name)
	if p == nil {
		return nil, fmt.Errorf("chartcheck: skaffold.yaml: no profile %q", name)
	}
	if len(p.Patches) > 0 {
		return nil, fmt.Errorf("chartcheck: skaffold.yaml: profile %q uses patches, which these checks do not apply: override whole sections instead", name)
	}
	out := *s
	out.Profiles = nil
	if b := p.Build; b != nil {
		if b.TagPolicy != nil {
			out.Build.TagPolicy = b.TagPolicy
		}
		if b.Local != nil {
			out.Build.Local = b.Local
		}
		if len(b.Artifacts) > 0 {
			out.Build.Artifacts = b.Artifacts
		}
	}
	if d := p.Deploy; d != nil {
		if d.Helm != nil {
			out.Deploy.Helm = d.Helm
		}
		if d.StatusCheckDeadlineSeconds != 0 {
			out.Deploy.StatusCheckDeadlineSeconds = d.StatusCheckDeadlineSeconds
		}
		if d.KubeContext != "" {
			out.Deploy.KubeContext = d.KubeContext
		}
	}
	if len(p.PortForward) > 0 {
		out.PortForward = p.PortForward
	}
	return &out, nil
}

// MatchGlob reports whether a slash-separated path matches a doublestar glob as skaffold
// matches its ignore patterns: "**" stands for any number of path elements (none
// included), every other element is matched with path.Match.
func MatchGlob(pattern, name string) bool {
	return matchElems(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchElems(pat, name []string) bool {
	if len(pat) == 0 {
		return len(name) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(name); i++ {
			if matchElems(pat[1:], name[i:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	ok, err := path.Match(pat[0], name[0])
	return err == nil && ok && matchElems(pat[1:], name[1:])
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
