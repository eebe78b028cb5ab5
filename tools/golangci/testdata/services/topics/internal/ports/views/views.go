// Package views is a ports sub-package. No finding here.
package views

import _ "github.com/customerapi/platform/services/topics/internal/domain"
