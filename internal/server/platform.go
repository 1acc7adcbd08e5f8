package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/textproto"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentwarden/warden/contract"
)

// PlatformOptions say how the login identity of a message reaches the
// nodes of its task (CONTRACT_SPEC §11: platform.* is the round's login
// identity, which the gateway in front of the runtime injects as request
// headers). Only a trusted gateway's key may pass it.
type PlatformOptions struct {
	// GatewayKeys are tenant keys (keys of Options.Keys) that belong to a
	// trusted gateway: a request with one of them may carry the identity
	// headers. A request with any other key that carries one is refused
	// 403 platform_untrusted: the headers are never read from it.
	GatewayKeys []string
	// Headers maps an open platform field (contract.OpenPlatformFields) to
	// the request header that carries it. userId, memberId and organId are
	// integers (Long) and pass as JSON numbers exactly as sent; the others
	// are strings.
	Headers map[string]string
	// Hidden are identity fields never passed to a node (platform.hidden):
	// an open field listed here may have no header.
	Hidden []string
}

// platformInts are the platform fields of type Long.
var platformInts = []string{"userId", "memberId", "organId"}

// maxPlatformValue bounds one identity header's value, in bytes.
const maxPlatformValue = 1024

var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// validate checks the options against the tenant keys.
func (p PlatformOptions) validate(keys map[string]string) error {
	for _, f := range p.Hidden {
		if !contract.IsPlatformField(f) && !slices.Contains(contract.HiddenPlatformFields, f) {
			return fmt.Errorf("%w: platform hidden field %q is not a field of the login identity", ErrConfig, f)
		}
	}
	seen := map[string]string{}
	for _, f := range slices.Sorted(maps.Keys(p.Headers)) {
		h := p.Headers[f]
		switch {
		case !contract.IsPlatformField(f):
			return fmt.Errorf("%w: platform header for %q: not an open platform field (open: %s)", ErrConfig, f, strings.Join(contract.OpenPlatformFields, ", "))
		case slices.Contains(p.Hidden, f):
			return fmt.Errorf("%w: platform header for %s: the field is hidden (platform.hidden)", ErrConfig, f)
		case !headerName.MatchString(h):
			return fmt.Errorf("%w: platform header for %s: %q is not a header name", ErrConfig, f, h)
		case strings.EqualFold(h, "Authorization"):
			return fmt.Errorf("%w: platform header for %s: %q carries the API key", ErrConfig, f, h)
		}
		c := textproto.CanonicalMIMEHeaderKey(h)
		if o, ok := seen[c]; ok {
			return fmt.Errorf("%w: platform header %s carries both %s and %s", ErrConfig, h, o, f)
		}
		seen[c] = f
	}
	for _, k := range p.GatewayKeys {
		if _, ok := keys[k]; !ok {
			return fmt.Errorf("%w: a gateway key is not a tenant key", ErrConfig)
		}
	}
	if len(p.GatewayKeys) > 0 && len(p.Headers) == 0 {
		return fmt.Errorf("%w: gateway keys without platform headers: no identity could pass", ErrConfig)
	}
	return nil
}

type keyCtx struct{}

// withKey keeps the request's API key for platformOf.
func withKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtx{}, key)
}

// platformOf returns the login identity a message carries: nil when it
// carries none. Identity headers from a key that is not a gateway's are
// refused (403), as is a bad value (400).
func (s *Server) platformOf(r *http.Request) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	key, _ := r.Context().Value(keyCtx{}).(string)
	gateway := key != "" && s.gateways[sha256.Sum256([]byte(key))]
	for _, f := range slices.Sorted(maps.Keys(s.opt.Platform.Headers)) {
		h := s.opt.Platform.Headers[f]
		vs := r.Header.Values(h)
		if len(vs) == 0 {
			continue
		}
		if !gateway {
			return nil, fail(http.StatusForbidden, CodePlatformUntrusted,
				fmt.Sprintf("header %s carries the login identity, which only a trusted gateway's key may pass", h))
		}
		if len(vs) > 1 {
			return nil, fail(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("header %s (platform.%s) is given %d times", h, f, len(vs)))
		}
		v, err := platformValue(f, vs[0])
		if err != nil {
			return nil, fail(http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("header %s (platform.%s): %v", h, f, err))
		}
		if v == nil {
			continue
		}
		if out == nil {
			out = map[string]json.RawMessage{}
		}
		out[f] = v
	}
	return out, nil
}

var decimal = regexp.MustCompile(`^-?(0|[1-9][0-9]{0,18})$`)

// platformValue is the JSON value of a header for field f; nil for an
// empty header.
func platformValue(f, v string) (json.RawMessage, error) {
	if v == "" {
		return nil, nil
	}
	if len(v) > maxPlatformValue {
		return nil, fmt.Errorf("longer than %d bytes", maxPlatformValue)
	}
	if slices.Contains(platformInts, f) {
		if !decimal.MatchString(v) || (len(strings.TrimPrefix(v, "-")) == 19 && !fitsInt64(v)) {
			return nil, fmt.Errorf("%q is not an integer (Long)", v)
		}
		return json.RawMessage(v), nil
	}
	if !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl) {
		return nil, fmt.Errorf("not UTF-8 text without control characters")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// fitsInt64 reports whether a 19-digit decimal is within int64.
func fitsInt64(v string) bool {
	d := strings.TrimPrefix(v, "-")
	limit := "9223372036854775807"
	if d != v {
		limit = "9223372036854775808"
	}
	return d <= limit
}
