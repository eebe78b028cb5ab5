//go:build !linux

package main

func stopWithParent() {}
