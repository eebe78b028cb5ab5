// Package docs serves what a person reads in a browser without a key: the API reference
// at /docs (Redoc, bundled from npm at build time by `make docs-assets` and embedded, so
// nothing loads from a CDN) and a short page for each error `type` URL,
// /errors/<code in lower case>.
package docs

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/customerapi/platform/libs/apierror"
)

//go:embed assets/redoc.standalone.js
var redocJS []byte

//go:embed assets/redoc.standalone.js.LICENSE.txt
var redocLicense []byte

// csp lets the page run only its own script (Redoc's search worker is a blob) and reach
// only this origin: no fonts, logos or analytics from elsewhere.
const csp = "default-src 'none'; script-src 'self' blob:; worker-src 'self' blob:; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const indexHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Customer API reference</title>
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="/v0/openapi.json" hide-download-button="false" path-in-middle-panel="true" required-props-first="true"></redoc>
<script src="/docs/redoc.standalone.js"></script>
</body>
</html>
`

// Register mounts /docs, its assets and /errors/:code on app; baseURL is the public base
// URL of the error type URLs.
func Register(app *fiber.App, baseURL string) error {
	pages, err := renderErrorPages(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return err
	}
	app.Get("/docs", func(c *fiber.Ctx) error {
		headers(c, "text/html; charset=utf-8", "no-cache")
		return c.SendString(indexHTML)
	})
	app.Get("/docs/redoc.standalone.js", func(c *fiber.Ctx) error {
		headers(c, "text/javascript; charset=utf-8", "public, max-age=3600")
		return c.Send(redocJS)
	})
	app.Get("/docs/redoc.standalone.js.LICENSE.txt", func(c *fiber.Ctx) error {
		headers(c, "text/plain; charset=utf-8", "public, max-age=3600")
		return c.Send(redocLicense)
	})
	app.Get("/errors/:code", func(c *fiber.Ctx) error {
		p, ok := pages[c.Params("code")]
		if !ok {
			// A fixed set of pages: nothing of the request is reflected.
			return apierror.NotFound("no such error type")
		}
		c.Vary(fiber.HeaderAccept)
		if wantsJSON(c) {
			headers(c, "application/problem+json", "public, max-age=3600")
			return c.Send(p.json)
		}
		headers(c, "text/html; charset=utf-8", "public, max-age=3600")
		return c.Send(p.html)
	})
	return nil
}

func headers(c *fiber.Ctx, contentType, cache string) {
	c.Set(fiber.HeaderContentType, contentType)
	c.Set(fiber.HeaderCacheControl, cache)
	c.Set("Content-Security-Policy", csp)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set("Referrer-Policy", "no-referrer")
}

// wantsJSON reports whether the client prefers JSON to HTML (a browser sends text/html
// first; an API client application/json or application/problem+json).
func wantsJSON(c *fiber.Ctx) bool {
	switch c.Accepts("text/html", "application/json", "application/problem+json") {
	case "application/json", "application/problem+json":
		return true
	}
	return false
}

// ErrorType describes one error code of the API.
type ErrorType struct {
	Code        apierror.Code `json:"code"`
	Status      int           `json:"status"`
	Title       string        `json:"title"`
	Description string        `json:"description"`
	Action      string        `json:"action"`
}

// ErrorTypes are the codes of the ErrorEnvelope in api/openapi.yaml, each with what it
// means and what to do.
var ErrorTypes = []ErrorType{
	{apierror.CodeUnauthorized, 401, "Unauthorized",
		"The request has no `x-api-key` header, or its key is malformed, unknown or revoked. `details.reason` says which (`missing_key`, `wrong_header`, `malformed_key`, `unknown_key`, `conflicting_keys`) and `details.hint` what to change.",
		"Send a valid key in the `x-api-key` header (not `Authorization`); ask an administrator for a new key if yours was revoked."},
	{apierror.CodeForbidden, 403, "Forbidden",
		"The key is valid but may not make this request (for example a key issued for several tenants).",
		"Use a key issued for exactly one tenant."},
	{apierror.CodeNotFound, 404, "Not Found",
		"The resource does not exist for your tenant (or was deleted), or the route or method does not exist.",
		"Check the ID and the path; IDs of another tenant read as not found."},
	{apierror.CodeValidation, 400, "Bad Request",
		"The request is malformed: invalid JSON, a wrong type, an unknown field, a value out of range, a bad cursor or limit. `details` lists every problem with its field (body, query or path), code, message and path.",
		"Fix every listed issue and send the request again; retrying unchanged gives the same answer."},
	{apierror.CodeConflict, 409, "Conflict",
		"The request conflicts with the resource's current state (a duplicate, an idempotency key reused with another body, an action not allowed in the current status).",
		"Read the resource again and decide; retrying unchanged gives the same answer."},
	{apierror.CodeRateLimited, 429, "Too Many Requests",
		"The key's rate limit is used up. `details` holds limit, remaining, resetTime (Unix ms) and retryAfter (seconds); the Retry-After header says when to try again.",
		"Wait for Retry-After seconds, then retry; the generated clients do this for you."},
	{apierror.CodeInternal, 500, "Internal Server Error",
		"Something failed on our side.",
		"Retry later; if it persists, report the requestId."},
	{apierror.CodeServiceUnavailable, 503, "Service Unavailable",
		"A service behind the gateway is down, not ready or too slow to answer.",
		"Retry after a short wait (honour Retry-After when present); a write may or may not have happened, so read before repeating it."},
	{apierror.CodePreconditionFailed, 412, "Precondition Failed",
		"The request named a version of the resource in `If-Match`, and the resource has changed since (someone else wrote it).",
		"Read the resource again, apply your change to the new version, and send it with the new `ETag` in `If-Match`; `details.currentETag` is the current one."},
	{apierror.CodeMethodNotAllowed, 405, "Method Not Allowed",
		"The path exists but has no operation for this HTTP method (for example `PUT` on a topic, which is updated with `PATCH`).",
		"Use one of the path's operations: the reference at `/docs` lists them."},
}

type errorPage struct{ html, json []byte }

// inlineCode renders a description's Markdown code spans (`details`) as <code>, the rest
// escaped: the descriptions are written once, as Markdown, for the JSON and the page.
func inlineCode(s string) template.HTML {
	return template.HTML(codeSpan.ReplaceAllString(template.HTMLEscapeString(s), "<code>$1</code>")) //nolint:gosec // escaped first; only <code> is added
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

var pageTemplate = template.Must(template.New("error").Funcs(template.FuncMap{"md": inlineCode}).Parse(`<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Code}} — Customer API errors</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;line-height:1.5}code{background:#f3f3f3;padding:0 .2em}</style>
</head>
<body>
<h1><code>{{.Code}}</code> ({{.Status}} {{.Title}})</h1>
<p>{{md .Description}}</p>
<p><strong>What to do:</strong> {{md .Action}}</p>
<p>Every error answer carries <code>requestId</code> (also the <code>X-Request-Id</code> header): quote it when reporting a problem. See the <a href="/docs">API reference</a>.</p>
</body>
</html>
`))

func renderErrorPages(baseURL string) (map[string]errorPage, error) {
	pages := map[string]errorPage{}
	for _, t := range ErrorTypes {
		var html bytes.Buffer
		if err := pageTemplate.Execute(&html, t); err != nil {
			return nil, fmt.Errorf("error page %s: %w", t.Code, err)
		}
		slug := strings.ToLower(string(t.Code))
		j, err := json.Marshal(map[string]any{"type": baseURL + "/errors/" + slug, "code": t.Code, "status": t.Status,
			"title": t.Title, "description": t.Description, "action": t.Action})
		if err != nil {
			return nil, fmt.Errorf("error page %s: %w", t.Code, err)
		}
		pages[slug] = errorPage{html: html.Bytes(), json: j}
	}
	return pages, nil
}
