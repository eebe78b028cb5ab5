// Package request decodes and validates request bodies and parameters strictly, producing
// the specification's VALIDATION_ERROR details on any problem.
package request

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/customerapi/platform/libs/apierror"
)

// checker walks a generic JSON value against a Go type and records problems that plain
// encoding/json would report one at a time or not at all: unknown keys, wrong JSON types,
// nulls where no null is allowed, non-integers for integers and malformed timestamps.
type checker struct {
	issues []apierror.Issue
	// omitted counts the issues found after apierror.MaxIssues were recorded.
	omitted int
	present map[string]bool // paths (joined) present in the body, for "required" messages
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	rawType     = reflect.TypeFor[json.RawMessage]()
	numberType  = reflect.TypeFor[json.Number]()
	maxSafeInt  = int64(1<<53 - 1)
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

func (ch *checker) add(code, msg string, path []any) {
	if len(ch.issues) >= apierror.MaxIssues {
		ch.omitted++
		return
	}
	ch.issues = append(ch.issues, apierror.Issue{Code: code, Message: msg, Path: clonePath(path)})
}

func clonePath(p []any) []any {
	out := make([]any, len(p))
	copy(out, p)
	return out
}

func pathKey(p []any) string {
	var b strings.Builder
	for i, s := range p {
		if i > 0 {
			b.WriteByte('.')
		}
		fmt.Fprint(&b, s)
	}
	return b.String()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number, float64, float32, int, int64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func (ch *checker) typeMismatch(expected string, v any, path []any) {
	got := jsonKind(v)
	ch.add("invalid_type", fmt.Sprintf("Expected %s, received %s", expected, got), path)
}

// check validates value v found at path against Go type t.
func (ch *checker) check(t reflect.Type, v any, path []any) {
	ch.present[pathKey(path)] = true
	if t.Implements(nullableType) {
		if v == nil {
			return
		}
		elem := reflect.Zero(t).Interface().(nullable).nullableElem()
		ch.check(elem, v, path)
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawType || t.Kind() == reflect.Interface:
		return
	case t == timeType:
		s, ok := v.(string)
		if !ok {
			ch.typeMismatch("string", v, path)
			return
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			ch.add("invalid_string", "Invalid datetime: expected an RFC 3339 date-time", path)
		}
		return
	case t == numberType:
		if _, ok := v.(json.Number); !ok {
			ch.typeMismatch("number", v, path)
		}
		return
	}
	if v == nil {
		ch.typeMismatch(expectedName(t), v, path)
		return
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			ch.typeMismatch("string", v, path)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			ch.typeMismatch("boolean", v, path)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			ch.typeMismatch("integer", v, path)
			return
		}
		ch.checkInteger(t, n, path)
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			ch.typeMismatch("number", v, path)
			return
		}
		if f, err := n.Float64(); err != nil || math.IsInf(f, 0) {
			ch.add("too_big", "Number is out of range", path)
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			ch.typeMismatch("array", v, path)
			return
		}
		for i, e := range arr {
			ch.check(t.Elem(), e, append(path, i))
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			ch.typeMismatch("object", v, path)
			return
		}
		for k, e := range obj {
			ch.check(t.Elem(), e, append(path, k))
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			ch.typeMismatch("object", v, path)
			return
		}
		ch.checkStruct(t, obj, path)
	}
}

func (ch *checker) checkInteger(t reflect.Type, n json.Number, path []any) {
	s := n.String()
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsInf(f, 0) || math.Abs(f) > float64(maxSafeInt) {
			ch.add("too_big", "Number must be a safe integer (at most 9007199254740991 in magnitude)", path)
			return
		}
		// Fractions and exponents (1.5, 2.0, 1e3) are not integer literals.
		ch.add("invalid_type", "Expected integer, received float", path)
		return
	}
	if i > maxSafeInt || i < -maxSafeInt {
		ch.add("too_big", "Number must be a safe integer (at most 9007199254740991 in magnitude)", path)
		return
	}
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 && i < 0 {
		ch.add("too_small", "Number must be greater than or equal to 0", path)
	}
}

func (ch *checker) checkStruct(t reflect.Type, obj map[string]any, path []any) {
	fields := structFields(t)
	var unknown []string
	for k, e := range obj {
		f, ok := fields[k]
		if !ok {
			unknown = append(unknown, k)
			continue
		}
		ch.check(f.Type, e, append(path, k))
	}
	for _, k := range sortedStrings(unknown) {
		ch.add("unrecognized_keys", fmt.Sprintf("Unrecognized key: %q", k), append(path, k))
	}
}

func expectedName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "object"
}

// structFields maps JSON names to struct fields, following embedded structs.
func structFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, ok := jsonName(f)
		if !ok {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && !et.Implements(unmarshaler) {
				for k, v := range structFields(et) {
					out[k] = v
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

// jsonName returns the field's JSON name ("" for untagged embedded structs) and whether
// the field takes part in JSON at all.
func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() && !f.Anonymous {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" && !f.Anonymous {
		return f.Name, true
	}
	return name, true
}

// sortedStrings sorts s in place and returns it (in O(n log n): a 1 MiB body can hold a
// hundred thousand unknown keys, which an insertion sort took 9 s of CPU to order).
func sortedStrings(s []string) []string {
	slices.Sort(s)
	return s
}

// parseBody parses a JSON body into a generic value, keeping numbers exact, and refuses
// malformed JSON, trailing data and text holding NUL as one body error.
func parseBody(body []byte) (any, *apierror.Error) {
	generic, issue := parseGeneric(body)
	if issue != nil {
		return nil, apierror.Validation(apierror.FieldBody, *issue)
	}
	// A NUL can reach a parsed string only as the escape \u0000 (a raw control character
	// is malformed JSON), so a body without that text needs no walk.
	if !bytes.Contains(body, nulEscape) {
		return generic, nil
	}
	if path := nulPath(generic, []any{}); path != nil {
		return nil, apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_string",
			Message: "Text must not contain the NUL character (\\u0000)", Path: path})
	}
	return generic, nil
}

// parseGeneric parses body into a generic value, keeping numbers exact. It reports
// malformed JSON and trailing data as one issue.
func parseGeneric(body []byte) (any, *apierror.Issue) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &apierror.Issue{Code: "invalid_json", Message: "Malformed JSON: " + jsonErrorText(err), Path: []any{}}
	}
	if dec.More() {
		return nil, &apierror.Issue{Code: "invalid_json", Message: "Malformed JSON: unexpected data after the top-level value", Path: []any{}}
	}
	// Decode stops after the first value; any further non-space token is an error.
	if _, err := dec.Token(); err == nil {
		return nil, &apierror.Issue{Code: "invalid_json", Message: "Malformed JSON: unexpected data after the top-level value", Path: []any{}}
	}
	return v, nil
}

func jsonErrorText(err error) string {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	}
	return err.Error()
}

var nulEscape = []byte(`\u0000`)

// nulPath returns the path of the first string (value or object key) in v that holds a
// NUL character, which PostgreSQL cannot store in text or jsonb, or nil when there is none.
func nulPath(v any, path []any) []any {
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			return clonePath(path)
		}
	case []any:
		for i, e := range v {
			if p := nulPath(e, append(path, i)); p != nil {
				return p
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.IndexByte(k, 0) >= 0 {
				return clonePath(append(path, k))
			}
			if p := nulPath(e, append(path, k)); p != nil {
				return p
			}
		}
	}
	return nil
}
