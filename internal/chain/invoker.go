package chain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/contract"
)

// Caller calls business tools: the MCP adapters and the scripted tools of
// the loop implement it.
type Caller interface {
	CallTool(ctx context.Context, name string, args json.RawMessage) (Response, error)
}

// Response is what a tool returned when the call itself worked.
type Response struct {
	// Content is the tool's result as JSON (MCP structuredContent, or text
	// content that parses as JSON, or a JSON string of the text).
	Content json.RawMessage
	// IsError is MCP's isError: the tool ran and reported a failure of its
	// own — a different thing from a protocol error.
	IsError bool
	// Text is the tool's text output (its error message when IsError).
	Text string
}

// Invoker calls a business tool the way TOOL_OBSERVATION §5 classifies it
// (the DefaultToolInvoker): a response is SUCCESS; a failure is FAILED with
// the code of CONTRACT_SPEC §14.4. Reads retry with exponential backoff
// within TOOL_USE_RELIABILITY §3.1's budget; writes never retry.
type Invoker struct {
	Caller Caller
	// DefaultTimeout applies to tools without timeoutMs; 0 means 30 s.
	DefaultTimeout time.Duration
	// DefaultRetry applies to read tools without retry; nil means §3.1's
	// budget: 4 attempts, waiting 1 s, 2 s, 4 s.
	DefaultRetry *contract.Retry
	// Sleep waits between attempts; nil means a timer. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxProgressStretch bounds how far progress notifications may push an
	// attempt's deadline back, from its start; 0 means ten times the
	// tool's timeout.
	MaxProgressStretch time.Duration
}

// ToolTimeouts is implemented by a Caller that knows a tool's own timeout
// (an MCP server configured with one). It applies when the contract sets no
// timeoutMs; 0 means the Invoker's default.
type ToolTimeouts interface {
	ToolTimeout(tool string) time.Duration
}

// Progress is one progress notification of a call under way.
type Progress struct {
	Progress float64 `json:"progress"`
	// Total is 0 when the tool does not know it.
	Total   float64 `json:"total,omitempty"`
	Message string  `json:"message,omitempty"`
}

type progressKey struct{}

// ReportProgress tells the invoker that the call running under ctx is making
// progress: the attempt's deadline moves to one timeout from now (within
// MaxProgressStretch) and the notification is kept in Invoked.Progress.
// Adapters call it for each progress notification of a call; outside an
// invoker it does nothing.
func ReportProgress(ctx context.Context, p Progress) {
	if f, ok := ctx.Value(progressKey{}).(func(Progress)); ok {
		f(p)
	}
}

// maxProgressKept bounds Invoked.Progress; ProgressCount counts them all.
const maxProgressKept = 32

// Invocation is one call to invoke.
type Invocation struct {
	Tool string
	Args json.RawMessage
	// Contract is the tool's contract; nil means unconfigured (a read with
	// no business judgement, CONTRACT_SPEC §1.3).
	Contract *contract.Tool
	Locale   abi.Locale
}

// Invoked is the invoker's result.
type Invoked struct {
	Observation abi.Observation
	// Response is the tool's content (SUCCESS) or the best body there is
	// (MCP isError text); nil when the call never produced one.
	Response json.RawMessage
	Attempts int
	// Waited is the total backoff between attempts.
	Waited time.Duration
	// Progress holds the first progress notifications of the last attempt
	// (at most 32); ProgressCount counts them all.
	Progress      []Progress
	ProgressCount int
}

var defaultRetry = contract.Retry{MaxAttempts: 4, Backoff: contract.Backoff{InitialMs: 1000, Multiplier: 2, MaxMs: 4000}}

// Timeout is how long one attempt of the tool's call may take: the
// contract's timeoutMs, else the Caller's own timeout for the tool, else
// DefaultTimeout (30 s when 0).
func (inv *Invoker) Timeout(tool string, c *contract.Tool) time.Duration {
	timeout := inv.DefaultTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if tt, ok := inv.Caller.(ToolTimeouts); ok {
		if d := tt.ToolTimeout(tool); d > 0 {
			timeout = d
		}
	}
	if c != nil && c.TimeoutMs != nil {
		timeout = time.Duration(*c.TimeoutMs) * time.Millisecond
	}
	return timeout
}

// Invoke calls the tool, retrying a read on transient failures.
func (inv *Invoker) Invoke(ctx context.Context, in Invocation) Invoked {
	write := in.Contract != nil && in.Contract.IsWrite()
	timeout := inv.Timeout(in.Tool, in.Contract)
	stretch := inv.MaxProgressStretch
	if stretch <= 0 {
		stretch = 10 * timeout
	}
	retry := defaultRetry
	if inv.DefaultRetry != nil {
		retry = *inv.DefaultRetry
	}
	if in.Contract != nil && in.Contract.Retry != nil {
		retry = *in.Contract.Retry
	}
	if write || retry.MaxAttempts < 1 {
		retry.MaxAttempts = 1
	}
	var out Invoked
	for attempt := 1; ; attempt++ {
		out.Attempts = attempt
		cctx := newStretchCtx(ctx, timeout, stretch)
		var mu sync.Mutex
		ended := false
		out.Progress, out.ProgressCount = nil, 0
		report := func(p Progress) {
			mu.Lock()
			defer mu.Unlock()
			if ended {
				return
			}
			cctx.extend()
			out.ProgressCount++
			if len(out.Progress) < maxProgressKept {
				out.Progress = append(out.Progress, p)
			}
		}
		resp, err := inv.Caller.CallTool(context.WithValue(cctx, progressKey{}, report), in.Tool, in.Args)
		timedOut := cctx.Err() == context.DeadlineExceeded
		cctx.finish(context.Canceled)
		// A notification still in flight must not race the result.
		mu.Lock()
		ended = true
		mu.Unlock()
		if ctx.Err() != nil && err != nil {
			// The caller gave up: report it as the failure it caused.
			err = fmt.Errorf("%w: %w", ErrIO, ctx.Err())
		} else if err != nil && timedOut {
			err = fmt.Errorf("%w: %w", ErrTimeout, err)
		}
		code, transient := classify(err, resp)
		if code == "" {
			out.Observation = abi.Success(successText(in.Locale, in.Tool), resp.Content)
			out.Response = resp.Content
			return out
		}
		if !transient || attempt >= retry.MaxAttempts || ctx.Err() != nil {
			out.Observation = inv.failure(in, code, err, resp, timeout, attempt, retry.MaxAttempts)
			out.Response = failureBody(resp)
			return out
		}
		d := time.Duration(retry.Backoff.Delay(attempt+1)) * time.Millisecond
		if err := inv.sleep(ctx, d); err != nil {
			out.Observation = inv.failure(in, code, err, resp, timeout, attempt, retry.MaxAttempts)
			return out
		}
		out.Waited += d
	}
}

func (inv *Invoker) sleep(ctx context.Context, d time.Duration) error {
	if inv.Sleep != nil {
		return inv.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// classify maps a call's error (or MCP isError) to its code and whether a
// retry may help.
func classify(err error, resp Response) (abi.Code, bool) {
	switch {
	case err == nil && resp.IsError:
		return abi.MCPToolError, false
	case err == nil:
		return "", false
	case errors.Is(err, ErrAuth):
		return abi.ToolAuthFailed, false
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return abi.ToolTimeout, true
	case errors.Is(err, ErrUnreachable):
		return abi.ToolUnreachable, true
	case errors.Is(err, ErrIO):
		return abi.ToolIOError, true
	case errors.Is(err, ErrRPC):
		return abi.MCPRPCError, true
	case errors.Is(err, ErrInvalidParams):
		return abi.MCPInvalidParams, false
	default:
		return abi.ToolError, true
	}
}

func (inv *Invoker) failure(in Invocation, code abi.Code, err error, resp Response, timeout time.Duration, attempts, max int) abi.Observation {
	l := in.Locale
	detail := resp.Text
	if err != nil {
		detail = err.Error()
	}
	if len(detail) > 300 {
		cut := 300
		for cut > 0 && !utf8.RuneStart(detail[cut]) {
			cut--
		}
		detail = detail[:cut] + "…"
	}
	reason := code.Reason(l, "tool", in.Tool, "detail", detail, "timeout", timeout.String())
	if attempts > 1 {
		if l == abi.LocaleEN {
			reason += " (after " + strconv.Itoa(attempts) + " attempts)"
		} else {
			reason += "（已尝试 " + strconv.Itoa(attempts) + " 次）"
		}
	}
	var next string
	switch code {
	case abi.MCPToolError:
		next = abi.NextBusiness.Text(l)
	case abi.MCPInvalidParams:
		next = abi.NextFixArgs.Text(l)
	case abi.ToolTimeout:
		next = abi.NextTimeout.Text(l)
	case abi.ToolAuthFailed:
		next = abi.NextAuthFailed.Text(l, "tool", in.Tool)
	default:
		next = abi.NextRetryLater.Text(l)
	}
	write := in.Contract != nil && in.Contract.IsWrite()
	if write && code != abi.MCPToolError && code != abi.MCPInvalidParams && code != abi.ToolUnreachable && code != abi.ToolAuthFailed {
		// The write may have happened: never suggest repeating it.
		next = abi.NextWaitVerify.Text(l)
	}
	if !write && in.Contract != nil && in.Contract.Fallback != "" && attempts >= max && code != abi.MCPInvalidParams && code != abi.ToolAuthFailed {
		next = abi.NextFallback.Text(l, "tool", in.Contract.Fallback)
	}
	o := abi.Failed(code, reason, next, failureBody(resp))
	o.Locale = l
	return o
}

func failureBody(resp Response) json.RawMessage {
	if len(resp.Content) > 0 {
		return resp.Content
	}
	if resp.Text != "" {
		b, _ := abi.Marshal(resp.Text)
		return b
	}
	return nil
}

func successText(l abi.Locale, tool string) string {
	if l == abi.LocaleEN {
		return "tool " + tool + " succeeded"
	}
	return "工具 " + tool + " 调用成功"
}

// stretchCtx is an attempt's context: its deadline is one timeout away, and
// moves to one timeout from now on every progress notification, but never
// past the limit. Its Err is context.DeadlineExceeded once the deadline
// passed, so adapters classify it as a timeout like any deadline.
type stretchCtx struct {
	parent context.Context
	done   chan struct{}
	step   time.Duration
	limit  time.Time

	mu       sync.Mutex
	err      error
	deadline time.Time
	timer    *time.Timer
	stop     func() bool // unregisters the parent's cancellation
}

func newStretchCtx(parent context.Context, step, max time.Duration) *stretchCtx {
	now := time.Now()
	s := &stretchCtx{parent: parent, done: make(chan struct{}), step: step, limit: now.Add(max), deadline: now.Add(step)}
	if s.deadline.After(s.limit) {
		s.deadline = s.limit
	}
	s.mu.Lock()
	// Until the deadline, not one step: a limit shorter than the step is
	// the deadline.
	s.timer = time.AfterFunc(s.deadline.Sub(now), s.expire)
	// The parent's end ends the attempt; registered with the parent rather
	// than watched by a goroutine, which would cost one per attempt.
	s.stop = context.AfterFunc(parent, func() { s.finish(parent.Err()) })
	s.mu.Unlock()
	return s
}

// expire ends the context unless the deadline moved while the timer fired.
func (s *stretchCtx) expire() {
	s.mu.Lock()
	if left := time.Until(s.deadline); left > 0 && s.err == nil {
		s.timer.Reset(left)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.finish(context.DeadlineExceeded)
}

func (s *stretchCtx) finish(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	s.err = err
	s.timer.Stop()
	s.stop()
	close(s.done)
}

// extend moves the deadline to one step from now, within the limit.
func (s *stretchCtx) extend() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	d := time.Now().Add(s.step)
	if d.After(s.limit) {
		d = s.limit
	}
	if d.After(s.deadline) {
		s.deadline = d
		s.timer.Reset(time.Until(d))
	}
}

func (s *stretchCtx) Deadline() (time.Time, bool) {
	s.mu.Lock()
	d := s.deadline
	s.mu.Unlock()
	if pd, ok := s.parent.Deadline(); ok && pd.Before(d) {
		return pd, true
	}
	return d, true
}

func (s *stretchCtx) Done() <-chan struct{} { return s.done }

func (s *stretchCtx) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *stretchCtx) Value(key any) any { return s.parent.Value(key) }
