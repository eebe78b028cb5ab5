package main

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// operation is what the code samples need of one operation of the document.
type operation struct {
	ID         string      // createTopic
	Method     string      // POST
	Path       string      // /v0/topics/{topic_id}
	Secured    bool        // sends x-api-key
	PathParams []param     // in the order of the path
	Query      []param     // the required query parameters
	JSON       any         // the JSON body's example (nil: no JSON body)
	Form       []formField // the parts of a multipart body
	Result     string      // the 2xx JSON answer's schema name (Topic), "" for no JSON answer
	List       bool        // pages with a cursor (the Go client has an <Op>All iterator)
}

// param is a parameter with the example value the samples send.
type param struct {
	Name    string // page_id
	Example any    // its example value
}

// formField is one part of a multipart body: a file (File set) or a text value.
type formField struct {
	Name, Value string
	File        bool
}

// placeholder matches a path template's parameters.
var placeholder = regexp.MustCompile(`\{([^}]+)\}`)

// operations reads every operation of the document src with its examples, sorted by path
// and then method as the document lists them.
func operations(src []byte, lists []listOp) ([]operation, error) {
	doc, err := openapi3.NewLoader().LoadFromData(src)
	if err != nil {
		return nil, fmt.Errorf("load the document: %w", err)
	}
	isList := map[string]bool{}
	for _, l := range lists {
		isList[l.ID] = true
	}
	ids := exampleIDs(doc)
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	var ops []operation
	for _, path := range paths {
		item := doc.Paths.Value(path)
		for _, m := range methods {
			op := item.GetOperation(strings.ToUpper(m))
			if op == nil {
				continue
			}
			o, err := readOperation(doc, path, strings.ToUpper(m), item, op, ids)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", strings.ToUpper(m), path, err)
			}
			o.List = isList[o.ID]
			ops = append(ops, o)
		}
	}
	return ops, nil
}

// readOperation gathers one operation's parameters, body example and answer.
func readOperation(doc *openapi3.T, path, method string, item *openapi3.PathItem, op *openapi3.Operation,
	ids map[string]any) (operation, error) {
	o := operation{ID: op.OperationID, Method: method, Path: path}
	if o.ID == "" {
		return o, fmt.Errorf("no operationId")
	}
	o.Secured = len(doc.Security) > 0
	if op.Security != nil {
		o.Secured = len(*op.Security) > 0
	}
	params := map[string]*openapi3.Parameter{}
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, p := range list {
			params[p.Value.In+" "+p.Value.Name] = p.Value
		}
	}
	for _, m := range placeholder.FindAllStringSubmatch(path, -1) {
		p, ok := params["path "+m[1]]
		if !ok {
			return o, fmt.Errorf("the path parameter %s is not declared", m[1])
		}
		ex, ok := exampleOf(p)
		if !ok {
			ex, ok = ids[camel(m[1])]
		}
		if !ok {
			return o, fmt.Errorf("no example for the path parameter %s: give its schema one", m[1])
		}
		o.PathParams = append(o.PathParams, param{Name: m[1], Example: ex})
	}
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p := params[k]
		if p.In != "query" || !p.Required {
			continue
		}
		ex, ok := exampleOf(p)
		if !ok {
			return o, fmt.Errorf("no example for the required query parameter %s", p.Name)
		}
		o.Query = append(o.Query, param{Name: p.Name, Example: ex})
	}
	if err := o.readBody(op); err != nil {
		return o, err
	}
	o.Result = resultSchema(op)
	return o, nil
}

// readBody takes the request body's example: JSON, or the parts of a multipart form.
func (o *operation) readBody(op *openapi3.Operation) error {
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	content := op.RequestBody.Value.Content
	if mt := content["application/json"]; mt != nil {
		o.JSON = mediaExample(mt)
		if o.JSON == nil {
			return fmt.Errorf("the JSON body has no example")
		}
		return nil
	}
	mt := content["multipart/form-data"]
	if mt == nil {
		return fmt.Errorf("a body that is neither JSON nor multipart")
	}
	ex, _ := mediaExample(mt).(map[string]any)
	if ex == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return fmt.Errorf("the multipart body has no example")
	}
	props := make([]string, 0, len(mt.Schema.Value.Properties))
	for name := range mt.Schema.Value.Properties {
		props = append(props, name)
	}
	sort.Strings(props)
	for _, name := range props {
		s := mt.Schema.Value.Properties[name].Value
		v, ok := ex[name]
		if !ok {
			continue
		}
		if s.Format == "binary" {
			file, _ := ex["name"].(string)
			if file == "" {
				file = "upload.bin"
			}
			o.Form = append([]formField{{Name: name, Value: file, File: true}}, o.Form...)
			continue
		}
		vals, isList := v.([]any)
		if !isList {
			vals = []any{v}
		}
		for _, one := range vals {
			o.Form = append(o.Form, formField{Name: name, Value: fmt.Sprint(one)})
		}
	}
	return nil
}

// exampleOf is a parameter's example.
func exampleOf(p *openapi3.Parameter) (any, bool) {
	ex := p.Example
	if ex == nil && p.Schema != nil && p.Schema.Value != nil {
		ex = p.Schema.Value.Example
	}
	return ex, ex != nil
}

// mediaExample is a media type's example, else its schema's.
func mediaExample(mt *openapi3.MediaType) any {
	if mt.Example != nil {
		return mt.Example
	}
	if mt.Schema != nil && mt.Schema.Value != nil {
		return mt.Schema.Value.Example
	}
	return nil
}

// resultSchema is the name of the schema of the first 2xx JSON answer.
func resultSchema(op *openapi3.Operation) string {
	codes := make([]string, 0)
	for code := range op.Responses.Map() {
		if strings.HasPrefix(code, "2") {
			codes = append(codes, code)
		}
	}
	sort.Strings(codes)
	for _, code := range codes {
		r := op.Responses.Value(code)
		if r == nil || r.Value == nil {
			continue
		}
		if mt := r.Value.Content["application/json"]; mt != nil && mt.Schema != nil { // not Get: it matches */*
			if i := strings.LastIndex(mt.Schema.Ref, "/"); i >= 0 {
				return mt.Schema.Ref[i+1:]
			}
			return "result"
		}
	}
	return ""
}

// exampleIDs maps the string properties of the component schemas' examples (pageId) to
// their values, the first schema by name winning, so that a path parameter page_id can
// take the ID the examples use.
func exampleIDs(doc *openapi3.T) map[string]any {
	names := make([]string, 0, len(doc.Components.Schemas))
	for n := range doc.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	ids := map[string]any{}
	for _, n := range names {
		ex, _ := doc.Components.Schemas[n].Value.Example.(map[string]any)
		for k, v := range ex {
			if s, ok := v.(string); ok && strings.HasSuffix(k, "Id") {
				if _, seen := ids[k]; !seen {
					ids[k] = s
				}
			}
		}
	}
	return ids
}

// camel turns page_id into pageId.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// url is the operation's URL under base with the example path and query parameters.
func (o *operation) url(base string) string {
	path := o.Path
	for _, p := range o.PathParams {
		path = strings.Replace(path, "{"+p.Name+"}", url.PathEscape(fmt.Sprint(p.Example)), 1)
	}
	if len(o.Query) > 0 {
		q := url.Values{}
		for _, p := range o.Query {
			q.Add(p.Name, fmt.Sprint(p.Example))
		}
		path += "?" + q.Encode()
	}
	return base + path
}
