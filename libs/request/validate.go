package request

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-playground/validator/v10"
	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
)

// KebabPattern is the spec's pattern for log sources and types.
var KebabPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Validator decodes and validates request bodies. It is safe for concurrent use; make one
// per process and share it.
type Validator struct {
	v *validator.Validate
}

// NewValidator returns a Validator with the project's custom rules registered:
// kebab (the log source/type pattern) and httpurl (absolute http or https URL).
func NewValidator() *Validator {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, ok := jsonName(f)
		if !ok {
			return ""
		}
		return name
	})
	v.RegisterCustomTypeFunc(validatedValue,
		Nullable[string]{}, Nullable[int64]{}, Nullable[bool]{}, Nullable[float64]{},
		Nullable[[]string]{}, Nullable[map[string]any]{})
	_ = v.RegisterValidation("kebab", func(fl validator.FieldLevel) bool {
		return KebabPattern.MatchString(fl.Field().String())
	})
	_ = v.RegisterValidation("httpurl", func(fl validator.FieldLevel) bool {
		return IsHTTPURL(fl.Field().String())
	})
	return &Validator{v: v}
}

// Register adds a custom validation tag.
func (v *Validator) Register(tag string, fn func(value reflect.Value) bool) error {
	return v.v.RegisterValidation(tag, func(fl validator.FieldLevel) bool { return fn(fl.Field()) })
}

// Body decodes the JSON body of c into dst (a pointer to a struct) strictly and validates
// it. An empty body counts as {}. The returned error is an *apierror.Error.
func (v *Validator) Body(c *fiber.Ctx, dst any) error {
	if ct := c.Get(fiber.HeaderContentType); ct != "" && len(c.Body()) > 0 && !isJSONType(ct) {
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type",
			Message: "Content-Type must be application/json", Path: []any{}})
	}
	if err := v.DecodeJSON(c.Body(), dst); err != nil {
		return err
	}
	return nil
}

func isJSONType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// DecodeJSON decodes body into dst strictly and validates it. It returns nil or an
// *apierror.Error listing every issue found.
func (v *Validator) DecodeJSON(body []byte, dst any) *apierror.Error {
	if e := checkRawJSON(body); e != nil {
		return e
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	generic, perr := parseBody(body)
	if perr != nil {
		return perr
	}
	ch := &checker{present: map[string]bool{}}
	ch.check(reflect.TypeOf(dst).Elem(), generic, []any{})
	if len(ch.issues) > 0 {
		return apierror.ValidationOmitting(apierror.FieldBody, ch.omitted, ch.issues...)
	}
	if err := json.Unmarshal(body, dst); err != nil {
		// The checker accepted the shape; a remaining failure is a value a type rejects.
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type",
			Message: err.Error(), Path: []any{}})
	}
	return v.Struct(apierror.FieldBody, dst, ch.present)
}

// Struct validates s by its `validate` tags and maps failures to issues of the given
// request part. present (optional) holds the paths found in the input so that a missing
// field reads "Required" and an empty one reads as too short.
func (v *Validator) Struct(field string, s any, present map[string]bool) *apierror.Error {
	err := v.v.Struct(s)
	if err == nil {
		return nil
	}
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return apierror.Validation(field, apierror.Issue{Code: "custom", Message: err.Error(), Path: []any{}})
	}
	issues := make([]apierror.Issue, 0, len(verrs))
	for _, fe := range verrs {
		issues = append(issues, toIssue(fe, present))
	}
	return apierror.Validation(field, issues...)
}

// toIssue turns one validator failure into a spec issue with a zod-like code and message.
func toIssue(fe validator.FieldError, present map[string]bool) apierror.Issue {
	path := namespacePath(fe.Namespace())
	kind := fe.Kind()
	param := fe.Param()
	iss := apierror.Issue{Path: path, Code: "custom", Message: fmt.Sprintf("failed the %q rule", fe.Tag())}
	switch fe.Tag() {
	case "required":
		if present != nil && present[pathKey(path)] {
			switch kind {
			case reflect.String:
				iss.Code, iss.Message = "too_small", "String must contain at least 1 character(s)"
			case reflect.Slice, reflect.Map:
				iss.Code, iss.Message = "too_small", "Array must contain at least 1 element(s)"
			default:
				iss.Code, iss.Message = "invalid_type", "Required"
			}
		} else {
			iss.Code, iss.Message = "invalid_type", "Required"
		}
	case "min", "gte", "gt":
		iss.Code = "too_small"
		iss.Message = boundMessage(kind, "at least", param, fe.Tag() == "gt")
	case "max", "lte", "lt":
		iss.Code = "too_big"
		iss.Message = boundMessage(kind, "at most", param, fe.Tag() == "lt")
	case "len":
		iss.Code = "invalid_string"
		iss.Message = fmt.Sprintf("must have exactly %s characters or elements", param)
	case "oneof":
		opts := strings.Fields(param)
		iss.Code = "invalid_enum_value"
		iss.Message = fmt.Sprintf("Invalid enum value. Expected '%s', received '%v'",
			strings.Join(opts, "' | '"), fe.Value())
	case "kebab":
		iss.Code = "invalid_string"
		iss.Message = "Invalid: must match ^[a-z0-9]+(-[a-z0-9]+)*$"
	case "httpurl", "url", "uri", "http_url":
		iss.Code = "invalid_string"
		iss.Message = "Invalid url: expected an absolute http or https URL"
	case "email":
		iss.Code = "invalid_string"
		iss.Message = "Invalid email"
	case "unique":
		iss.Code = "custom"
		iss.Message = "Array elements must be unique"
	case "required_without", "required_without_all":
		iss.Code = "custom"
		iss.Message = "at least one of these fields is required: " + strings.ReplaceAll(param, " ", ", ")
	}
	return iss
}

func boundMessage(kind reflect.Kind, word, param string, strict bool) string {
	switch kind {
	case reflect.String:
		return fmt.Sprintf("String must contain %s %s character(s)", word, param)
	case reflect.Slice, reflect.Array, reflect.Map:
		return fmt.Sprintf("Array must contain %s %s element(s)", word, param)
	}
	op := "greater than or equal to"
	if word == "at most" {
		op = "less than or equal to"
	}
	if strict {
		op = strings.TrimSuffix(op, " or equal to")
	}
	return fmt.Sprintf("Number must be %s %s", op, param)
}

// namespacePath turns "Create.entries[0].content.type" into [entries 0 content type].
func namespacePath(ns string) []any {
	parts := strings.Split(ns, ".")
	if len(parts) > 0 {
		parts = parts[1:] // the root struct's name
	}
	out := []any{}
	for _, p := range parts {
		for p != "" {
			i := strings.IndexByte(p, '[')
			if i < 0 {
				out = append(out, p)
				break
			}
			if i > 0 {
				out = append(out, p[:i])
			}
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				out = append(out, p[i:])
				break
			}
			idx := p[i+1 : i+j]
			if n, err := strconv.Atoi(idx); err == nil {
				out = append(out, n)
			} else {
				out = append(out, idx)
			}
			p = p[i+j+1:]
		}
	}
	return out
}

// IsHTTPURL reports whether s is an absolute http or https URL with a host.
func IsHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
