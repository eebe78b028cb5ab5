// Package api holds the OpenAPI document of the Customer API, the contract every service
// and test is checked against.
package api

import _ "embed"

// Spec is the OpenAPI 3 document (YAML).
//
//go:embed openapi.yaml
var Spec []byte

// CodeSamples are the reference's code samples (JSON: operationId to a list of Redoc
// x-codeSamples entries, curl, Go and TypeScript), generated from Spec by
// clients/go/internal/clientgen. They call http://127.0.0.1:25001 (SampleBaseURL).
//
//go:embed codesamples.json
var CodeSamples []byte

// SampleBaseURL is the address CodeSamples call, for a server to put its own in its place.
const SampleBaseURL = "http://127.0.0.1:25001"
