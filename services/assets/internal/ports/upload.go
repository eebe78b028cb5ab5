package ports

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
	"github.com/customerapi/platform/libs/tenant"
	"github.com/customerapi/platform/services/assets/internal/app"
	"github.com/customerapi/platform/services/assets/internal/domain"
)

// Limits of a multipart upload besides the file itself.
const (
	maxFieldBytes = 4096
	maxParts      = 100
	// multipartOverhead is what an upload may carry beyond the file: the text fields,
	// part headers and boundaries.
	multipartOverhead = 1 << 20
)

// uploadForm collects the text fields of an upload.
type uploadForm struct {
	fields map[string]string
	tags   []string
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

// upload reads a multipart/form-data body part by part, streaming the file part into
// storage as it arrives (the body is never held whole), then validates the fields and
// creates the asset. Every failure after the file was staged removes it again.
func (h *Handlers) upload(c *fiber.Ctx) (err error) {
	ctx := c.UserContext()
	mt, params, perr := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if perr != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type", Path: []any{},
			Message: "Content-Type must be multipart/form-data with a boundary"})
	}
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
		return fieldIssue("file", "too_big", "the file exceeds the upload limit of "+formatBytes(h.App.MaxUploadBytes))
	}

	tenantID := tenant.From(c)
	form := &uploadForm{fields: map[string]string{}}
	var staged *app.Staged
	defer func() {
		if staged != nil { // not handed to Create: remove it
			h.App.Discard(ctx, staged)
		}
	}()
	mr := multipart.NewReader(body, params["boundary"])
	for parts := 0; ; parts++ {
		part, nerr := mr.NextPart()
		if errors.Is(nerr, io.EOF) {
			break
		}
		if nerr != nil {
			return malformed(nerr)
		}
		if parts == maxParts {
			return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "too_big", Path: []any{},
				Message: fmt.Sprintf("a multipart body may have at most %d parts", maxParts)})
		}
		name := part.FormName()
		switch {
		case name == "file":
			if staged != nil {
				form.fail("invalid_type", "Expected a single file, received several", "file")
				break
			}
			form.file = part.FileName()
			src := &readErrReader{r: part}
			st, serr := h.App.Stage(ctx, tenantID, src, part.Header.Get(fiber.HeaderContentType))
			switch {
			case serr == nil:
				staged = st
			case errors.Is(serr, app.ErrEmpty):
				form.fail("too_small", "The file must not be empty", "file")
			case errors.Is(serr, app.ErrTooLarge):
				return h.mapError(ctx, serr)
			case src.err != nil:
				return malformed(src.err)
			default:
				h.Log.ErrorContext(ctx, "storing an upload failed", slog.Any("error", serr))
				return apierror.Unavailable("asset storage is unavailable; retry").WithHeader(fiber.HeaderRetryAfter, "1")
			}
		case isField(name):
			v, ferr := readField(part)
			if body.err != nil {
				return malformed(body.err)
			}
			switch {
			case ferr != nil:
				form.fail("too_big", fmt.Sprintf("A field value may hold at most %d bytes", maxFieldBytes), name)
			case part.FileName() != "":
				form.fail("invalid_type", "Expected a text field, received a file", name)
			case name == "tags":
				form.tags = append(form.tags, v)
			default:
				if _, dup := form.fields[name]; dup {
					form.fail("invalid_type", "Expected a single value, received several", name)
				}
				form.fields[name] = v
			}
		default:
			form.fail("unrecognized_keys", fmt.Sprintf("Unrecognized field: '%s'", truncate(name)), name)
		}
		_ = part.Close()
	}
	in := form.validate()
	if staged == nil && !form.has("file") {
		form.fail("invalid_type", "Required", "file")
	}
	if len(form.issues) > 0 {
		return apierror.Validation(apierror.FieldBody, form.issues...)
	}
	st := staged
	staged = nil // Create removes it on failure
	a, cerr := h.App.Create(ctx, in, st)
	if cerr != nil {
		return h.mapError(ctx, cerr)
	}
	return h.respond(c, fiber.StatusCreated, a)
}

func (f *uploadForm) has(path string) bool {
	for _, is := range f.issues {
		if len(is.Path) > 0 && is.Path[0] == path {
			return true
		}
	}
	return false
}

func malformed(err error) *apierror.Error {
	return apierror.Validation(apierror.FieldBody, apierror.Issue{Code: "invalid_type", Path: []any{},
		Message: "malformed multipart body: " + err.Error()})
}

func isField(name string) bool {
	switch name {
	case "name", "purpose", "type", "tags", "hidden", "parentAssetId":
		return true
	}
	return false
}

func readField(part *multipart.Part) (string, error) {
	b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxFieldBytes {
		_, _ = io.Copy(io.Discard, part)
		return "", errors.New("too big")
	}
	return string(b), nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// textProblem describes why a name or purpose is not acceptable, or "".
func textProblem(s string, minLen, maxLen int) string {
	n := utf8.RuneCountInString(s)
	switch {
	case !utf8.ValidString(s):
		return "String must be valid UTF-8"
	case n < minLen:
		return fmt.Sprintf("String must contain at least %d character(s)", minLen)
	case n > maxLen:
		return fmt.Sprintf("String must contain at most %d character(s)", maxLen)
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) >= 0:
		return "String must not contain control characters"
	}
	return ""
}

func codeFor(problem string) string {
	switch {
	case strings.Contains(problem, "at least"):
		return "too_small"
	case strings.Contains(problem, "at most"):
		return "too_big"
	}
	return "invalid_string"
}

// validate checks the fields and returns the asset's input; problems go to f.issues.
func (f *uploadForm) validate() app.NewAsset {
	in := app.NewAsset{Tags: f.tags}
	name, given := f.fields["name"]
	if !given {
		name = f.file // the file's own name when none is given
		if utf8.RuneCountInString(name) > domain.MaxNameLen {
			name = string([]rune(name)[:domain.MaxNameLen])
		}
	}
	switch p := textProblem(name, 1, domain.MaxNameLen); {
	case f.has("name"):
	case !given && name == "":
		f.fail("invalid_type", "Required (or send the file with a file name)", "name")
	case p != "":
		f.fail(codeFor(p), p, "name")
	case strings.TrimSpace(name) == "":
		f.fail("too_small", "String must not be blank", "name")
	}
	in.Name = name
	in.Purpose = f.fields["purpose"]
	if p := textProblem(in.Purpose, 0, domain.MaxPurposeLen); p != "" && !f.has("purpose") {
		f.fail(codeFor(p), p, "purpose")
	}
	typ, ok := f.fields["type"]
	switch {
	case f.has("type"):
	case !ok:
		f.fail("invalid_type", "Required", "type")
	case !domain.IsType(typ):
		f.fail("invalid_enum_value", fmt.Sprintf("Invalid enum value. Expected '%s', received '%s'",
			strings.Join(domain.Types, "' | '"), truncate(typ)), "type")
	}
	in.Type = typ
	if v, ok := f.fields["hidden"]; ok && !f.has("hidden") {
		switch strings.ToLower(v) {
		case "true", "1":
			in.Hidden = true
		case "false", "0":
		default:
			f.fail("invalid_type", "Expected boolean (true or false), received '"+truncate(v)+"'", "hidden")
		}
	}
	if v, ok := f.fields["parentAssetId"]; ok && !f.has("parentAssetId") {
		if p := textProblem(v, 1, 64); p != "" {
			f.fail(codeFor(p), p, "parentAssetId")
		} else {
			in.ParentID = &v
		}
	}
	if len(f.tags) > domain.MaxTags {
		f.fail("too_big", fmt.Sprintf("Array must contain at most %d element(s)", domain.MaxTags), "tags")
	}
	for i, t := range f.tags {
		if p := domain.TagProblem(t); p != "" {
			f.fail(codeFor(p), p, "tags", i)
		}
	}
	if i := domain.DuplicateTag(f.tags); i >= 0 {
		f.fail("custom", "Tags must be unique (ignoring case)", "tags", i)
	}
	return in
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
