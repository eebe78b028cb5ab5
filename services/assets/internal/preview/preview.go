// Package preview makes bounded-size previews of raster images: at most MaxEdge pixels on
// the longer side, JPEG for opaque images and PNG for ones with transparency.
package preview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"slices"

	"golang.org/x/image/bmp"
	"golang.org/x/image/draw"
	"golang.org/x/image/webp"
)

// ErrUndecodable means the bytes do not decode as the image format they claim to be.
var ErrUndecodable = errors.New("preview: the image cannot be decoded")

// decoders are the raster formats previews are made of, by sniffed media type.
var decoders = map[string]struct {
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
}{
	"image/png":  {png.DecodeConfig, png.Decode},
	"image/jpeg": {jpeg.DecodeConfig, jpeg.Decode},
	"image/gif":  {gif.DecodeConfig, gif.Decode},
	"image/webp": {webp.DecodeConfig, webp.Decode},
	"image/bmp":  {bmp.DecodeConfig, bmp.Decode},
}

// Supported lists the media types that get a preview.
func Supported() []string {
	out := make([]string, 0, len(decoders))
	for k := range decoders {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Supports reports whether images of mediaType get a preview.
func Supports(mediaType string) bool { _, ok := decoders[mediaType]; return ok }

// Image is a made preview.
type Image struct {
	Data          []byte
	ContentType   string
	Width, Height int
}

// Generator makes previews, a bounded number at a time: decoding holds the whole bitmap
// in memory (4 bytes per pixel), so MaxPixels and the concurrency bound the memory used.
type Generator struct {
	// MaxEdge is the longest side of a preview in pixels.
	MaxEdge int
	// MaxPixels is the largest source image (width × height) previewed; larger ones get
	// none.
	MaxPixels int64
	sem       chan struct{}
}

// NewGenerator returns a Generator running at most concurrency decodes at once.
func NewGenerator(maxEdge int, maxPixels int64, concurrency int) *Generator {
	return &Generator{MaxEdge: maxEdge, MaxPixels: maxPixels, sem: make(chan struct{}, max(concurrency, 1))}
}

// Make returns the preview of the image of mediaType that open reads (it is called
// twice: once for the dimensions, once for the pixels), or nil when the image has more
// than MaxPixels pixels. Bytes that do not decode give ErrUndecodable.
func (g *Generator) Make(ctx context.Context, mediaType string, open func() (io.ReadCloser, error)) (*Image, error) {
	dec, ok := decoders[mediaType]
	if !ok {
		return nil, fmt.Errorf("preview: %s is not supported", mediaType)
	}
	cfg, err := read(open, dec.config)
	if err != nil {
		return nil, err
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, ErrUndecodable
	}
	if int64(cfg.Width)*int64(cfg.Height) > g.MaxPixels {
		return nil, nil
	}
	select {
	case g.sem <- struct{}{}:
		defer func() { <-g.sem }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	src, err := read(open, dec.decode)
	if err != nil {
		return nil, err
	}
	return g.scale(src)
}

func read[T any](open func() (io.ReadCloser, error), fn func(io.Reader) (T, error)) (T, error) {
	var zero T
	rc, err := open()
	if err != nil {
		return zero, fmt.Errorf("preview: open: %w", err)
	}
	defer rc.Close()
	v, err := fn(rc)
	if err != nil {
		return zero, fmt.Errorf("%w: %v", ErrUndecodable, err)
	}
	return v, nil
}

func (g *Generator) scale(src image.Image) (*Image, error) {
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	if w > g.MaxEdge || h > g.MaxEdge {
		if w >= h {
			w, h = g.MaxEdge, max(1, int(int64(h)*int64(g.MaxEdge)/int64(w)))
		} else {
			w, h = max(1, int(int64(w)*int64(g.MaxEdge)/int64(h))), g.MaxEdge
		}
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	// BiLinear widens its kernel with the reduction, so a large reduction still averages
	// every source pixel (no aliasing) at a quarter of Catmull-Rom's cost.
	draw.BiLinear.Scale(dst, dst.Bounds(), src, b, draw.Src, nil)
	var buf bytes.Buffer
	out := &Image{Width: w, Height: h}
	if dst.Opaque() {
		out.ContentType = "image/jpeg"
		if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 82}); err != nil {
			return nil, fmt.Errorf("preview: encode jpeg: %w", err)
		}
	} else {
		out.ContentType = "image/png"
		if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, dst); err != nil {
			return nil, fmt.Errorf("preview: encode png: %w", err)
		}
	}
	out.Data = buf.Bytes()
	return out, nil
}
