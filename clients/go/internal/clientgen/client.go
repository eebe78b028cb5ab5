package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
)

// iterator is what the generated code needs of one list operation, read from the
// generated client (client.gen.go), so the names and types are oapi-codegen's own.
type iterator struct {
	Op       listOp
	Name     string   // ListTopics: the operation's Go name
	Args     []string // the path parameters as declared, e.g. "pageId string"
	ArgNames []string // their names, e.g. "pageId"
	Params   string   // ListTopicsParams
	Item     string   // Topic: the element type of items
}

// reserved are the names the generated functions use themselves.
var reserved = map[string]bool{"c": true, "ctx": true, "params": true, "reqEditors": true, "p": true,
	"start": true, "cursor": true, "q": true, "r": true, "err": true}

// client is the generated client's declarations: its types and ClientWithResponses' methods.
type client struct {
	specs   map[string]*ast.TypeSpec // the declared types by name
	methods map[string]*ast.FuncType // by lower-case name
	names   map[string]string        // lower-case name to the declared name
}

// parseClient reads the declarations of the generated client's source.
func parseClient(src []byte) (*client, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "client.gen.go", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse the generated client: %w", err)
	}
	c := &client{specs: map[string]*ast.TypeSpec{}, methods: map[string]*ast.FuncType{}, names: map[string]string{}}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					c.specs[ts.Name.Name] = ts
				}
			}
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) != 1 || types.ExprString(d.Recv.List[0].Type) != "*ClientWithResponses" {
				continue
			}
			low := strings.ToLower(d.Name.Name)
			c.methods[low], c.names[low] = d.Type, d.Name.Name
		}
	}
	return c, nil
}

// iterator finds op's method `<Name>WithResponse(ctx, path params…, params, reqEditors…)`
// and the element type of its answer's items.
func (c *client) iterator(op listOp) (iterator, error) {
	low := strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(op.ID)) + "withresponse"
	fn, ok := c.methods[low]
	if !ok {
		return iterator{}, fmt.Errorf("%s: client.gen.go has no %sWithResponse method (run make clients)", op.ID, op.ID)
	}
	it := iterator{Op: op, Name: strings.TrimSuffix(c.names[low], "WithResponse")}
	var fields []*ast.Field
	for _, f := range fn.Params.List {
		if len(f.Names) == 0 {
			return iterator{}, fmt.Errorf("%s: unnamed parameter in %sWithResponse", op.ID, it.Name)
		}
		for _, n := range f.Names {
			fields = append(fields, &ast.Field{Names: []*ast.Ident{n}, Type: f.Type})
		}
	}
	if len(fields) < 3 || types.ExprString(fields[0].Type) != "context.Context" ||
		types.ExprString(fields[len(fields)-1].Type) != "...RequestEditorFn" {
		return iterator{}, fmt.Errorf("%s: %sWithResponse is not (ctx, …, params, reqEditors...)", op.ID, it.Name)
	}
	it.Params = strings.TrimPrefix(types.ExprString(fields[len(fields)-2].Type), "*")
	if it.Params != it.Name+"Params" {
		return iterator{}, fmt.Errorf("%s: %sWithResponse takes %s, not *%sParams", op.ID, it.Name, it.Params, it.Name)
	}
	for _, f := range fields[1 : len(fields)-2] {
		name := f.Names[0].Name
		if reserved[name] {
			return iterator{}, fmt.Errorf("%s: the path parameter %s collides with a name of the generated code", op.ID, name)
		}
		it.Args = append(it.Args, name+" "+types.ExprString(f.Type))
		it.ArgNames = append(it.ArgNames, name)
	}
	params, ok := c.structOf(ast.NewIdent(it.Params))
	if !ok || field(params, "Cursor") == nil {
		return iterator{}, fmt.Errorf("%s: %s has no Cursor field", op.ID, it.Params)
	}

	if fn.Results == nil || len(fn.Results.List) != 2 {
		return iterator{}, fmt.Errorf("%s: %sWithResponse does not return (response, error)", op.ID, it.Name)
	}
	res, ok := c.structOf(fn.Results.List[0].Type)
	if !ok {
		return iterator{}, fmt.Errorf("%s: the answer of %sWithResponse is not a struct", op.ID, it.Name)
	}
	ok200 := field(res, "JSON200")
	if ok200 == nil {
		return iterator{}, fmt.Errorf("%s: %sResponse has no JSON200", op.ID, it.Name)
	}
	page, ok := c.structOf(ok200.Type)
	if !ok {
		return iterator{}, fmt.Errorf("%s: %sResponse.JSON200 is not a struct", op.ID, it.Name)
	}
	items := field(page, "Items")
	arr, isArr := itemsType(items)
	if !isArr || field(page, "NextCursor") == nil {
		return iterator{}, fmt.Errorf("%s: the list of %sResponse.JSON200 has no Items slice and NextCursor", op.ID, it.Name)
	}
	it.Item = types.ExprString(arr.Elt)
	return it, nil
}

// itemsType is the slice type of an Items field.
func itemsType(f *ast.Field) (*ast.ArrayType, bool) {
	if f == nil {
		return nil, false
	}
	arr, ok := f.Type.(*ast.ArrayType)
	return arr, ok && arr.Len == nil
}

// structOf resolves a (pointer to a) named or literal struct type.
func (c *client) structOf(e ast.Expr) (*ast.StructType, bool) {
	for range 8 {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.Ident:
			spec, ok := c.specs[t.Name]
			if !ok {
				return nil, false
			}
			e = spec.Type
		case *ast.StructType:
			return t, true
		default:
			return nil, false
		}
	}
	return nil, false
}

// field is the struct's field of that name (nil when absent).
func field(s *ast.StructType, name string) *ast.Field {
	for _, f := range s.Fields.List {
		for _, n := range f.Names {
			if n.Name == name {
				return f
			}
		}
	}
	return nil
}
