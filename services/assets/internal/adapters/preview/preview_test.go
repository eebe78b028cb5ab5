package preview

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"testing"

	"golang.org/x/image/bmp"

	"github.com/customerapi/platform/services/assets/internal/domain"
)

func opener(b []byte) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

func encoded(t *testing.T, w, h int, alpha uint8, enc func(io.Writer, image.Image) error) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x), uint8(y), 128, alpha})
		}
	}
	var buf bytes.Buffer
	if err := enc(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestMake(t *testing.T) {
	g := NewGenerator(64, 1_000_000, DefaultMaxDecodeBytes, 2)
	jpg := func(w io.Writer, m image.Image) error { return jpeg.Encode(w, m, nil) }
	gf := func(w io.Writer, m image.Image) error { return gif.Encode(w, m, nil) }
	for _, tc := range []struct {
		name, media string
		data        []byte
		w, h        int
		out         string
	}{
		{"wide opaque png", "image/png", encoded(t, 400, 100, 255, png.Encode), 64, 16, "image/jpeg"},
		{"tall transparent png", "image/png", encoded(t, 50, 200, 100, png.Encode), 16, 64, "image/png"},
		{"small jpeg keeps its size", "image/jpeg", encoded(t, 30, 20, 255, jpg), 30, 20, "image/jpeg"},
		{"gif", "image/gif", encoded(t, 128, 128, 255, gf), 64, 64, "image/jpeg"},
		{"bmp", "image/bmp", encoded(t, 300, 300, 255, bmp.Encode), 64, 64, "image/jpeg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := g.Make(context.Background(), tc.media, opener(tc.data))
			if err != nil || p == nil {
				t.Fatalf("make: %v %v", p, err)
			}
			if p.Width != tc.w || p.Height != tc.h || p.ContentType != tc.out {
				t.Fatalf("preview %dx%d %s, want %dx%d %s", p.Width, p.Height, p.ContentType, tc.w, tc.h, tc.out)
			}
			cfg, format, err := image.DecodeConfig(bytes.NewReader(p.Data))
			if err != nil || cfg.Width != tc.w || cfg.Height != tc.h || "image/"+format != tc.out {
				t.Fatalf("preview bytes: %v %s %v", cfg, format, err)
			}
		})
	}
}

func TestTooLargeGetsNoPreview(t *testing.T) {
	g := NewGenerator(64, 10_000, DefaultMaxDecodeBytes, 1)
	p, err := g.Make(context.Background(), "image/png", opener(encoded(t, 200, 100, 255, png.Encode)))
	if err != nil || p != nil {
		t.Fatalf("over MaxPixels: %v %v", p, err)
	}
}

func TestUndecodable(t *testing.T) {
	g := NewGenerator(64, 1_000_000, DefaultMaxDecodeBytes, 1)
	good := encoded(t, 100, 100, 255, png.Encode)
	for name, data := range map[string][]byte{
		"magic only": []byte("\x89PNG\r\n\x1a\n garbage"),
		"truncated":  good[:len(good)/2],
	} {
		if _, err := g.Make(context.Background(), "image/png", opener(data)); !errors.Is(err, domain.ErrUndecodable) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := g.Make(context.Background(), "image/svg+xml", opener(good)); err == nil {
		t.Error("svg previewed")
	}
}
