package main

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// listOp is an operation of the document that pages with a cursor and answers a list
// envelope.
type listOp struct {
	ID     string // operationId, e.g. listTopics
	Method string // GET
	Path   string // /v0/topics
}

// methods are the operation keys of a path item, in the order they are read.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// listOps returns every operation of the OpenAPI document src that takes a `cursor`
// query parameter and whose 2xx JSON answer has `items` and `nextCursor` properties,
// sorted by operationId.
func listOps(src []byte) ([]listOp, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("parse the document: %w", err)
	}
	paths, _ := doc["paths"].(map[string]any)
	if len(paths) == 0 {
		return nil, fmt.Errorf("the document has no paths")
	}
	var ops []listOp
	for path, item := range paths {
		pi, _ := item.(map[string]any)
		shared, _ := pi["parameters"].([]any)
		for _, m := range methods {
			op, ok := pi[m].(map[string]any)
			if !ok {
				continue
			}
			id, _ := op["operationId"].(string)
			own, _ := op["parameters"].([]any)
			cursor, err := hasCursor(doc, append(append([]any{}, shared...), own...))
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", strings.ToUpper(m), path, err)
			}
			if !cursor {
				continue
			}
			env, err := answersEnvelope(doc, op)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", strings.ToUpper(m), path, err)
			}
			if !env {
				continue
			}
			if id == "" {
				return nil, fmt.Errorf("%s %s pages with a cursor but has no operationId", strings.ToUpper(m), path)
			}
			ops = append(ops, listOp{ID: id, Method: strings.ToUpper(m), Path: path})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].ID < ops[j].ID })
	return ops, nil
}

// hasCursor reports whether one of params (objects or $refs) is the query parameter cursor.
func hasCursor(doc map[string]any, params []any) (bool, error) {
	for _, p := range params {
		obj, err := resolve(doc, p)
		if err != nil {
			return false, err
		}
		if obj["name"] == "cursor" && obj["in"] == "query" {
			return true, nil
		}
	}
	return false, nil
}

// answersEnvelope reports whether op's first 2xx answer is JSON with the properties
// items and nextCursor (directly or through allOf).
func answersEnvelope(doc map[string]any, op map[string]any) (bool, error) {
	responses, _ := op["responses"].(map[string]any)
	codes := make([]string, 0, len(responses))
	for code := range responses {
		if strings.HasPrefix(code, "2") {
			codes = append(codes, code)
		}
	}
	if len(codes) == 0 {
		return false, nil
	}
	sort.Strings(codes)
	res, err := resolve(doc, responses[codes[0]])
	if err != nil {
		return false, err
	}
	content, _ := res["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	if media == nil {
		return false, nil
	}
	props, err := properties(doc, media["schema"], 0)
	if err != nil {
		return false, err
	}
	return props["items"] && props["nextCursor"], nil
}

// properties collects the property names of a schema, following $ref and allOf.
func properties(doc map[string]any, schema any, depth int) (map[string]bool, error) {
	if depth > 16 {
		return nil, fmt.Errorf("schema references nest deeper than 16")
	}
	s, err := resolve(doc, schema)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	if props, ok := s["properties"].(map[string]any); ok {
		for n := range props {
			names[n] = true
		}
	}
	all, _ := s["allOf"].([]any)
	for _, part := range all {
		more, err := properties(doc, part, depth+1)
		if err != nil {
			return nil, err
		}
		for n := range more {
			names[n] = true
		}
	}
	return names, nil
}

// resolve returns v as an object, following a local $ref ("#/components/...").
func resolve(doc map[string]any, v any) (map[string]any, error) {
	for range 16 {
		obj, _ := v.(map[string]any)
		ref, ok := obj["$ref"].(string)
		if !ok {
			return obj, nil
		}
		if !strings.HasPrefix(ref, "#/") {
			return nil, fmt.Errorf("only local references are supported, not %q", ref)
		}
		var cur any = doc
		for _, part := range strings.Split(ref[2:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			m, _ := cur.(map[string]any)
			if cur, ok = m[part]; !ok {
				return nil, fmt.Errorf("reference %q does not resolve", ref)
			}
		}
		v = cur
	}
	return nil, fmt.Errorf("references chain further than 16")
}
