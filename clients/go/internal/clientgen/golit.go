package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/types"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// errNoLiteral says that a value cannot be written as one Go expression of its type (a
// oneOf union, whose generated type is filled by methods, or an anonymous struct).
var errNoLiteral = errors.New("no literal for this type")

// pkg is the client package's name in the samples.
const pkg = "customerapi"

// literal writes the JSON value v as a Go expression of the generated client's type t,
// indented by depth tabs, and records the packages it uses in imports.
func (c *client) literal(t ast.Expr, v any, depth int, imports map[string]bool) (string, error) {
	switch t := t.(type) {
	case *ast.StarExpr:
		inner, err := c.literal(t.X, v, depth, imports)
		if err != nil {
			return "", err
		}
		if c.composite(t.X) {
			return "&" + inner, nil
		}
		if b := c.basic(t.X); b != "" && b != "string" && b != "bool" && b != "int" && b != "float64" {
			return pkg + ".Ptr[" + b + "](" + inner + ")", nil // an untyped constant would infer int or float64
		}
		return pkg + ".Ptr(" + inner + ")", nil
	case *ast.Ident:
		return c.identLiteral(t, v, depth, imports)
	case *ast.ArrayType:
		items, ok := v.([]any)
		if !ok {
			return "", fmt.Errorf("%v is not a list", v)
		}
		var elems []string
		for _, it := range items {
			e, err := c.literal(t.Elt, it, depth+1, imports)
			if err != nil {
				return "", err
			}
			elems = append(elems, e)
		}
		return c.qualify(t, imports) + block(elems, depth), nil
	case *ast.MapType:
		obj, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("%v is not an object", v)
		}
		var elems []string
		for _, k := range sortedKeys(obj) {
			e, err := c.literal(t.Value, obj[k], depth+1, imports)
			if err != nil {
				return "", err
			}
			elems = append(elems, strconv.Quote(k)+": "+e)
		}
		return c.qualify(t, imports) + block(elems, depth), nil
	case *ast.InterfaceType:
		return anyLiteral(v, depth), nil
	case *ast.SelectorExpr:
		return selectorLiteral(t, v, imports)
	}
	return "", errNoLiteral
}

// identLiteral writes v as a value of a predeclared or generated named type.
func (c *client) identLiteral(t *ast.Ident, v any, depth int, imports map[string]bool) (string, error) {
	spec, generated := c.specs[t.Name]
	if !generated && t.Name == "any" {
		return anyLiteral(v, depth), nil
	}
	if !generated {
		return basicLiteral(t.Name, v)
	}
	if spec.Assign.IsValid() { // an alias: the target's literal is the alias's
		return c.literal(spec.Type, v, depth, imports)
	}
	switch under := spec.Type.(type) {
	case *ast.StructType:
		if field(under, "union") != nil {
			return "", errNoLiteral
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("%v is not an object for %s", v, t.Name)
		}
		elems, err := c.fields(under, obj, depth, imports)
		if err != nil {
			return "", fmt.Errorf("%s: %w", t.Name, err)
		}
		return pkg + "." + t.Name + block(elems, depth), nil
	case *ast.ArrayType, *ast.MapType:
		inner, err := c.literal(under, v, depth, imports)
		if err != nil {
			return "", err
		}
		// []T{…} becomes customerapi.Name{…}.
		return pkg + "." + t.Name + inner[strings.Index(inner, "{"):], nil
	default:
		inner, err := c.literal(under, v, depth, imports)
		if err != nil {
			return "", err
		}
		return pkg + "." + t.Name + "(" + inner + ")", nil
	}
}

// fields writes the struct's fields that obj sets, in the struct's order. A field whose
// type has no literal is left out when it is optional.
func (c *client) fields(s *ast.StructType, obj map[string]any, depth int, imports map[string]bool) ([]string, error) {
	var elems []string
	used := map[string]bool{}
	for _, tf := range tagged(s, "json") {
		f, name, opts := tf.field, tf.name, tf.opts
		v, ok := obj[name]
		if !ok || name == "" || name == "-" {
			continue
		}
		used[name] = true
		if v == nil { // null: the zero value of the field's pointer, slice or map
			continue
		}
		e, err := c.literal(f.Type, v, depth+1, imports)
		if errors.Is(err, errNoLiteral) && (strings.Contains(opts, "omitempty") || isPointer(f.Type)) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", name, err)
		}
		elems = append(elems, f.Names[0].Name+": "+e)
	}
	for k := range obj {
		if !used[k] {
			return nil, fmt.Errorf("the example's %q is no field of the generated type", k)
		}
	}
	return elems, nil
}

// basic is the predeclared type t names, through aliases ("" for any other type).
func (c *client) basic(t ast.Expr) string {
	id, ok := t.(*ast.Ident)
	if !ok {
		return ""
	}
	if spec, generated := c.specs[id.Name]; generated {
		if spec.Assign.IsValid() {
			return c.basic(spec.Type)
		}
		return ""
	}
	return id.Name
}

// taggedField is a named struct field with the value of one key of its tag.
type taggedField struct {
	field      *ast.Field
	name, opts string // the tag's value before and after its first comma
}

// tagged lists s's fields that have one name and a tag, with their tag's key.
func tagged(s *ast.StructType, key string) []taggedField {
	var out []taggedField
	for _, f := range s.Fields.List {
		if len(f.Names) != 1 || f.Tag == nil {
			continue
		}
		tag, _ := strconv.Unquote(f.Tag.Value)
		name, opts, _ := strings.Cut(reflect.StructTag(tag).Get(key), ",")
		out = append(out, taggedField{field: f, name: name, opts: opts})
	}
	return out
}

// composite reports whether t's literal is a composite one, which & can take.
func (c *client) composite(t ast.Expr) bool {
	switch t := t.(type) {
	case *ast.ArrayType, *ast.MapType, *ast.StructType:
		return true
	case *ast.Ident:
		spec, ok := c.specs[t.Name]
		if !ok {
			return false
		}
		if spec.Assign.IsValid() {
			return c.composite(spec.Type)
		}
		switch spec.Type.(type) {
		case *ast.ArrayType, *ast.MapType, *ast.StructType:
			return true
		}
	case *ast.SelectorExpr:
		return types.ExprString(t) == "openapi_types.Date"
	}
	return false
}

// qualify writes a type expression as the samples spell it: generated names with the
// package's name, interface{} as any.
func (c *client) qualify(t ast.Expr, imports map[string]bool) string {
	switch t := t.(type) {
	case *ast.Ident:
		if _, ok := c.specs[t.Name]; ok {
			return pkg + "." + t.Name
		}
		return t.Name
	case *ast.StarExpr:
		return "*" + c.qualify(t.X, imports)
	case *ast.ArrayType:
		return "[]" + c.qualify(t.Elt, imports)
	case *ast.MapType:
		return "map[" + c.qualify(t.Key, imports) + "]" + c.qualify(t.Value, imports)
	case *ast.InterfaceType:
		return "any"
	case *ast.SelectorExpr:
		imports[selectorImport(t)] = true
		return types.ExprString(t)
	}
	return types.ExprString(t)
}

// basicLiteral writes v as a value of a predeclared type.
func basicLiteral(name string, v any) (string, error) {
	switch name {
	case "string":
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%v is not a string", v)
		}
		return strconv.Quote(s), nil
	case "bool":
		b, ok := v.(bool)
		if !ok {
			return "", fmt.Errorf("%v is not a boolean", v)
		}
		return strconv.FormatBool(b), nil
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		f, ok := number(v)
		if !ok || f != float64(int64(f)) {
			return "", fmt.Errorf("%v is not an integer", v)
		}
		return strconv.FormatInt(int64(f), 10), nil
	case "float32", "float64":
		f, ok := number(v)
		if !ok {
			return "", fmt.Errorf("%v is not a number", v)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	}
	return "", errNoLiteral
}

// selectorLiteral writes v as a value of a type of another package.
func selectorLiteral(t *ast.SelectorExpr, v any, imports map[string]bool) (string, error) {
	s, _ := v.(string)
	switch types.ExprString(t) {
	case "time.Time":
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return "", fmt.Errorf("%v is not an RFC 3339 time: %w", v, err)
		}
		imports[`"time"`] = true
		return timeLiteral(tm), nil
	case "openapi_types.Date":
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return "", fmt.Errorf("%v is not a date: %w", v, err)
		}
		imports[`"time"`], imports[selectorImport(t)] = true, true
		return "openapi_types.Date{Time: " + timeLiteral(d) + "}", nil
	case "openapi_types.Email":
		imports[selectorImport(t)] = true
		return "openapi_types.Email(" + strconv.Quote(s) + ")", nil
	}
	return "", errNoLiteral
}

// selectorImport is the import path of a selector's package.
func selectorImport(t *ast.SelectorExpr) string {
	switch types.ExprString(t.X) {
	case "openapi_types":
		return `openapi_types "github.com/oapi-codegen/runtime/types"`
	case "json":
		return `"encoding/json"`
	}
	return strconv.Quote(types.ExprString(t.X))
}

// timeLiteral writes tm as a time.Date call in UTC.
func timeLiteral(tm time.Time) string {
	tm = tm.UTC()
	return fmt.Sprintf("time.Date(%d, time.%s, %d, %d, %d, %d, %d, time.UTC)",
		tm.Year(), tm.Month(), tm.Day(), tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond())
}

// anyLiteral writes a JSON value as an untyped Go value (map[string]any, []any, …).
func anyLiteral(v any, depth int) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case string:
		return strconv.Quote(v)
	case bool:
		return strconv.FormatBool(v)
	case map[string]any:
		var elems []string
		for _, k := range sortedKeys(v) {
			elems = append(elems, strconv.Quote(k)+": "+anyLiteral(v[k], depth+1))
		}
		return "map[string]any" + block(elems, depth)
	case []any:
		var elems []string
		for _, it := range v {
			elems = append(elems, anyLiteral(it, depth+1))
		}
		return "[]any" + block(elems, depth)
	}
	if f, ok := number(v); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return fmt.Sprintf("%#v", v)
}

// number is a JSON number of any Go numeric type.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

// block writes composite-literal elements: inline when short, else one per line.
func block(elems []string, depth int) string {
	if len(elems) == 0 {
		return "{}"
	}
	one := "{" + strings.Join(elems, ", ") + "}"
	if len(one) <= 60 && !strings.Contains(one, "\n") {
		return one
	}
	in := strings.Repeat("\t", depth+1)
	return "{\n" + in + strings.Join(elems, ",\n"+in) + ",\n" + strings.Repeat("\t", depth) + "}"
}

// isPointer reports whether t is a pointer type.
func isPointer(t ast.Expr) bool {
	_, ok := t.(*ast.StarExpr)
	return ok
}

// sortedKeys are the object's keys in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
