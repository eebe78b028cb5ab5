package request

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
)

// Document judges requests by the OpenAPI document: each request is matched to its
// operation and its path and query parameters and JSON body are validated against the
// operation's schemas before a handler runs. It is the one place where the rules the
// document states (types, required fields, bounds, enums, patterns, unknown fields) are
// enforced; handlers decode what it let through and check only what the document cannot
// say (rules across fields, or about state).
type Document struct {
	doc     *openapi3.T
	byVerb  map[string][]operation
	options *openapi3filter.Options
}

// operation is one operation of the document with its path split into segments.
type operation struct {
	segments []string // a parameter segment is "{name}"
	route    *routers.Route
	literals int // how many segments are literal: the more, the more specific
}

// LoadDocument parses and validates an OpenAPI document (YAML or JSON).
func LoadDocument(ctx context.Context, spec []byte) (*Document, error) {
	doc, err := openapi3.NewLoader().LoadFromData(spec)
	if err != nil {
		return nil, fmt.Errorf("request: load the document: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("request: the document is invalid: %w", err)
	}
	d := &Document{doc: doc, byVerb: map[string][]operation{}, options: &openapi3filter.Options{
		MultiError:         true,
		ExcludeRequestBody: true, // judged by validateBody from one parse
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		// A default stands in for an absent parameter; set in the validator, it would
		// also stand in for an empty one (`limit=`) and hide that empty value.
		SkipSettingDefaults: true,
	}}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			segs := strings.Split(strings.Trim(path, "/"), "/")
			literals := 0
			for _, s := range segs {
				if !strings.HasPrefix(s, "{") {
					literals++
				}
			}
			d.byVerb[method] = append(d.byVerb[method], operation{segments: segs, literals: literals,
				route: &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: op}})
		}
	}
	for _, ops := range d.byVerb {
		// The most literal path first: /v0/assets/trash before /v0/assets/{asset_id}.
		slices.SortStableFunc(ops, func(a, b operation) int { return b.literals - a.literals })
	}
	return d, nil
}

// find returns the operation of method at path (as the client sent it, escaped) and its
// decoded path parameters. HEAD falls back to GET, as the server answers it.
func (d *Document) find(method, path string) (*routers.Route, map[string]string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, m := range []string{method, http.MethodGet} {
		for _, op := range d.byVerb[m] {
			if params, ok := op.match(segs); ok {
				return op.route, params, true
			}
		}
		if method != http.MethodHead {
			break
		}
	}
	return nil, nil, false
}

func (op operation) match(segs []string) (map[string]string, bool) {
	if len(segs) != len(op.segments) {
		return nil, false
	}
	var params map[string]string
	for i, s := range op.segments {
		if name, ok := strings.CutPrefix(s, "{"); ok {
			v, err := url.PathUnescape(segs[i])
			if err != nil || v == "" {
				return nil, false
			}
			if params == nil {
				params = map[string]string{}
			}
			params[strings.TrimSuffix(name, "}")] = v
			continue
		}
		if s != segs[i] {
			return nil, false
		}
	}
	return params, true
}

// Middleware validates every request whose path and method the document has; other
// requests pass on (the router answers them 404 or 405). A request that breaks the
// document gets 400 VALIDATION_ERROR listing every issue with its place.
func (d *Document) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		route, params, ok := d.find(c.Method(), string(c.Request().URI().PathOriginal()))
		if !ok {
			return c.Next()
		}
		if err := d.Validate(c, route, params); err != nil {
			return err
		}
		return c.Next()
	}
}

// Validate checks one request against its operation.
//
// nolint: contextcheck // c.UserContext() is the request's own context, not a new one.
func (d *Document) Validate(c *fiber.Ctx, route *routers.Route, params map[string]string) *apierror.Error {
	var bodyErr *apierror.Error
	if rb := route.Operation.RequestBody; rb != nil && isJSONContent(rb.Value) {
		bodyErr = d.validateBody(c, rb.Value)
	}
	if len(route.Operation.Parameters) == 0 && len(route.PathItem.Parameters) == 0 {
		// Nothing left for the validator: it checks only declared parameters (undeclared
		// query parameters pass), the body is judged above, and authentication is a no-op.
		return bodyErr
	}
	req := &http.Request{Method: route.Method, Header: http.Header{},
		URL: &url.URL{Path: string(c.Request().URI().Path()), RawQuery: string(c.Request().URI().QueryString())}}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: d.options}
	paramErr := openapi3filter.ValidateRequest(c.UserContext(), in)
	switch {
	case paramErr == nil:
		return bodyErr
	case bodyErr == nil:
		return toValidationError(paramErr, nil)
	}
	// Both: the parameters' issues first, then the body's.
	e := toValidationError(paramErr, nil)
	e.Details = append(e.Details.([]apierror.FieldIssues), bodyErr.Details.([]apierror.FieldIssues)...)
	return e
}

// validateBody parses a JSON body once and walks it against the operation's schema.
func (d *Document) validateBody(c *fiber.Ctx, rb *openapi3.RequestBody) *apierror.Error {
	body, e := readBody(c)
	if e != nil {
		return e
	}
	if e := checkRawJSON(body); e != nil {
		return e
	}
	if len(bytes.TrimSpace(body)) == 0 {
		switch {
		case len(body) > 0:
			// White space is not a JSON text, also where the body may be left out: a
			// client that sends one sends a broken body, not none.
			return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_json", Path: []any{},
				Message: "Malformed JSON: the body holds only white space; send a JSON object or no body"})
		case !rb.Required:
			return nil
		}
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type", Path: []any{},
			Message: "Required: this operation takes a JSON body"})
	}
	if ct := c.Get(fiber.HeaderContentType); ct != "" && !isJSONType(ct) {
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type",
			Message: "Content-Type must be application/json", Path: []any{}})
	}
	generic, perr := parseBody(body)
	if perr != nil {
		return perr
	}
	schema := jsonSchema(rb)
	if schema == nil {
		return nil
	}
	err := schema.VisitJSON(generic, openapi3.VisitAsRequest(), openapi3.MultiErrors())
	if err == nil {
		return nil
	}
	return toValidationError(&openapi3filter.RequestError{RequestBody: rb, Err: err}, generic)
}

// readBody returns the request body. A server that streams request bodies (uploads)
// hands a JSON body over unread: it is read here up to the limit and no further, so a
// huge body is refused without being held, and kept for the handler to decode.
func readBody(c *fiber.Ctx) ([]byte, *apierror.Error) {
	req := c.Request()
	if !req.IsBodyStream() {
		return req.Body(), nil
	}
	if req.Header.ContentLength() > apierror.MaxBodyBytes {
		return nil, bodyTooBig()
	}
	body, err := io.ReadAll(io.LimitReader(req.BodyStream(), apierror.MaxBodyBytes+1))
	if err != nil {
		return nil, apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_json", Path: []any{},
			Message: "The request body could not be read"})
	}
	if len(body) > apierror.MaxBodyBytes {
		return nil, bodyTooBig()
	}
	req.SetBodyRaw(body)
	return body, nil
}

func bodyTooBig() *apierror.Error {
	return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "too_big",
		Message: "request body exceeds the limit of 1 MiB", Path: []any{}})
}

// jsonSchema is the schema of a request body's JSON content.
func jsonSchema(rb *openapi3.RequestBody) *openapi3.Schema {
	for mt, content := range rb.Content {
		if isJSONType(mt) && content.Schema != nil {
			return content.Schema.Value
		}
	}
	return nil
}

// isJSONContent reports whether a request body is JSON (multipart uploads are judged by
// their handler, which streams them).
func isJSONContent(rb *openapi3.RequestBody) bool {
	for mt := range rb.Content {
		if isJSONType(mt) {
			return true
		}
	}
	return false
}

// checkRawJSON refuses a body that is too large, not UTF-8 or nested too deep before it
// is parsed.
func checkRawJSON(body []byte) *apierror.Error {
	if len(body) > apierror.MaxBodyBytes {
		return bodyTooBig()
	}
	if !utf8.Valid(body) {
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_json", Path: []any{},
			Message: "Request body is not valid UTF-8"})
	}
	return checkDepth(body)
}

// toValidationError turns the validator's errors into the envelope's issues, each with
// the request part it concerns (path, query, body) and the place within it.
func toValidationError(err error, body any) *apierror.Error {
	byField := map[string][]apierror.Issue{}
	var order []string
	add := func(field string, is apierror.Issue) {
		if _, ok := byField[field]; !ok {
			order = append(order, field)
		}
		byField[field] = append(byField[field], is)
	}
	var walk func(err error)
	walk = func(err error) {
		// Only this level: errors.As would find a MultiError inside a SchemaError's cause
		// and report its issues at the wrong place.
		if me, ok := err.(openapi3.MultiError); ok { //nolint:errorlint // see above
			for _, e := range me {
				walk(e)
			}
			return
		}
		var re *openapi3filter.RequestError
		if !errors.As(err, &re) {
			add(apierror.FieldBody, apierror.Issue{Code: "custom", Message: err.Error(), Path: []any{}})
			return
		}
		field, prefix := apierror.FieldBody, []any{}
		if p := re.Parameter; p != nil {
			field, prefix = apierror.FieldQuery, []any{p.Name}
			if p.In == openapi3.ParameterInPath {
				field = apierror.FieldPath
			}
		}
		for _, is := range requestIssues(re, body, prefix) {
			add(field, is)
		}
	}
	walk(err)
	var details []apierror.FieldIssues
	omitted := 0
	listed := 0
	for _, f := range order {
		issues := byField[f]
		if room := apierror.MaxIssues - listed; len(issues) > room {
			omitted += len(issues) - room
			issues = issues[:room]
		}
		listed += len(issues)
		if len(issues) > 0 {
			details = append(details, apierror.FieldIssues{Field: f, Issues: issues})
		}
	}
	e := apierror.ValidationOmitting(details[0].Field, omitted, details[0].Issues...)
	if len(details) > 1 {
		e.Details = append(e.Details.([]apierror.FieldIssues), details[1:]...)
	}
	return e
}

// requestIssues lists the issues inside one RequestError.
func requestIssues(re *openapi3filter.RequestError, body any, prefix []any) []apierror.Issue {
	switch {
	case errors.Is(re.Err, openapi3filter.ErrInvalidRequired):
		if re.Parameter != nil {
			return []apierror.Issue{{Code: "invalid_type", Message: "Required", Path: prefix}}
		}
		return []apierror.Issue{{Code: "invalid_type", Message: "Required: this operation takes a JSON body", Path: prefix}}
	case errors.Is(re.Err, openapi3filter.ErrInvalidEmptyValue):
		return []apierror.Issue{{Code: "too_small", Message: "Must not be empty", Path: prefix}}
	}
	var out []apierror.Issue
	inBody := re.Parameter == nil
	var collect func(err error, prefix []any, at any)
	collect = func(err error, prefix []any, at any) {
		// Only this level: errors.As would find a MultiError inside a SchemaError's cause
		// and report its issues at the wrong place.
		if me, ok := err.(openapi3.MultiError); ok { //nolint:errorlint // see above
			for _, e := range me {
				collect(e, prefix, at)
			}
			return
		}
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			if isCombinator(se.SchemaField) && se.Origin != nil {
				// A value that breaks an allOf breaks one of its branches (a nullable
				// object is written `nullable: true, allOf: [$ref]`): report the
				// branches' own issues at their places (marked from the root), not
				// "doesn't match all schemas" at the parent.
				collect(se.Origin, prefix, at)
				return
			}
			out = append(out, schemaIssue(se, at, prefix, inBody))
			return
		}
		var pe *openapi3filter.ParseError
		if errors.As(err, &pe) {
			out = append(out, apierror.Issue{Code: "invalid_type", Message: parseMessage(pe), Path: prefix})
			return
		}
		if err != nil {
			out = append(out, apierror.Issue{Code: "invalid_type", Message: err.Error(), Path: prefix})
		}
	}
	collect(re.Err, prefix, body)
	if len(out) == 0 {
		msg := re.Reason
		if msg == "" {
			msg = re.Error()
		}
		out = append(out, apierror.Issue{Code: "invalid_type", Message: msg, Path: prefix})
	}
	return out
}

func parseMessage(pe *openapi3filter.ParseError) string {
	if pe.Reason != "" {
		return pe.Reason
	}
	return "Invalid value"
}

// schemaIssue is one schema violation as an issue: its code from the schema keyword
// that failed, its path within the body (array indexes as numbers).
func schemaIssue(se *openapi3.SchemaError, at any, prefix []any, inBody bool) apierror.Issue {
	path := append(slices.Clone(prefix), typedPath(se.JSONPointer(), at, inBody)...)
	msg := se.Reason
	code := "custom"
	switch se.SchemaField {
	case "type", "nullable":
		code, msg = "invalid_type", typeMessage(se)
	case "required":
		code, msg = "invalid_type", "Required"
	case "properties", "additionalProperties":
		code = "unrecognized_keys"
		if k, ok := unsupportedKey(se.Reason); ok {
			path = append(path, k)
			msg = fmt.Sprintf("Unrecognized key: %q", k)
		}
	case "enum":
		code = "invalid_enum_value"
		msg = "Invalid enum value. Expected " + enumList(se.Schema.Enum)
	case "maxLength", "maxItems", "maximum", "exclusiveMaximum", "maxProperties":
		code = "too_big"
	case "minLength", "minItems", "minimum", "exclusiveMinimum", "minProperties":
		code = "too_small"
	case "pattern", "format":
		code = "invalid_string"
	case "oneOf", "anyOf", "allOf", "not":
		code = "invalid_union"
	}
	return apierror.Issue{Code: code, Message: upperFirst(msg), Path: path}
}

// typedPath turns a JSON pointer into an issue path, giving array indexes as numbers
// (found by walking the body when the pointer is into it).
func typedPath(pointer []string, body any, inBody bool) []any {
	out := make([]any, 0, len(pointer))
	cur := body
	for _, p := range pointer {
		switch v := cur.(type) {
		case []any:
			if i, err := strconv.Atoi(p); err == nil && inBody {
				out = append(out, i)
				if i >= 0 && i < len(v) {
					cur = v[i]
				} else {
					cur = nil
				}
				continue
			}
		case map[string]any:
			cur = v[p]
			out = append(out, p)
			continue
		}
		cur = nil
		out = append(out, p)
	}
	return out
}

// isCombinator reports whether a schema keyword combines subschemas.
func isCombinator(field string) bool {
	return field == "allOf" || field == "oneOf" || field == "anyOf"
}

func unsupportedKey(reason string) (string, bool) {
	rest, ok := strings.CutPrefix(reason, "property ")
	if !ok {
		return "", false
	}
	q, _, ok := strings.Cut(rest, " is unsupported")
	if !ok {
		return "", false
	}
	k, err := strconv.Unquote(q)
	return k, err == nil
}

func typeMessage(se *openapi3.SchemaError) string {
	want := "a value of another type"
	if se.Schema != nil && se.Schema.Type != nil && len(*se.Schema.Type) > 0 {
		want = strings.Join(*se.Schema.Type, " or ")
	}
	return fmt.Sprintf("Expected %s, received %s", want, jsonKind(se.Value))
}

func enumList(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		b, _ := json.Marshal(v)
		parts[i] = string(b)
	}
	return strings.Join(parts, " | ")
}

func upperFirst(s string) string {
	if s == "" {
		return "Invalid value"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Decode decodes the JSON body of a request the document has judged (Middleware ran on
// its route) into dst, a pointer to a struct: the document already refused unknown
// fields, wrong types and broken bounds, so this only maps the JSON onto Go values. An
// empty body leaves dst as it is (an optional body that was not sent).
func Decode(c *fiber.Ctx, dst any) error {
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if e := checkDepth(body); e != nil { // also on a route the document does not judge
		return e
	}
	if err := json.Unmarshal(body, dst); err != nil {
		// The document let it through, so the Go type is narrower than the schema.
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type", Path: []any{},
			Message: "the body does not fit the operation: " + err.Error()})
	}
	return nil
}
