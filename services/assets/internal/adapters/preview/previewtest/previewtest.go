// Package previewtest writes image files the standard encoders cannot: 16-bit and
// Adam7-interlaced PNGs and progressive JPEGs, small on disk and large when decoded, for
// tests of the preview memory budget.
package previewtest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
)

// PNG colour types.
const (
	Grey            = 0
	Truecolour      = 2
	Paletted        = 3
	GreyAlpha       = 4
	TruecolourAlpha = 6
)

// PNGOptions describe a PNG whose pixels are all zero (black, or transparent with alpha).
type PNGOptions struct {
	Width, Height int
	Colour, Depth byte
	// Interlaced writes the pixels as the seven Adam7 passes.
	Interlaced bool
	// TRNS adds a tRNS chunk (grey and truecolour only): the colour zero is transparent.
	TRNS bool
}

// adam7 are the passes of Adam7 interlacing: offsets and steps in x and y.
var adam7 = [7]struct{ x0, dx, y0, dy int }{
	{0, 8, 0, 8}, {4, 8, 0, 8}, {0, 4, 4, 8}, {2, 4, 0, 4}, {0, 2, 2, 4}, {1, 2, 0, 2}, {0, 1, 1, 2},
}

// PNG writes the image o describes. Its rows compress to almost nothing, so a file of a
// few hundred KiB can hold hundreds of MiB of pixels.
func PNG(o PNGOptions) []byte {
	channels := map[byte]int{Grey: 1, Truecolour: 3, Paletted: 1, GreyAlpha: 2, TruecolourAlpha: 4}[o.Colour]
	bits := channels * int(o.Depth)
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(o.Width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(o.Height))
	ihdr[8], ihdr[9] = o.Depth, o.Colour
	if o.Interlaced {
		ihdr[12] = 1
	}
	chunk(&out, "IHDR", ihdr)
	if o.Colour == Paletted {
		chunk(&out, "PLTE", []byte{0, 0, 0})
	}
	if o.TRNS {
		chunk(&out, "tRNS", make([]byte, map[byte]int{Grey: 2, Truecolour: 6}[o.Colour]))
	}
	var idat bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&idat, zlib.BestSpeed)
	zero := make([]byte, 1<<16)
	rows := func(w, h int) { // each row: filter type 0, then zero pixels
		n := int64(h) * (1 + (int64(bits)*int64(w)+7)/8)
		for ; n > 0; n -= int64(len(zero)) {
			_, _ = zw.Write(zero[:min(n, int64(len(zero)))])
		}
	}
	if o.Interlaced {
		for _, p := range adam7 {
			w, h := (o.Width-p.x0+p.dx-1)/p.dx, (o.Height-p.y0+p.dy-1)/p.dy
			if w > 0 && h > 0 {
				rows(w, h)
			}
		}
	} else {
		rows(o.Width, o.Height)
	}
	_ = zw.Close()
	chunk(&out, "IDAT", idat.Bytes())
	chunk(&out, "IEND", nil)
	return out.Bytes()
}

func chunk(out *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	out.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	out.WriteString(typ)
	out.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	out.Write(n[:])
}

// JPEGOptions describe a progressive JPEG of one DC scan, every block zero (mid grey).
type JPEGOptions struct {
	Width, Height int
	// Sampling is each component's horizontal and vertical sampling factors: one entry
	// for grey, three for YCbCr ({{2, 2}, {1, 1}, {1, 1}} is 4:2:0).
	Sampling [][2]int
	// HeaderOnly ends the file after the scan header, without scan data.
	HeaderOnly bool
}

// ProgressiveJPEG writes the image o describes: SOF2, one DC scan coding each block as
// a single bit. image/jpeg keeps 256 bytes of coefficients per block until the end, so
// each bit of the file costs a quarter KiB (plus the 64-byte block itself) to decode.
func ProgressiveJPEG(o JPEGOptions) []byte {
	var out bytes.Buffer
	out.Write([]byte{0xff, 0xd8})
	dqt := append([]byte{0}, bytes.Repeat([]byte{1}, 64)...)
	segment(&out, 0xdb, dqt)
	sof := []byte{8, byte(o.Height >> 8), byte(o.Height), byte(o.Width >> 8), byte(o.Width), byte(len(o.Sampling))}
	hmax, vmax := 1, 1
	for i, s := range o.Sampling {
		sof = append(sof, byte(i+1), byte(s[0]<<4|s[1]), 0)
		hmax, vmax = max(hmax, s[0]), max(vmax, s[1])
	}
	segment(&out, 0xc2, sof)
	// A DC table with one code, "0", for category 0 (a difference of zero).
	dht := append([]byte{0x00, 1}, make([]byte, 15)...)
	segment(&out, 0xc4, append(dht, 0))
	sos := []byte{byte(len(o.Sampling))}
	for i := range o.Sampling {
		sos = append(sos, byte(i+1), 0x00)
	}
	segment(&out, 0xda, append(sos, 0, 0, 0)) // Ss=0, Se=0, Ah=Al=0: DC first scan
	if !o.HeaderOnly {
		blocks := 0
		if len(o.Sampling) == 1 {
			blocks = ((o.Width + 7) / 8) * ((o.Height + 7) / 8)
		} else {
			mcus := ((o.Width + 8*hmax - 1) / (8 * hmax)) * ((o.Height + 8*vmax - 1) / (8 * vmax))
			perMCU := 0
			for _, s := range o.Sampling {
				perMCU += s[0] * s[1]
			}
			blocks = mcus * perMCU
		}
		out.Write(make([]byte, blocks/8))
		if r := blocks % 8; r > 0 {
			out.WriteByte(byte(0xff >> r)) // the last bits are zero, the padding ones
		}
	}
	out.Write([]byte{0xff, 0xd9})
	return out.Bytes()
}

func segment(out *bytes.Buffer, marker byte, data []byte) {
	out.Write([]byte{0xff, marker, byte((len(data) + 2) >> 8), byte(len(data) + 2)})
	out.Write(data)
}
