package ports

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/inflight"
	"github.com/customerapi/platform/libs/request"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/services/assets/internal/app"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

// Limits of a multipart upload besides the file itself: of its transport, not of the
// fields' values (the document's AssetUpload judges those).
const (
	maxFieldBytes = 4096
	maxParts      = 100
	// multipartOverhead is what an upload may carry beyond the file: the text fields,
	// part headers and boundaries.
	multipartOverhead = 1 << 20
)

// uploadForm collects an upload's parts: each field's values as text, for the document
// to judge, and the problems only the handler can see.
type uploadForm struct {
	values map[string][]string
	issues []apierror.Issue
	file   string // the file part's own file name
}

func (f *uploadForm) fail(code, message string, path ...any) {
	f.issues = append(f.issues, apierror.Issue{Code: code, Message: message, Path: path})
}

// readErrReader remembers whether reading the upload failed, which tells a malformed or
// abandoned upload (the client's doing) from a storage failure (ours).
type readErrReader struct {
	r   io.Reader
	err error
}

func (r *readErrReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// closeWatcher passes a multipart body through and notes whether its close delimiter
// (the line "--boundary--") went by. multipart.Reader reports a body that stops at a
// boundary line, or in the headers of a part, with the io.EOF of a complete one, so
// without it a truncated upload whose parts all arrived whole would be stored.
type closeWatcher struct {
	r     io.Reader
	delim []byte // "\n--" + boundary + "--"
	tail  []byte // the last len(delim)-1 bytes read; the body starts a line
	seen  bool
}

func newCloseWatcher(r io.Reader, boundary string) *closeWatcher {
	delim := []byte("\n--" + boundary + "--")
	return &closeWatcher{r: r, delim: delim, tail: append(make([]byte, 0, 2*len(delim)), '\n')}
}

func (w *closeWatcher) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n == 0 || w.seen {
		return n, err
	}
	keep := len(w.delim) - 1
	// The delimiter may straddle two reads: look at the end of the last one with the
	// start of this one, then at this one.
	w.tail = append(w.tail, p[:min(n, keep)]...)
	w.seen = bytes.Contains(w.tail, w.delim) || bytes.Contains(p[:n], w.delim)
	if n >= keep {
		w.tail = append(w.tail[:0], p[n-keep:n]...)
	} else if len(w.tail) > keep {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-keep:]...)
	}
	return n, err
}

// upload reads a multipart/form-data body part by part, streaming the file part into
// storage as it arrives (the body is never held whole), then has the document judge the
// fields and creates the asset. Every failure after the file was staged removes it again.
func (h *Handlers) upload(c *fiber.Ctx) (err error) {
	ctx := c.UserContext()
	mt, params, perr := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if perr != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type", Path: []any{},
			Message: "Content-Type must be multipart/form-data with a boundary"})
	}
	release, refusal := h.admit(c)
	if refusal != nil {
		return refusal
	}
	defer release() // however the upload ends: stored, refused, failed, abandoned, timed out
	limit := h.App.MaxUploadBytes + multipartOverhead
	// Uploads may take longer than the server's read timeout for ordinary requests.
	_ = c.Context().SetReadDeadline(time.Now().Add(h.TransferTimeout))
	body := &readErrReader{r: bodyReader(c)}
	defer func() {
		if err != nil {
			// Read what is left, up to a bound, before answering: a client (or the
			// gateway) still sending the body then reads the answer instead of a reset
			// connection. Past the bound the connection is closed.
			_, _ = io.CopyN(io.Discard, body, limit)
		}
	}()
	if cl := c.Request().Header.ContentLength(); cl > 0 && int64(cl) > limit {
		return h.tooLarge()
	}

	form := &uploadForm{values: map[string][]string{}}
	var staged *app.Staged
	defer func() {
		if staged != nil { // not handed to Create: remove it
			h.App.Discard(ctx, staged)
		}
	}()
	closing := newCloseWatcher(body, params["boundary"])
	mr := multipart.NewReader(closing, params["boundary"])
	for parts := 0; ; parts++ {
		part, nerr := mr.NextPart()
		if errors.Is(nerr, io.EOF) && closing.seen {
			break // every part is in
		}
		if nerr != nil {
			return readFailure(nerr)
		}
		if parts == maxParts {
			return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "too_big", Path: []any{},
				Message: fmt.Sprintf("a multipart body may have at most %d parts", maxParts)})
		}
		name := part.FormName()
		if name == "file" {
			form.values[name] = append(form.values[name], "") // the document counts them
			if staged != nil {
				_ = part.Close() // a second file: the document refuses it; its bytes are skipped
				continue
			}
			form.file = part.FileName()
			src := &readErrReader{r: part}
			st, serr := h.App.Stage(ctx, tenant.From(c), src, part.Header.Get(fiber.HeaderContentType))
			switch {
			case serr == nil:
				staged = st
			case errors.Is(serr, app.ErrEmpty):
				form.fail("too_small", "The file must not be empty", "file")
			case errors.Is(serr, app.ErrTooLarge):
				return h.tooLarge()
			case src.err != nil:
				return readFailure(src.err)
			default:
				h.Log.ErrorContext(ctx, "storing an upload failed", slog.Any("error", serr))
				return apierror.Unavailable("asset storage is unavailable; retry").WithHeader(fiber.HeaderRetryAfter, "1")
			}
			_ = part.Close()
			continue
		}
		// A field: its value is text for the document to judge (which refuses a name it
		// does not know).
		path := []any{name}
		if name == "tags" {
			path = append(path, len(form.values[name]))
		}
		v, ferr := readField(part)
		switch {
		case errors.Is(ferr, errFieldTooBig):
			form.fail("too_big", fmt.Sprintf("A field value may hold at most %d bytes", maxFieldBytes), path...)
		case ferr != nil:
			return readFailure(ferr)
		case part.FileName() != "":
			form.fail("invalid_type", "Expected a text field, received a file", path...)
		case !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0:
			form.fail("invalid_string", "Expected UTF-8 text without NUL characters", path...)
		default:
			form.values[name] = append(form.values[name], v)
			_ = part.Close()
			continue
		}
		// Not read as text (the issue says why): the document judges only its name, and a
		// tag keeps its place so that the later tags keep their indexes.
		if name == "tags" {
			form.values[name] = append(form.values[name], "")
		} else if _, ok := form.values[name]; !ok {
			form.values[name] = nil
		}
		_ = part.Close()
	}
	in := form.judge(c, h.Document)
	if len(form.issues) > 0 {
		return apierror.Validation(apierror.FieldBody, form.issues...)
	}
	if staged == nil {
		return fileIssue("invalid_type", "Required") // the document requires it
	}
	st := staged
	staged = nil // Create removes it on failure
	a, cerr := h.App.Create(ctx, in, st)
	var media *app.MediaError
	var undecodable *app.UndecodableError
	switch {
	case errors.As(cerr, &media):
		return fileIssue("invalid_type", media.Error())
	case errors.As(cerr, &undecodable):
		return fileIssue("invalid_type", undecodable.Error())
	case errors.Is(cerr, domain.ErrUploadExpired):
		return apierror.Unavailable("the upload took too long to complete; retry")
	case cerr != nil:
		return cerr
	}
	return h.respond(c, fiber.StatusCreated, a)
}

// uploadRetryAfter is the Retry-After of an upload refused by a cap, in seconds: a slot
// frees when any upload of the tenant (or the process) ends, which takes seconds to minutes.
const uploadRetryAfter = "5"

// admit takes an upload slot for the caller's tenant, or answers 429 before a byte of the
// body is read. The refused connection is closed rather than drained, so a refused client
// still sending holds nothing.
func (h *Handlers) admit(c *fiber.Ctx) (release func(), refusal error) {
	if h.Uploads == nil {
		return func() {}, nil
	}
	release, err := h.Uploads.Acquire(tenant.From(c))
	if err == nil {
		return release, nil
	}
	detail := fmt.Sprintf("too many uploads of your tenant at once (at most %d); retry after %s s", h.Uploads.PerKey(), uploadRetryAfter)
	if errors.Is(err, inflight.ErrTotalFull) {
		detail = "too many uploads in progress; retry after " + uploadRetryAfter + " s"
	}
	c.Context().SetConnectionClose()
	return nil, apierror.TooManyAtOnce(detail, uploadRetryAfter)
}

func malformed(err error) *apierror.Error {
	return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type", Path: []any{},
		Message: "malformed multipart body: " + err.Error()})
}

func truncated() *apierror.Error {
	return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type", Path: []any{},
		Message: "malformed multipart body: it ends before its closing boundary"})
}

// readFailure is the answer to a body that could not be read to its closing boundary:
// it stopped early (in a part, or between parts), or it is not multipart.
func readFailure(err error) *apierror.Error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return truncated()
	}
	return malformed(err)
}

var errFieldTooBig = errors.New("field value too big")

func readField(part *multipart.Part) (string, error) {
	b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxFieldBytes {
		if _, err := io.Copy(io.Discard, part); err != nil {
			return "", err
		}
		return "", errFieldTooBig
	}
	return string(b), nil
}

// judge has the document judge the fields, applies the rules it cannot state, and
// returns the asset's input; every problem goes to f.issues.
func (f *uploadForm) judge(c *fiber.Ctx, doc *request.Document) app.NewAsset {
	// The name defaults to the file's own name, judged as if it had been sent.
	_, named := f.values["name"]
	if !named && f.file != "" && !f.failed("name") {
		f.values["name"] = []string{f.file}
	}
	own := slices.Clone(f.issues)
	for _, is := range doc.FormIssues(c, f.values) {
		// One issue a place: the handler's says more of a value it could not read.
		if is.Code == "unrecognized_keys" || !failedAt(own, is.Path) {
			f.issues = append(f.issues, is)
		}
	}
	if _, ok := f.values["name"]; !ok && !f.failed("name") {
		f.fail("invalid_type", "Required (or send the file with a file name)", "name")
	}
	tags := f.values["tags"]
	if i := domain.DuplicateTag(tags); i >= 0 { // a tag not read is "", which no tag equals
		f.fail("custom", "Tags must be unique (ignoring case)", "tags", i)
	}
	in := app.NewAsset{Name: f.one("name"), Purpose: f.one("purpose"), Type: f.one("type"), Tags: tags}
	hidden := f.one("hidden") // the document let only true, false, 1 and 0 through
	in.Hidden = hidden == "1" || strings.EqualFold(hidden, "true")
	if p := f.one("parentAssetId"); p != "" {
		in.ParentID = &p
	}
	return in
}

// one is the first value of a field, "" when it was not sent.
func (f *uploadForm) one(name string) string {
	if v := f.values[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// failed reports whether an issue of the handler's own is about the field.
func (f *uploadForm) failed(name string) bool {
	for _, is := range f.issues {
		if len(is.Path) > 0 && is.Path[0] == name {
			return true
		}
	}
	return false
}

// failedAt reports whether one of issues is at path.
func failedAt(issues []apierror.Issue, path []any) bool {
	for _, is := range issues {
		if slices.Equal(is.Path, path) {
			return true
		}
	}
	return false
}

// fileIssue is a 400 about the file part.
func fileIssue(code, message string) *apierror.Error {
	return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: code, Message: message, Path: []any{"file"}})
}

// tooLarge is the answer to a file past the upload limit.
func (h *Handlers) tooLarge() *apierror.Error {
	return fileIssue("too_big", "the file exceeds the upload limit of "+formatBytes(h.App.MaxUploadBytes))
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
