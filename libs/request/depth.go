package request

import (
	"strconv"

	"github.com/customerapi/platform/libs/apierror"
)

// MaxJSONDepth is the deepest nesting of objects and arrays a JSON body may have, the
// body's own object counting as level 1. The deepest shape the document defines is a
// session's formSubmission.fields (8 levels from it, 10 in the body); free-form
// payloads such as a person log's may use the rest.
const MaxJSONDepth = 64

// jsonTooDeep reports whether body nests objects and arrays deeper than limit. It is one
// pass over the bytes without allocating, so a body nested thousands deep is refused
// before a parser spends recursion on it. Brackets inside strings do not count; a body
// that closes more than it opened is left for the parser to refuse.
func jsonTooDeep(body []byte, limit int) bool {
	depth := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			i = stringEnd(body, i+1)
		case '{', '[':
			depth++
			if depth > limit {
				return true
			}
		case '}', ']':
			depth--
			if depth < 0 {
				return false // malformed from here on: the parser stops at this byte
			}
		}
	}
	return false
}

// stringEnd returns the index of the quote that closes the string whose content starts
// at i (len(body) when it is unterminated), skipping escaped characters.
func stringEnd(body []byte, i int) int {
	for ; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++ // the escaped byte, a quote or a backslash included, cannot close the string
		case '"':
			return i
		}
	}
	return len(body)
}

// checkDepth refuses a body nested deeper than MaxJSONDepth with 400 too_big.
func checkDepth(body []byte) *apierror.Error {
	if !jsonTooDeep(body, MaxJSONDepth) {
		return nil
	}
	return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "too_big", Path: []any{},
		Message: "JSON nests objects and arrays more than " + strconv.Itoa(MaxJSONDepth) + " levels deep"})
}
