// Package domain breaks the rule on purpose: it imports the use cases.
package domain

import _ "github.com/customerapi/platform/services/topics/internal/app"
