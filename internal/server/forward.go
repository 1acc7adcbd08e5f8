package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/internal/store"
)

// CodeOwnerUnreachable is the 503 of a request for a session whose live
// owner could not be reached by forwarding (Retry-After: when its lease
// ends at the latest, the session can be taken over).
const CodeOwnerUnreachable = "owner_unreachable"

// codeForwardUnauthorized refuses a hop whose signature does not verify.
const codeForwardUnauthorized = "forward_unauthorized"

// The headers of a hop between instances. A hop carries the instance that
// sent it and a signature over the request (forwardSignature); the owner's
// answer "not-owner" (421) tells the sender the session moved.
const (
	headerForwardedBy  = "Warden-Forwarded-By"
	headerForwardSig   = "Warden-Forward-Signature"
	headerForwardState = "Warden-Forward"
	forwardNotOwner    = "not-owner"
)

// MinForwardSecret is the shortest Options.Forward.Secret New accepts.
const MinForwardSecret = 32

// forwardSkew is how far a hop's timestamp may be from this instance's
// clock.
const forwardSkew = time.Minute

// streamHeaderWait bounds how long a forwarded event stream waits for the
// owner's first answer (the stream itself lasts until the caller leaves).
const streamHeaderWait = 10 * time.Second

// ForwardOptions turn forwarding on (Options.Forward): a request for a
// session another live instance owns is sent to that instance, at the
// address it advertised (Server.Advertise), and its answer relayed as it
// comes.
type ForwardOptions struct {
	// Secret is shared by every instance of the store, at least
	// MinForwardSecret bytes: a hop carries an HMAC-SHA256 of its request
	// made with it, and an instance serves a hop only when it verifies.
	Secret []byte
	// Timeout bounds a forwarded request other than the event stream
	// (which lasts until its caller leaves); 0 means Options.RunTimeout
	// plus 30 s, so that a run waited for ends first.
	Timeout time.Duration
	// Transport carries the hops; nil means one of the server's own.
	Transport http.RoundTripper
	// Observe is told of each hop this instance sent (metrics); nil tells
	// nobody.
	Observe func(ForwardSample)
}

// ForwardSample is one hop this instance sent.
type ForwardSample struct {
	// From is this instance, To the owner the request went to.
	From, To string
	// Outcome is relayed (the owner answered; its answer went to the
	// caller), not_owner (the owner no longer held the session) or
	// unreachable (no answer, or no address).
	Outcome string
	// Elapsed runs until the answer was relayed (an event stream: until it
	// closed).
	Elapsed time.Duration
}

func (f *ForwardOptions) validate() error {
	switch {
	case len(f.Secret) < MinForwardSecret:
		return fmt.Errorf("%w: the forwarding secret has %d bytes; it needs at least %d", ErrConfig, len(f.Secret), MinForwardSecret)
	case f.Timeout < 0:
		return fmt.Errorf("%w: negative forwarding timeout", ErrConfig)
	}
	return nil
}

// Advertise records addr (HOST:PORT) as the address this instance's peers
// forward to, beside its lease in the directory.
func (s *Server) Advertise(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" || port == "0" {
		return fmt.Errorf("%w: advertise address %q is not HOST:PORT", ErrConfig, addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("%w: advertise address %q names no host a peer can reach", ErrConfig, addr)
	}
	if err := s.dir.Advertise(ctx, s.opt.Instance, addr); err != nil {
		return fmt.Errorf("server: advertise %s: %w", addr, err)
	}
	return nil
}

// hopKey marks a request that came from a peer, verified.
type hopKey struct{}

func isHop(ctx context.Context) bool { return ctx.Value(hopKey{}) != nil }

// inbound verifies a hop's signature and marks the request as a hop. A
// request without the hop headers, or one reaching an instance that does
// not forward, is an ordinary request, returned as it is; one whose
// signature does not verify is refused (forward_unauthorized).
func (s *Server) inbound(r *http.Request) (*http.Request, error) {
	from := r.Header.Get(headerForwardedBy)
	if s.fwd == nil || (from == "" && r.Header.Get(headerForwardSig) == "") {
		return r, nil
	}
	bad := fail(http.StatusUnauthorized, codeForwardUnauthorized, "the forwarded request's signature does not verify")
	ts, sig, ok := strings.Cut(r.Header.Get(headerForwardSig), ".")
	ms, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || from == "" {
		return nil, bad
	}
	if d := s.opt.Now().Sub(time.UnixMilli(ms)); d > forwardSkew || d < -forwardSkew {
		return nil, bad
	}
	// The body is signed too: read it (as much as a handler would) and
	// put it back.
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		if body, err = io.ReadAll(io.LimitReader(r.Body, maxBody+1)); err != nil {
			return nil, fail(http.StatusBadRequest, CodeInvalidRequest, "the body could not be read")
		}
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	}
	want := forwardSignature(s.fwd.Secret, from, ts, r, body)
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, want) {
		return nil, bad
	}
	return r.WithContext(context.WithValue(r.Context(), hopKey{}, from)), nil
}

// allowHop is the tenant's rate limit, which a verified hop passes: the
// instance the caller reached counted it.
func (s *Server) allowHop(r *http.Request, tenant string) (time.Duration, bool) {
	if isHop(r.Context()) {
		return 0, true
	}
	return s.limits.allow(tenant, s.opt.Now())
}

// forwardSignature is the HMAC of a hop: the sender, its time, the method,
// the path and query, the request id, the caller's key and the body (up to
// maxBody+1 bytes, all a handler reads), so that a signature is good for
// one request of one caller only.
func forwardSignature(secret []byte, from, ts string, r *http.Request, body []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	key, _ := bearer(r)
	keySum := sha256.Sum256([]byte(key))
	bodySum := sha256.Sum256(body)
	for _, part := range []string{from, ts, r.Method, r.URL.RequestURI(), r.Header.Get(headerRequestID),
		hex.EncodeToString(keySum[:]), hex.EncodeToString(bodySum[:])} {
		mac.Write([]byte(part))
		mac.Write([]byte{0})
	}
	return mac.Sum(nil)
}

// forwardable says whether a route may answer session_elsewhere: those
// naming a session, and an approval's decision.
func forwardable(r *http.Request) bool {
	return strings.Contains(r.Pattern, "{session}") || r.Pattern == "POST /v1/approvals/{approval}"
}

// ownerOf is the owner a session_elsewhere error names.
func ownerOf(err error) (string, bool) {
	var oe *ownedError
	if errors.As(err, &oe) {
		return oe.owner, true
	}
	return "", false
}

// ownedError is session_elsewhere with the owner's name.
type ownedError struct {
	*apiError
	owner string
}

func (e *ownedError) Unwrap() error { return e.apiError }

// serveForwarding runs h here; when h finds that a live instance owns the
// session, the request goes there (one hop) and its answer is relayed.
// A hop that reaches an instance no longer owning the session comes back
// as not-owner: the lookup runs once more here (the session may have
// moved, or its owner died and this instance takes it over), then the
// caller gets 503 with Retry-After.
func (s *Server) serveForwarding(h tenantHandler, w http.ResponseWriter, r *http.Request, tenant string) error {
	if s.fwd == nil || !forwardable(r) {
		return h(w, r, tenant)
	}
	// The body is kept for the hop; the handlers read at most maxBody.
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			return fail(http.StatusBadRequest, CodeInvalidRequest, "the body could not be read")
		}
		body = b
	}
	rewind := func() { r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body)) }
	rewind()
	err := h(w, r, tenant)
	owner, elsewhere := ownerOf(err)
	if !elsewhere {
		return err
	}
	if isHop(r.Context()) {
		// One hop only: the sender looks again.
		w.Header().Set(headerForwardState, forwardNotOwner)
		return fail(http.StatusMisdirectedRequest, CodeSessionElsewhere, "this instance no longer serves the session")
	}
	if len(body) > maxBody {
		return fail(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("the body exceeds %d bytes", maxBody))
	}
	for attempt := 0; ; attempt++ {
		res := s.forward(w, r, owner, body)
		if res.done {
			return nil
		}
		if !res.again || attempt == 1 {
			setRetryAfter(w, res.retry)
			return fail(http.StatusServiceUnavailable, CodeOwnerUnreachable,
				fmt.Sprintf("the session is served by instance %s, which did not answer; retry later", owner))
		}
		// Look again: the session may have moved, or its owner's lease
		// ended and this instance takes it over.
		r.Body = io.NopCloser(bytes.NewReader(body))
		err = h(w, r, tenant)
		if owner, elsewhere = ownerOf(err); !elsewhere {
			return err
		}
	}
}

// hopResult is what a hop came to: done (the owner's answer was relayed),
// else whether the lookup may run again (nothing reached the owner, or
// it answered not-owner) and when the caller should retry.
type hopResult struct {
	done, again bool
	retry       time.Duration
}

// forward sends the request to owner and relays its answer. When it is
// not done nothing was written: the owner no longer held the session, could
// not be reached, or has no address.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, owner string, body []byte) hopResult {
	fo := s.fwd
	start := time.Now()
	outcome := "unreachable"
	defer func() {
		if fo.Observe != nil {
			fo.Observe(ForwardSample{From: s.opt.Instance, To: owner, Outcome: outcome, Elapsed: time.Since(start)})
		}
	}()
	// The hop's span is a child of the request's, from the same provider.
	tracer := trace.SpanFromContext(r.Context()).TracerProvider().Tracer("github.com/agentwarden/warden/internal/server")
	ctx, span := tracer.Start(r.Context(), "forward",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("warden.forward.from", s.opt.Instance), attribute.String("warden.forward.to", owner)))
	defer func() {
		span.SetAttributes(attribute.String("warden.forward.outcome", outcome))
		if outcome != "relayed" {
			span.SetStatus(codes.Error, outcome)
		}
		span.End()
	}()

	retry := time.Second
	in, err := s.dir.LookupInstance(ctx, owner)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("instance lookup failed", "instance", owner, "err", err)
		return hopResult{retry: retry}
	}
	if left := in.LeaseUntil.Sub(s.opt.Now()); left > retry {
		// Once the lease runs out the session can be taken over.
		retry = (left + time.Second - 1).Truncate(time.Second)
	}
	if in.Addr == "" {
		// Starting (it advertises once it listens), or not forwarding.
		s.log.Warn("session owner has no address to forward to; is forwarding on there?", "instance", owner)
		return hopResult{again: true, retry: retry}
	}

	stream := strings.HasSuffix(r.Pattern, "/events")
	var cancel context.CancelFunc
	if stream {
		ctx, cancel = context.WithCancel(ctx)
		// The owner answers a stream's headers at once; the stream lasts
		// until the caller leaves.
		t := time.AfterFunc(streamHeaderWait, cancel)
		defer t.Stop()
	} else {
		limit := fo.Timeout
		if limit == 0 {
			limit = s.opt.RunTimeout + 30*time.Second
		}
		ctx, cancel = context.WithTimeout(ctx, limit)
	}
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, "http://"+in.Addr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return hopResult{retry: retry}
	}
	req.ContentLength = int64(len(body))
	copyHeader(req.Header, r.Header)
	req.Header.Del(headerForwardedBy)
	req.Header.Del(headerForwardSig)
	req.Header.Set(headerRequestID, requestID(r.Context()))
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := r.Header.Get("X-Forwarded-For"); prior != "" {
			ip = prior + ", " + ip
		}
		req.Header.Set("X-Forwarded-For", ip)
	}
	// The owner's span is a child of this hop's: the caller's trace goes on.
	// (W3C trace context and baggage, as the server reads them; without a
	// span the caller's traceparent goes on as it came.)
	hopPropagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	ts := strconv.FormatInt(s.opt.Now().UnixMilli(), 10)
	req.Header.Set(headerForwardedBy, s.opt.Instance)
	req.Header.Set(headerForwardSig, ts+"."+hex.EncodeToString(forwardSignature(fo.Secret, s.opt.Instance, ts, req, body)))

	res, err := s.fwd.client.Do(req)
	if err != nil {
		s.log.Warn("forwarding failed", "instance", owner, "addr", in.Addr, "request_id", requestID(r.Context()), "err", err)
		// Only a request that never reached the owner may be sent again
		// (a message must not run twice); a read may always.
		var op *net.OpError
		again := r.Method == http.MethodGet || (errors.As(err, &op) && op.Op == "dial")
		return hopResult{again: again, retry: retry}
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusMisdirectedRequest && res.Header.Get(headerForwardState) == forwardNotOwner {
		outcome = "not_owner"
		return hopResult{again: true, retry: time.Second}
	}
	outcome = "relayed"
	span.SetAttributes(attribute.Int("http.response.status_code", res.StatusCode))
	copyHeader(w.Header(), res.Header)
	w.WriteHeader(res.StatusCode)
	relay(w, res.Body)
	return hopResult{done: true}
}

var hopPropagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// relay copies an answer's body as it comes, flushing each piece (an
// event stream's events reach the caller one by one).
func relay(w http.ResponseWriter, body io.Reader) {
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// hopByHop are the headers of one connection, never forwarded.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// copyHeader adds src's headers to dst but those of one connection.
func copyHeader(dst, src http.Header) {
	drop := map[string]bool{}
	for _, h := range hopByHop {
		drop[h] = true
	}
	for _, v := range src.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			drop[http.CanonicalHeaderKey(strings.TrimSpace(name))] = true
		}
	}
	for k, vs := range src {
		if drop[k] {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}

// forwarder is a server's forwarding: its options and the client that
// carries the hops, with no redirects followed and no compression added
// (the answer's bytes go to the caller as the owner sent them).
type forwarder struct {
	ForwardOptions
	client *http.Client
}

func newForwarder(o *ForwardOptions) (*forwarder, error) {
	if o == nil {
		return nil, nil
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	t := o.Transport
	if t == nil {
		t = &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			DisableCompression:  true,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	return &forwarder{ForwardOptions: *o, client: &http.Client{Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}
