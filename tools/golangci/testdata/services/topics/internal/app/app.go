// Package app breaks the rule on purpose: a use case imports an adapter.
package app

import _ "github.com/customerapi/platform/services/topics/internal/adapters"
