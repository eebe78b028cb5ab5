package request

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
)

// FormIssues judges the fields of a multipart/form-data body by the schema its operation
// gives that body. The middleware does not read such bodies (an upload streams through
// its handler), so the handler collects the fields as it reads the parts and asks here
// once it has them all, adding what only it can judge (the file's bytes) to the issues
// returned. values maps each part's name to its values in the order sent, as text; a file
// part is named with any placeholder value, and a name without values stands for parts
// the handler could not read as text (it says why): of those only the name is judged, so
// that an unknown one is reported as such. Each value is read as its property's type
// says (a boolean from true, false, 1 or 0 in any case; a number; a list from a repeated
// part), so that the schema's rules apply as they do to JSON, and a part sent more than
// once for a property that is not a list is an issue. Issues have the part's name (and
// index) as path, within field body.
func (d *Document) FormIssues(c *fiber.Ctx, values map[string][]string) []apierror.Issue {
	route, _, ok := d.find(c.Method(), string(c.Request().URI().PathOriginal()))
	if !ok || route.Operation.RequestBody == nil {
		return nil
	}
	rb := route.Operation.RequestBody.Value
	content := rb.Content.Get(fiber.MIMEMultipartForm)
	if content == nil || content.Schema == nil || content.Schema.Value == nil {
		return nil
	}
	schema := content.Schema.Value
	var issues []apierror.Issue
	fields := make(map[string]any, len(values))
	for _, name := range slices.Sorted(maps.Keys(values)) {
		vs := values[name]
		prop := schema.Properties[name]
		switch {
		case prop == nil:
			fields[name] = "" // not a property: the schema says so
		case len(vs) == 0:
		case prop.Value != nil && prop.Value.Type.Is(openapi3.TypeArray):
			list := make([]any, len(vs))
			for i, v := range vs {
				list[i] = formValue(prop.Value.Items, v)
			}
			fields[name] = list
		default:
			if len(vs) > 1 {
				issues = append(issues, apierror.Issue{Code: "invalid_type", Path: []any{name},
					Message: "Expected a single value, received several"})
			}
			fields[name] = formValue(prop, vs[0]) // judged too: its issues are as true
		}
	}
	err := schema.VisitJSON(fields, openapi3.VisitAsRequest(), openapi3.MultiErrors())
	if err == nil {
		return issues
	}
	for _, is := range requestIssues(&openapi3filter.RequestError{RequestBody: rb, Err: err}, fields, []any{}) {
		if len(is.Path) == 1 && is.Message == "Required" {
			if vs, sent := values[fmt.Sprint(is.Path[0])]; sent && len(vs) == 0 {
				continue // sent, and the handler said what is wrong with it
			}
		}
		issues = append(issues, is)
	}
	return issues
}

// formValue reads one text value as the schema's type: a value that does not parse stays
// text, so the schema refuses it with the type it expected.
func formValue(ref *openapi3.SchemaRef, v string) any {
	if ref == nil || ref.Value == nil {
		return v
	}
	t := ref.Value.Type
	switch {
	case t.Is(openapi3.TypeBoolean):
		switch strings.ToLower(v) {
		case "true", "1":
			return true
		case "false", "0":
			return false
		}
	case t.Is(openapi3.TypeInteger), t.Is(openapi3.TypeNumber):
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return v
}
