// Package preview makes bounded-size previews of raster images (a domain.Previewer): at
// most MaxEdge pixels on the longer side, JPEG for opaque images and PNG for ones with
// transparency. What decoding an image would take is judged from its header before any
// pixel is decoded.
package preview

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/bmp"
	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"github.com/customerapi/platform/services/assets/internal/domain"
)

// decoders are the raster formats previews are made of, by sniffed media type: how to
// judge an image from its header, and how to decode it.
var decoders = map[string]struct {
	header headerFunc
	decode func(io.Reader) (image.Image, error)
}{
	"image/png":  {pngHeader, png.Decode},
	"image/jpeg": {jpegHeader, jpeg.Decode},
	"image/gif":  {configHeader(gif.DecodeConfig, gifBytesPerPixel), gif.Decode},
	"image/webp": {webpHeader(webp.DecodeConfig), webp.Decode},
	"image/bmp":  {configHeader(bmp.DecodeConfig, bmpBytesPerPixel), bmp.Decode},
}

// Supports reports whether images of mediaType get a preview.
func (*Generator) Supports(mediaType string) bool { _, ok := decoders[mediaType]; return ok }

// DefaultMaxDecodeBytes is the memory budget of one preview when none is configured.
const DefaultMaxDecodeBytes = 128 << 20

// Generator makes previews, a bounded number at a time, each within a memory budget:
// decoding holds the whole bitmap in memory (1 to 8 bytes per pixel by format and depth,
// more for interlaced PNG and progressive JPEG), so what an image would take is judged
// from its header first, and the budget and the concurrency bound the memory used.
type Generator struct {
	// MaxEdge is the longest side of a preview in pixels.
	MaxEdge int
	// MaxPixels is the largest source image (width × height) previewed; larger ones get
	// none.
	MaxPixels int64
	// MaxDecodeBytes is the most memory one preview may take: what the decoder allocates
	// for the source plus the scaling. An image that needs more gets none.
	MaxDecodeBytes int64
	sem            chan struct{}
}

// NewGenerator returns a Generator running at most concurrency decodes at once.
func NewGenerator(maxEdge int, maxPixels, maxDecodeBytes int64, concurrency int) *Generator {
	return &Generator{MaxEdge: maxEdge, MaxPixels: maxPixels, MaxDecodeBytes: maxDecodeBytes,
		sem: make(chan struct{}, max(concurrency, 1))}
}

// Make returns the preview of the image of mediaType that open reads (it is called
// twice: once for the header, once for the pixels), or nil when the image has more than
// MaxPixels pixels or would take more than MaxDecodeBytes to decode and scale: such an
// image is never decoded. Bytes that do not decode give domain.ErrUndecodable.
func (g *Generator) Make(ctx context.Context, mediaType string, open func() (io.ReadCloser, error)) (*domain.Image, error) {
	dec, ok := decoders[mediaType]
	if !ok {
		return nil, fmt.Errorf("preview: %s is not supported", mediaType)
	}
	hdr, err := read(open, func(r io.Reader) (header, error) { return dec.header(r, g.decodeBudget) })
	if err != nil {
		return nil, err
	}
	if hdr.width <= 0 || hdr.height <= 0 {
		return nil, domain.ErrUndecodable
	}
	if int64(hdr.width)*int64(hdr.height) > g.MaxPixels || hdr.decodeBytes > g.decodeBudget(hdr.width, hdr.height) {
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

// decodeBudget is what decoding a w×h image may allocate: MaxDecodeBytes less what
// scaling it takes.
func (g *Generator) decodeBudget(w, h int) int64 { return g.MaxDecodeBytes - g.scaleBytes(w, h) }

// encoderBytes bounds the state of the preview's encoder (compress/flate's tables, for
// a PNG, are about 1 MiB).
const encoderBytes = 2 << 20

// scaleBytes is what scaling a w×h image into its preview allocates: x/image/draw's
// kernel scaler keeps a [4]float64 per preview column and source row, and its weights;
// then the preview bitmap, its encoder and the encoded bytes.
func (g *Generator) scaleBytes(w, h int) int64 {
	dw, dh := g.size(w, h)
	return 32*int64(dw)*int64(h) + 16*2*(int64(w)+int64(h)) + 2*4*int64(dw)*int64(dh) + encoderBytes
}

// size is the preview's size for a w×h image: MaxEdge on the longer side at most.
func (g *Generator) size(w, h int) (int, int) {
	if w <= g.MaxEdge && h <= g.MaxEdge {
		return w, h
	}
	if w >= h {
		return g.MaxEdge, max(1, int(int64(h)*int64(g.MaxEdge)/int64(w)))
	}
	return max(1, int(int64(w)*int64(g.MaxEdge)/int64(h))), g.MaxEdge
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
		return zero, fmt.Errorf("%w: %w", domain.ErrUndecodable, err)
	}
	return v, nil
}

func (g *Generator) scale(src image.Image) (*domain.Image, error) {
	b := src.Bounds()
	w, h := g.size(b.Dx(), b.Dy())
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	// BiLinear widens its kernel with the reduction, so a large reduction still averages
	// every source pixel (no aliasing) at a quarter of Catmull-Rom's cost.
	draw.BiLinear.Scale(dst, dst.Bounds(), src, b, draw.Src, nil)
	var buf bytes.Buffer
	out := &domain.Image{Width: w, Height: h}
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
