// Package config reads typed settings from the environment once, at start-up, with
// defaults and fail-fast validation returned as one error.
package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Env reads settings and collects every problem, so a bad deployment reports all of its
// mistakes at once.
type Env struct {
	lookup func(string) (string, bool)
	errs   []error
}

// FromOS reads the process environment.
func FromOS() *Env { return &Env{lookup: os.LookupEnv} }

// FromMap reads the given map (for tests).
func FromMap(m map[string]string) *Env {
	return &Env{lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
}

func (e *Env) get(name string) (string, bool) {
	v, ok := e.lookup(name)
	if !ok || strings.TrimSpace(v) == "" {
		return "", false
	}
	return strings.TrimSpace(v), true
}

// Fail records a problem found by the caller.
func (e *Env) Fail(name, format string, args ...any) {
	e.errs = append(e.errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
}

// String returns the variable or def.
func (e *Env) String(name, def string) string {
	if v, ok := e.get(name); ok {
		return v
	}
	return def
}

// Required returns the variable, recording an error when it is unset.
func (e *Env) Required(name string) string {
	v, ok := e.get(name)
	if !ok {
		e.Fail(name, "is required")
	}
	return v
}

// Int returns the variable as an integer, or def.
func (e *Env) Int(name string, def int) int {
	v, ok := e.get(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.Fail(name, "must be an integer, got %q", v)
		return def
	}
	return n
}

// Bool returns the variable as a boolean, or def.
func (e *Env) Bool(name string, def bool) bool {
	v, ok := e.get(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.Fail(name, "must be true or false, got %q", v)
		return def
	}
	return b
}

// Duration returns the variable as a Go duration ("1.5s", "200ms"), or def.
func (e *Env) Duration(name string, def time.Duration) time.Duration {
	v, ok := e.get(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e.Fail(name, "must be a non-negative duration like 500ms or 2s, got %q", v)
		return def
	}
	return d
}

// Durations returns a comma-separated list of durations, or def.
func (e *Env) Durations(name string, def []time.Duration) []time.Duration {
	v, ok := e.get(name)
	if !ok {
		return def
	}
	var out []time.Duration
	for _, p := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || d < 0 {
			e.Fail(name, "must be a comma-separated list of durations, got %q", v)
			return def
		}
		out = append(out, d)
	}
	return out
}

// List returns a comma-separated list with empty items dropped, or def.
func (e *Env) List(name string, def []string) []string {
	v, ok := e.get(name)
	if !ok {
		return def
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Secret returns a secret of at least minBytes bytes, given as hex (64 hex digits for 32
// bytes) or as plain text; unset gives nil, for the caller to decide.
func (e *Env) Secret(name string, minBytes int) []byte {
	v, ok := e.get(name)
	if !ok {
		return nil
	}
	b := []byte(v)
	if h, err := hex.DecodeString(v); err == nil {
		b = h
	}
	if len(b) < minBytes {
		e.Fail(name, "must hold at least %d bytes of secret", minBytes)
		return nil
	}
	return b
}

// Err returns every problem recorded, or nil.
func (e *Env) Err() error { return errors.Join(e.errs...) }
