package preview

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
)

// header is what an image's header tells before a pixel is decoded: its size and the
// memory the Go decoder will allocate for it. The figures follow the decoders' own
// allocations (image/png, image/jpeg, image/gif, x/image/webp, x/image/bmp); they are
// upper bounds, never estimates from the file's size.
type header struct {
	width, height int
	// decodeBytes is what decoding the image allocates, bitmaps and working buffers.
	decodeBytes int64
}

// headerFunc reads an image's header from r. budget gives, for an image's size, the
// decode bytes the caller accepts; a reader may use it to read further only when the
// answer is needed to decide (see jpegHeader).
type headerFunc func(r io.Reader, budget func(w, h int) int64) (header, error)

// ---------------------------------------------------------------- PNG

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// pngHeader reads the IHDR chunk (size, bit depth, colour type, interlacing) and the
// chunks before the first IDAT (a tRNS chunk widens grey and truecolour images).
//
// image/png decodes into Gray, Gray16, RGBA, RGBA64, NRGBA, NRGBA64 or Paletted, by
// colour type and depth: 1 to 8 bytes per pixel (a 16-bit image is 8 bytes per pixel
// RGBA64). An interlaced (Adam7) image is decoded pass by pass: each pass is an image of
// its own, merged into a full-size one, so the passes add up to a second bitmap.
func pngHeader(r io.Reader, _ func(w, h int) int64) (header, error) {
	br := bufio.NewReaderSize(r, 512)
	var b [8 + 8 + 13 + 4]byte // signature, IHDR length and type, IHDR data, CRC
	if _, err := io.ReadFull(br, b[:]); err != nil {
		return header{}, fmt.Errorf("png: read header: %w", err)
	}
	if !bytes.Equal(b[:8], pngSignature) || binary.BigEndian.Uint32(b[8:12]) != 13 || string(b[12:16]) != "IHDR" {
		return header{}, errors.New("png: the file does not start with an IHDR chunk")
	}
	w, h := binary.BigEndian.Uint32(b[16:20]), binary.BigEndian.Uint32(b[20:24])
	depth, colour, interlace := b[24], b[25], b[28]
	if w == 0 || h == 0 || w > math.MaxInt32 || h > math.MaxInt32 {
		return header{}, fmt.Errorf("png: bad dimensions %dx%d", w, h)
	}
	if interlace > 1 {
		return header{}, fmt.Errorf("png: bad interlace method %d", interlace)
	}
	bits, ok := pngBitsPerPixel(colour, depth)
	if !ok {
		return header{}, fmt.Errorf("png: bad colour type %d with bit depth %d", colour, depth)
	}
	transparent := false
	if colour == 0 || colour == 2 { // grey and truecolour decode wider with a tRNS chunk
		var err error
		if transparent, err = pngHasTRNS(br); err != nil {
			return header{}, err
		}
	}
	pixels := int64(w) * int64(h)
	n := pixels * pngDecodedBytesPerPixel(colour, depth, transparent)
	if interlace == 1 {
		n *= 2 // the full image, and the seven pass images that together cover it once more
	}
	n += 2 * (1 + (int64(bits)*int64(w)+7)/8) // the current and previous row
	return header{width: int(w), height: int(h), decodeBytes: n}, nil
}

// pngBitsPerPixel is a pixel's size in the file, false for a combination PNG forbids.
func pngBitsPerPixel(colour, depth byte) (int, bool) {
	channels := map[byte]int{0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
	switch {
	case channels == 0:
		return 0, false
	case colour == 0 && (depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16),
		colour == 3 && (depth == 1 || depth == 2 || depth == 4 || depth == 8),
		(colour == 2 || colour == 4 || colour == 6) && (depth == 8 || depth == 16):
		return channels * int(depth), true
	}
	return 0, false
}

// pngDecodedBytesPerPixel is the size of a pixel of the image image/png returns.
func pngDecodedBytesPerPixel(colour, depth byte, transparent bool) int64 {
	switch {
	case colour == 3:
		return 1 // Paletted
	case colour == 0 && !transparent:
		if depth == 16 {
			return 2 // Gray16
		}
		return 1 // Gray
	case depth == 16:
		return 8 // RGBA64, NRGBA64
	default:
		return 4 // RGBA, NRGBA
	}
}

// pngHasTRNS reads the chunks up to the first IDAT (image/png refuses a tRNS chunk after
// it) and reports whether one is a tRNS chunk. Skipped chunks are read, not kept.
func pngHasTRNS(br *bufio.Reader) (bool, error) {
	var b [8]byte
	for {
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return false, fmt.Errorf("png: read chunk: %w", err)
		}
		length, typ := binary.BigEndian.Uint32(b[:4]), string(b[4:8])
		switch {
		case length > math.MaxInt32:
			return false, errors.New("png: bad chunk length")
		case typ == "IDAT":
			return false, nil
		case typ == "tRNS":
			return true, nil
		}
		if _, err := br.Discard(int(length) + 4); err != nil { // the data and its CRC
			return false, fmt.Errorf("png: skip %s chunk: %w", typ, err)
		}
	}
}

// ---------------------------------------------------------------- JPEG

// JPEG markers image/jpeg acts on.
const (
	jpegSOF0  = 0xc0 // baseline
	jpegSOF1  = 0xc1 // extended sequential
	jpegSOF2  = 0xc2 // progressive
	jpegDHT   = 0xc4
	jpegRST0  = 0xd0
	jpegRST7  = 0xd7
	jpegSOI   = 0xd8
	jpegEOI   = 0xd9
	jpegSOS   = 0xda
	jpegDQT   = 0xdb
	jpegDRI   = 0xdd
	jpegAPP0  = 0xe0
	jpegAPP14 = 0xee
	jpegAPP15 = 0xef
	jpegCOM   = 0xfe
)

// jpegScan walks a JPEG's markers the way image/jpeg does and keeps what decides the
// decoder's allocations: the frame (SOF: size, components and their sampling factors,
// progressive or not) and the APP0 (JFIF) and APP14 (Adobe) markers that decide whether a
// three-component image is converted to RGBA at the end.
type jpegScan struct {
	r             *bufio.Reader
	width, height int
	nComp         int
	progressive   bool
	comp          [4]struct {
		id   byte
		h, v int
	}
	jfif, adobe    bool
	adobeTransform byte
}

// jpegHeader reads a JPEG up to its first scan and judges what decoding takes.
//
// image/jpeg allocates, in units of 8×8 blocks (the MCU grid rounded up, per component
// by its sampling factors): the image itself, 64 bytes per block (Gray or YCbCr, plus a
// plane for a fourth component); for a progressive image also every block's 64
// coefficients as int32 until the last scan, 256 bytes per block; and a CMYK or RGBA
// copy of 4 bytes per pixel at the end for four components, or for three that are RGB.
// Whether three components are RGB depends on APP0 and APP14 markers anywhere in the file,
// so when that is what puts the image over budget the rest of the file is read for them
// (markers only: scan data is skipped, nothing is kept).
func jpegHeader(r io.Reader, budget func(w, h int) int64) (header, error) {
	s := &jpegScan{r: bufio.NewReaderSize(r, 4096)}
	var soi [2]byte
	if _, err := io.ReadFull(s.r, soi[:]); err != nil || soi[0] != 0xff || soi[1] != jpegSOI {
		return header{}, errors.New("jpeg: missing SOI marker")
	}
	if err := s.walk(true); err != nil {
		return header{}, err
	}
	if s.width == 0 || s.height == 0 {
		return header{}, errors.New("jpeg: the frame has no size")
	}
	hdr := header{width: s.width, height: s.height, decodeBytes: s.decodeBytes(true)}
	if s.nComp == 3 {
		limit := budget(s.width, s.height)
		if hdr.decodeBytes > limit && s.decodeBytes(false) <= limit {
			// A failure to read the rest leaves the conservative figure.
			if err := s.walk(false); err == nil {
				hdr.decodeBytes = s.decodeBytes(s.isRGB())
			}
		}
	}
	return hdr, nil
}

// decodeBytes is what image/jpeg allocates for the frame; rgb says whether a
// three-component image is converted to RGBA.
func (s *jpegScan) decodeBytes(rgb bool) int64 {
	h0, v0 := s.comp[0].h, s.comp[0].v
	mxx := int64((s.width + 8*h0 - 1) / (8 * h0))
	myy := int64((s.height + 8*v0 - 1) / (8 * v0))
	var hv int64
	for _, c := range s.comp[:s.nComp] {
		hv += int64(c.h * c.v)
	}
	blocks := mxx * myy * hv
	n := 64 * blocks
	if s.progressive {
		n += 64 * 4 * blocks // one [64]int32 per block
	}
	if s.nComp == 4 || (s.nComp == 3 && rgb) {
		n += 4 * int64(s.width) * int64(s.height)
	}
	return n
}

// isRGB is image/jpeg's test for a three-component image stored as RGB.
func (s *jpegScan) isRGB() bool {
	if s.jfif {
		return false
	}
	if s.adobe && s.adobeTransform == 0 {
		return true
	}
	return s.comp[0].id == 'R' && s.comp[1].id == 'G' && s.comp[2].id == 'B'
}

// walk reads segments until the first SOS (toSOS) or the EOI marker, keeping the frame
// and the APP0 and APP14 markers; bytes between segments, scan data above all, are
// skipped as image/jpeg skips them.
func (s *jpegScan) walk(toSOS bool) error {
	for {
		m, err := s.marker()
		if err != nil {
			return fmt.Errorf("jpeg: %w", err)
		}
		if m == jpegEOI {
			if toSOS {
				return errors.New("jpeg: missing SOS marker")
			}
			return nil
		}
		if jpegRST0 <= m && m <= jpegRST7 {
			continue // no length: a stray restart marker
		}
		var l [2]byte
		if _, err := io.ReadFull(s.r, l[:]); err != nil {
			return fmt.Errorf("jpeg: read segment length: %w", err)
		}
		n := int(l[0])<<8 | int(l[1]) - 2
		if n < 0 {
			return errors.New("jpeg: short segment length")
		}
		switch {
		case m == jpegSOF0 || m == jpegSOF1 || m == jpegSOF2:
			err = s.frame(m, n)
		case m == jpegSOS:
			if s.nComp == 0 {
				return errors.New("jpeg: missing SOF marker")
			}
			err = s.skip(n) // the scan header; its data follows and is skipped as it comes
			if toSOS {
				return err
			}
		case m == jpegAPP0:
			err = s.app(n, 5, func(b []byte) { s.jfif = string(b) == "JFIF\x00" })
		case m == jpegAPP14:
			err = s.app(n, 12, func(b []byte) {
				if string(b[:5]) == "Adobe" {
					s.adobe, s.adobeTransform = true, b[11]
				}
			})
		case m == jpegDHT || m == jpegDQT || m == jpegDRI || (jpegAPP0 <= m && m <= jpegAPP15) || m == jpegCOM:
			err = s.skip(n)
		default:
			return fmt.Errorf("jpeg: unsupported marker %#x", m)
		}
		if err != nil {
			return err
		}
	}
}

// marker finds the next marker: past any bytes that are not one, and past fill bytes.
func (s *jpegScan) marker() (byte, error) {
	for {
		for {
			_, err := s.r.ReadSlice(0xff)
			if err == nil {
				break
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return 0, err
			}
		}
		m, err := s.r.ReadByte()
		for err == nil && m == 0xff {
			m, err = s.r.ReadByte()
		}
		if err != nil {
			return 0, err
		}
		if m != 0 { // 0xff 0x00 is an escaped byte of scan data
			return m, nil
		}
	}
}

// frame reads a start-of-frame segment of n bytes.
func (s *jpegScan) frame(marker byte, n int) error {
	if s.nComp != 0 {
		return errors.New("jpeg: multiple SOF markers")
	}
	var b [6 + 3*4]byte
	if n != 6+3*1 && n != 6+3*3 && n != 6+3*4 {
		return errors.New("jpeg: unsupported number of components")
	}
	if _, err := io.ReadFull(s.r, b[:n]); err != nil {
		return fmt.Errorf("jpeg: read SOF: %w", err)
	}
	if b[0] != 8 {
		return errors.New("jpeg: unsupported precision")
	}
	nComp := (n - 6) / 3
	if int(b[5]) != nComp {
		return errors.New("jpeg: SOF has the wrong length")
	}
	s.height, s.width = int(b[1])<<8|int(b[2]), int(b[3])<<8|int(b[4])
	s.progressive = marker == jpegSOF2
	for i := 0; i < nComp; i++ {
		h, v := int(b[7+3*i]>>4), int(b[7+3*i]&0x0f)
		if h < 1 || h > 4 || v < 1 || v > 4 || h == 3 || v == 3 {
			return errors.New("jpeg: unsupported sampling factors")
		}
		if nComp == 1 {
			h, v = 1, 1 // image/jpeg treats a single component as unsampled
		}
		s.comp[i].id, s.comp[i].h, s.comp[i].v = b[6+3*i], h, v
	}
	s.nComp = nComp
	return nil
}

// app reads an application segment of n bytes whose first want bytes see inspects.
func (s *jpegScan) app(n, want int, see func([]byte)) error {
	if n < want {
		return s.skip(n)
	}
	var b [12]byte
	if _, err := io.ReadFull(s.r, b[:want]); err != nil {
		return fmt.Errorf("jpeg: read APP segment: %w", err)
	}
	see(b[:want])
	return s.skip(n - want)
}

func (s *jpegScan) skip(n int) error {
	if _, err := s.r.Discard(n); err != nil {
		return fmt.Errorf("jpeg: skip segment: %w", err)
	}
	return nil
}

// ---------------------------------------------------------------- GIF, WebP, BMP

// configHeader judges a format from its image.Config: bytesPerPixel gives what its
// decoder allocates per pixel of the canvas.
func configHeader(config func(io.Reader) (image.Config, error), bytesPerPixel func(image.Config) int64) headerFunc {
	return func(r io.Reader, _ func(w, h int) int64) (header, error) {
		cfg, err := config(r)
		if err != nil {
			return header{}, err
		}
		return header{width: cfg.Width, height: cfg.Height,
			decodeBytes: int64(cfg.Width) * int64(cfg.Height) * bytesPerPixel(cfg)}, nil
	}
}

// gifBytesPerPixel: image/gif decodes the first frame (within the canvas) as Paletted,
// and an interlaced frame once more to reorder its rows.
func gifBytesPerPixel(image.Config) int64 { return 2 }

// bmpBytesPerPixel: x/image/bmp decodes paletted files as Paletted, others as RGBA or
// NRGBA.
func bmpBytesPerPixel(cfg image.Config) int64 {
	if _, ok := cfg.ColorModel.(color.Palette); ok {
		return 1
	}
	return 4
}

// webpHeader tells the three kinds of WebP apart by their first chunk, since
// x/image/webp's config does not: lossy (VP8: YCbCr 4:2:0 on a 16-pixel grid, 2 bytes
// per pixel covers it), lossless (VP8L: NRGBA and a transformed copy, 8), and extended
// (VP8X: may hold either, plus an alpha plane itself coded losslessly, 11).
func webpHeader(decodeConfig func(io.Reader) (image.Config, error)) headerFunc {
	return func(r io.Reader, budget func(w, h int) int64) (header, error) {
		var head [16]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return header{}, fmt.Errorf("webp: read header: %w", err)
		}
		perPixel := int64(11)
		switch string(head[12:16]) {
		case "VP8 ":
			perPixel = 2
		case "VP8L":
			perPixel = 8
		}
		return configHeader(decodeConfig, func(image.Config) int64 { return perPixel })(
			io.MultiReader(bytes.NewReader(head[:]), r), budget)
	}
}
