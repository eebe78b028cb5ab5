// Package api holds the OpenAPI document of the Customer API, the contract every service
// and test is checked against.
package api

import _ "embed"

// Spec is the OpenAPI 3 document (YAML).
//
//go:embed openapi.yaml
var Spec []byte
