// Package ports breaks the rule on purpose: an HTTP port imports an adapter.
package ports

import _ "github.com/customerapi/platform/services/topics/internal/adapters"
