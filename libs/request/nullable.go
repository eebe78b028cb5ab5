package request

import (
	"encoding/json"
	"reflect"
)

// Nullable is a body field that may be absent, null or a value. It gives PATCH bodies
// their meaning: absent leaves a field alone, null clears it, a value sets it. Validate
// it with tags starting "omitnil," so that rules apply only to a present value.
type Nullable[T any] struct {
	// Set is true when the field was present in the body (as null or a value).
	Set bool
	// Null is true when the field was present as null.
	Null bool
	// Value holds the value when Set && !Null.
	Value T
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(b) == "null" {
		n.Null = true
		return nil
	}
	return json.Unmarshal(b, &n.Value)
}

// Ptr returns nil when the field is absent or null, else a pointer to the value.
func (n Nullable[T]) Ptr() *T {
	if !n.Set || n.Null {
		return nil
	}
	v := n.Value
	return &v
}

// Value returns *p, or the zero value of T when p is nil: an optional field left out
// takes its default.
func Value[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// Of returns a Nullable holding v.
func Of[T any](v T) Nullable[T] { return Nullable[T]{Set: true, Value: v} }

func (Nullable[T]) nullableElem() reflect.Type { return reflect.TypeFor[T]() }

// nullable is implemented by every Nullable[T]; the decoder uses it to allow null.
type nullable interface{ nullableElem() reflect.Type }

var nullableType = reflect.TypeFor[nullable]()

// validatedValue gives the validator a pointer to the inner value, nil when absent or
// null; tag Nullable fields with "omitnil" so that only present values are checked.
func validatedValue(v reflect.Value) any {
	val := v.FieldByName("Value")
	if !v.FieldByName("Set").Bool() || v.FieldByName("Null").Bool() {
		return reflect.Zero(reflect.PointerTo(val.Type())).Interface()
	}
	p := reflect.New(val.Type())
	p.Elem().Set(val)
	return p.Interface()
}
