package customerapi

// iterators.gen.go: an <Operation>All iterator for every list operation of the document.
//go:generate env GOWORK=off go run -C internal/clientgen .

import (
	"context"
	"iter"
)

// PageFunc fetches one page of a list from a cursor (nil for the first page) and returns
// its items and the next page's cursor (nil after the last page).
type PageFunc[T any] func(ctx context.Context, cursor *string) (items []T, next *string, err error)

// All walks a list across nextCursor, yielding each item once; it stops at the first
// error, which it yields with a zero item. Every list operation of the API has a
// generated iterator built on it (iterators.gen.go), so a list is one line:
//
//	for p, err := range c.ListPagesAll(ctx, &customerapi.ListPagesParams{Limit: &n}) { … }
//
// All remains for custom use, e.g. a fetch that records each page or changes a filter:
//
//	for p, err := range customerapi.All(ctx, func(ctx context.Context, cursor *string) ([]customerapi.Page, *string, error) {
//		r, err := c.ListPagesWithResponse(ctx, &customerapi.ListPagesParams{Cursor: cursor})
//		if err != nil {
//			return nil, nil, err
//		}
//		return r.JSON200.Items, r.JSON200.NextCursor, nil
//	}) { … }
func All[T any](ctx context.Context, fetch PageFunc[T]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var cursor *string
		for {
			items, next, err := fetch(ctx, cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == nil || *next == "" {
				return
			}
			cursor = next
		}
	}
}
