package docs

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// CodeSample is one entry of an operation's x-codeSamples, the extension Redoc shows as
// a tab per language next to the operation.
type CodeSample struct {
	Lang   string `json:"lang"`
	Label  string `json:"label"`
	Source string `json:"source"`
}

// AddCodeSamples sets x-codeSamples on every operation of doc from samples (JSON:
// operationId to its samples, api.CodeSamples), with sampleBase, the address the samples
// call, replaced by baseURL, the one this server is reached at. An operation without
// samples, or samples of an operation the document lacks, is an error: the generated
// file is stale.
func AddCodeSamples(doc *openapi3.T, samples []byte, sampleBase, baseURL string) error {
	var byOp map[string][]CodeSample
	if err := json.Unmarshal(samples, &byOp); err != nil {
		return fmt.Errorf("code samples: %w", err)
	}
	baseURL = strings.TrimSuffix(baseURL, "/")
	seen := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			list, ok := byOp[op.OperationID]
			if !ok {
				return fmt.Errorf("code samples: none for %s %s (%s): run make clients", method, path, op.OperationID)
			}
			out := make([]CodeSample, len(list))
			for i, s := range list {
				s.Source = strings.ReplaceAll(s.Source, sampleBase, baseURL)
				out[i] = s
			}
			if op.Extensions == nil {
				op.Extensions = map[string]any{}
			}
			op.Extensions["x-codeSamples"] = out
			seen++
		}
	}
	if seen != len(byOp) {
		return fmt.Errorf("code samples: %d operations have samples, the document has %d: run make clients", len(byOp), seen)
	}
	return nil
}
