// Package dispatch is a top-level package outside the five layers: tools/golangci/layout.sh
// names its folder. Its imports alone break no depguard rule.
package dispatch

import _ "github.com/customerapi/platform/services/topics/internal/domain"
