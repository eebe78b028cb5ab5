package preview

import (
	"bufio"
	"bytes"
	"context"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"io"
	"os"
	"runtime"
	"testing"

	"golang.org/x/image/bmp"

	pt "github.com/customerapi/platform/services/assets/internal/adapters/preview/previewtest"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

// allocated runs fn and returns the bytes the process allocated meanwhile.
func allocated(fn func()) int64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

const mib = 1 << 20

var yuv420 = [][2]int{{2, 2}, {1, 1}, {1, 1}}

// Files of a few hundred KiB whose pixels are within the pixel limit (16 MP of 25 MP)
// but decode to 120 to 160 MiB, each over the default budget: a 16-bit PNG (8 bytes a
// pixel), an interlaced PNG (the passes are a second bitmap) and a progressive JPEG (256
// bytes of coefficients per 8×8 block), the last also as a header without scan data.
// They get no preview, and Make allocates next to nothing: they are judged from their
// headers, never decoded. The same sizes at 8 bits, not interlaced, or baseline, fit.
func TestImagesOverTheDecodeBudgetAreNotDecoded(t *testing.T) {
	g := NewGenerator(512, 25_000_000, DefaultMaxDecodeBytes, 2) // the service's defaults
	const w, h = 8000, 2000
	for _, tc := range []struct {
		name, media string
		data        []byte
	}{
		{"16-bit RGBA PNG", "image/png", pt.PNG(pt.PNGOptions{Width: w, Height: h, Colour: pt.TruecolourAlpha, Depth: 16})},
		{"interlaced RGBA PNG", "image/png", pt.PNG(pt.PNGOptions{Width: w, Height: h, Colour: pt.TruecolourAlpha, Depth: 8, Interlaced: true})},
		{"progressive 4:2:0 JPEG", "image/jpeg", pt.ProgressiveJPEG(pt.JPEGOptions{Width: w, Height: h, Sampling: yuv420})},
		{"progressive JPEG, header only", "image/jpeg", pt.ProgressiveJPEG(pt.JPEGOptions{Width: w, Height: h, Sampling: yuv420, HeaderOnly: true})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := judge(t, g, tc.media, tc.data)
			t.Logf("%d KiB file, %dx%d: decoding takes %d MiB, scaling %d MiB",
				len(tc.data)>>10, hdr.width, hdr.height, hdr.decodeBytes/mib, g.scaleBytes(w, h)/mib)
			var p *domain.Image
			var err error
			alloc := allocated(func() { p, err = g.Make(context.Background(), tc.media, opener(tc.data)) })
			if p != nil || err != nil {
				t.Errorf("an image that needs more than the %d MiB decode budget must get no preview and no error; got %v, %v",
					g.MaxDecodeBytes/mib, p != nil, err)
			}
			if alloc > mib {
				t.Errorf("Make allocated %.1f MiB for an image over the decode budget: it must be judged from its header, not decoded",
					float64(alloc)/mib)
			}
		})
	}
	for name, data := range map[string][]byte{
		"8-bit RGBA PNG": pt.PNG(pt.PNGOptions{Width: w, Height: h, Colour: pt.TruecolourAlpha, Depth: 8}),
		"baseline JPEG":  jpegOf(t, image.NewRGBA(image.Rect(0, 0, w, h))),
	} {
		media := map[bool]string{true: "image/png", false: "image/jpeg"}[bytes.HasPrefix(data, pngSignature)]
		if hdr := judge(t, g, media, data); hdr.decodeBytes > g.decodeBudget(w, h) {
			t.Errorf("%s %dx%d: judged at %d MiB, over the budget; the budget must not refuse ordinary images of this size",
				name, w, h, hdr.decodeBytes/mib)
		}
	}
}

func judge(t *testing.T, g *Generator, media string, data []byte) header {
	t.Helper()
	hdr, err := decoders[media].header(bytes.NewReader(data), g.decodeBudget)
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	return hdr
}

func jpegOf(t *testing.T, m image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, m, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// What the header says decoding takes is at least what the decoder allocates, for every
// kind of file of every format, and for PNG and JPEG not much more.
func TestHeaderBoundsWhatTheDecoderAllocates(t *testing.T) {
	const w, h = 600, 400
	rgba := image.NewRGBA(image.Rect(0, 0, w, h))
	gray := image.NewGray(image.Rect(0, 0, w, h))
	pal := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White})
	enc := func(fn func(io.Writer, image.Image) error, m image.Image) []byte {
		var buf bytes.Buffer
		if err := fn(&buf, m); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	file := func(name string) []byte {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	png8 := func(colour, depth byte, interlaced, trns bool) []byte {
		return pt.PNG(pt.PNGOptions{Width: w, Height: h, Colour: colour, Depth: depth, Interlaced: interlaced, TRNS: trns})
	}
	rgbJPEG := jpegOf(t, rgba)
	// An Adobe APP14 marker with transform 0 after the frame: image/jpeg converts to RGBA.
	adobe := []byte{0xff, 0xee, 0, 14, 'A', 'd', 'o', 'b', 'e', 0, 100, 0, 0, 0, 0, 0}
	sos := bytes.Index(rgbJPEG, []byte{0xff, 0xda})
	adobeJPEG := append(append(append([]byte{}, rgbJPEG[:sos]...), adobe...), rgbJPEG[sos:]...)
	for _, tc := range []struct {
		name, media string
		data        []byte
		tight       bool // the figure must be close, not only a bound
	}{
		{"png grey 8", "image/png", png8(pt.Grey, 8, false, false), true},
		{"png grey 8 tRNS", "image/png", png8(pt.Grey, 8, false, true), true},
		{"png grey 16", "image/png", png8(pt.Grey, 16, false, false), true},
		{"png grey 16 tRNS", "image/png", png8(pt.Grey, 16, false, true), true},
		{"png grey 1", "image/png", png8(pt.Grey, 1, false, false), true},
		{"png truecolour 8", "image/png", png8(pt.Truecolour, 8, false, false), true},
		{"png truecolour 16 tRNS", "image/png", png8(pt.Truecolour, 16, false, true), true},
		{"png paletted 4", "image/png", png8(pt.Paletted, 4, false, false), true},
		{"png grey alpha 16", "image/png", png8(pt.GreyAlpha, 16, false, false), true},
		{"png rgba 8", "image/png", png8(pt.TruecolourAlpha, 8, false, false), true},
		{"png rgba 16", "image/png", png8(pt.TruecolourAlpha, 16, false, false), true},
		{"png rgba 8 interlaced", "image/png", png8(pt.TruecolourAlpha, 8, true, false), true},
		{"png grey 16 interlaced", "image/png", png8(pt.Grey, 16, true, false), true},
		{"png paletted 8 interlaced", "image/png", png8(pt.Paletted, 8, true, false), true},
		{"jpeg baseline 4:2:0", "image/jpeg", rgbJPEG, true},
		{"jpeg baseline grey", "image/jpeg", jpegOf(t, gray), true},
		{"jpeg baseline, RGB by a late Adobe marker", "image/jpeg", adobeJPEG, true},
		{"jpeg progressive 4:2:0", "image/jpeg", pt.ProgressiveJPEG(pt.JPEGOptions{Width: w, Height: h, Sampling: yuv420}), true},
		{"jpeg progressive 4:4:4", "image/jpeg", pt.ProgressiveJPEG(pt.JPEGOptions{Width: w, Height: h, Sampling: [][2]int{{1, 1}, {1, 1}, {1, 1}}}), true},
		{"jpeg progressive grey", "image/jpeg", pt.ProgressiveJPEG(pt.JPEGOptions{Width: w, Height: h, Sampling: [][2]int{{1, 1}}}), true},
		{"gif", "image/gif", enc(func(w io.Writer, m image.Image) error { return gif.Encode(w, m, nil) }, pal), false},
		{"bmp rgba", "image/bmp", enc(bmp.Encode, rgba), false},
		{"bmp paletted", "image/bmp", enc(bmp.Encode, pal), false},
		{"webp lossy", "image/webp", file("blue-purple-pink.lossy.webp"), false},
		{"webp lossless", "image/webp", file("tux.lossless.webp"), false},
		{"webp lossless, colour-indexed", "image/webp", file("gopher-doc.8bpp.lossless.webp"), false},
		{"webp lossy with alpha", "image/webp", file("yellow_rose.lossy-with-alpha.webp"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			est := exactHeader(t, tc.media, tc.data)
			dec := decoders[tc.media].decode
			var err error
			got := allocated(func() { _, err = dec(bytes.NewReader(tc.data)) })
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			t.Logf("judged %d bytes, the decoder allocated %d", est.decodeBytes, got)
			// The decoder's own state (zlib window, Huffman tables, buffers) is not counted.
			const slack = 96 << 10
			if est.decodeBytes < got-slack {
				t.Errorf("judged %d bytes, the decoder allocated %d: the header must never underestimate", est.decodeBytes, got)
			}
			if tc.tight && est.decodeBytes > got+got/10+slack {
				t.Errorf("judged %d bytes, the decoder allocated %d: the figure must follow the decoder, not guess", est.decodeBytes, got)
			}
		})
	}
}

// exactHeader judges data as Make does, except that a JPEG is read to its end, so
// whether it is RGB is known rather than assumed.
func exactHeader(t *testing.T, media string, data []byte) header {
	t.Helper()
	if media != "image/jpeg" {
		hdr, err := decoders[media].header(bytes.NewReader(data), func(int, int) int64 { return 1 << 62 })
		if err != nil {
			t.Fatalf("header: %v", err)
		}
		return hdr
	}
	s := &jpegScan{r: bufio.NewReader(bytes.NewReader(data[2:]))}
	if err := s.walk(true); err != nil {
		t.Fatal(err)
	}
	if err := s.walk(false); err != nil {
		t.Fatal(err)
	}
	return header{width: s.width, height: s.height, decodeBytes: s.decodeBytes(s.isRGB())}
}

// Scaling allocates no more than scaleBytes says.
func TestScaleBytesBoundsScaling(t *testing.T) {
	g := NewGenerator(512, 25_000_000, DefaultMaxDecodeBytes, 1)
	for _, r := range []image.Rectangle{image.Rect(0, 0, 3000, 1000), image.Rect(0, 0, 700, 2100), image.Rect(0, 0, 200, 100)} {
		src := image.NewNRGBA(r)
		for i := range src.Pix {
			src.Pix[i] = byte(i * 7)
		}
		var err error
		got := allocated(func() { _, err = g.scale(src) })
		if err != nil {
			t.Fatal(err)
		}
		est := g.scaleBytes(r.Dx(), r.Dy())
		t.Logf("%v: judged %d bytes, scaling allocated %d", r, est, got)
		if est < got {
			t.Errorf("%v: scaling allocated %d bytes, judged %d", r, got, est)
		}
	}
}

// Whether a baseline three-component JPEG is converted to RGBA decides its cost; when
// that decides the budget too, the rest of the file is read for the markers that tell.
func TestJPEGReadsOnWhenRGBDecides(t *testing.T) {
	const w, h = 1200, 800
	plain := jpegOf(t, image.NewRGBA(image.Rect(0, 0, w, h)))
	s := &jpegScan{r: bufio.NewReader(bytes.NewReader(plain[2:]))}
	if err := s.walk(true); err != nil {
		t.Fatal(err)
	}
	g := NewGenerator(512, 25_000_000, 0, 1)
	// A budget between the cost as YCbCr and the cost with an RGBA copy.
	g.MaxDecodeBytes = g.scaleBytes(w, h) + s.decodeBytes(false) + 1
	if p, err := g.Make(context.Background(), "image/jpeg", opener(plain)); p == nil || err != nil {
		t.Fatalf("YCbCr JPEG within the budget once read to the end: %v %v", p != nil, err)
	}
	sos := bytes.Index(plain, []byte{0xff, 0xda})
	adobe := []byte{0xff, 0xee, 0, 14, 'A', 'd', 'o', 'b', 'e', 0, 100, 0, 0, 0, 0, 0}
	rgb := append(append(append([]byte{}, plain[:sos]...), adobe...), plain[sos:]...)
	if p, err := g.Make(context.Background(), "image/jpeg", opener(rgb)); p != nil || err != nil {
		t.Fatalf("an RGB JPEG (converted to RGBA) over the budget got %v %v", p != nil, err)
	}
}
