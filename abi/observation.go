package abi

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Observation is the single result of one tool call, as the loop counts it
// and as the model reads it (role=tool). Build it only through the factories:
// a non-success always has a known code, a reason and a next step.
type Observation struct {
	Outcome Outcome `json:"outcome"`
	// Code is empty for SUCCESS, and otherwise a registered code or a
	// code the reporting plugin declared ("<plugin>:<NAME>").
	Code Code `json:"code,omitempty"`
	// Text is the success summary or the failure reason (what happened).
	Text string `json:"text"`
	// Next is the step the model must take now; empty only for SUCCESS.
	Next string `json:"next,omitempty"`
	// Data is the business payload or response body, if any.
	Data json.RawMessage `json:"data,omitempty"`
	// Locale selects the template of Message; empty means zh-CN.
	Locale Locale `json:"locale,omitempty"`
}

// Success builds a SUCCESS observation. (TOOL_OBSERVATION calls
// this factory success(message, data).)
func Success(message string, data json.RawMessage) Observation {
	return Observation{Outcome: OutcomeSuccess, Text: message, Data: data}
}

// Failed builds a FAILED observation: the tool ran and failed. It panics on
// a missing or unknown code, reason or next step, like a constructor that
// refuses to build an invalid value; use Build for untrusted input.
func Failed(code Code, reason, next string, data ...json.RawMessage) Observation {
	var d json.RawMessage
	if len(data) > 0 {
		d = data[0]
	}
	return must(Build(OutcomeFailed, code, reason, next, d))
}

// Rejected builds a REJECTED observation: the call broke a rule and did
// not run. It panics like Failed.
func Rejected(code Code, reason, next string) Observation {
	return must(Build(OutcomeRejected, code, reason, next, nil))
}

// Deferred builds a DEFERRED observation: a prerequisite step comes first.
// It panics like Failed.
func Deferred(code Code, reason, next string) Observation {
	return must(Build(OutcomeDeferred, code, reason, next, nil))
}

func must(o Observation, err error) Observation {
	if err != nil {
		panic(err)
	}
	return o
}

// Build validates and builds an observation of any outcome. It is what the
// host uses for what a plugin reports: a non-success needs a registered code,
// a reason and a next step; a success carries no code.
func Build(outcome Outcome, code Code, text, next string, data json.RawMessage) (Observation, error) {
	o := Observation{Outcome: outcome, Code: code, Text: strings.TrimSpace(text), Next: strings.TrimSpace(next), Data: data}
	if err := o.Validate(); err != nil {
		return Observation{}, err
	}
	return o, nil
}

// Validate reports why o could not have been built by a factory, or nil.
func (o Observation) Validate() error {
	if !o.Outcome.Valid() {
		return fmt.Errorf("abi: observation: %w", ErrUnknownOutcome)
	}
	if o.Outcome == OutcomeSuccess {
		if o.Code != "" {
			return fmt.Errorf("abi: observation code %q: %w", o.Code, ErrCodeOnSuccess)
		}
		return nil
	}
	switch {
	case o.Code == "":
		return fmt.Errorf("abi: %v observation: %w", o.Outcome, ErrMissingCode)
	case !o.Code.Known() && !o.Code.IsPlugin():
		return fmt.Errorf("abi: %v observation code %q: %w", o.Outcome, o.Code, ErrUnknownCode)
	case strings.TrimSpace(o.Text) == "":
		return fmt.Errorf("abi: %v observation %s: %w", o.Outcome, o.Code, ErrMissingReason)
	case strings.TrimSpace(o.Next) == "":
		return fmt.Errorf("abi: %v observation %s: %w", o.Outcome, o.Code, ErrMissingNext)
	}
	return nil
}

// WithNext returns a copy of o whose next step is next. A success has no
// next step and is returned unchanged; an empty next keeps the old one.
func (o Observation) WithNext(next string) Observation {
	if o.Outcome == OutcomeSuccess || strings.TrimSpace(next) == "" {
		return o
	}
	o.Next = strings.TrimSpace(next)
	return o
}

// Message is the model-facing text: the success summary, or
// "<reason>。下一步：<next>" (en: "<reason>. Next: <next>").
func (o Observation) Message() string {
	if o.Outcome == OutcomeSuccess {
		return o.Text
	}
	reason := strings.TrimRight(o.Text, "。.！!；; ")
	if o.Locale == LocaleEN {
		return reason + ". Next: " + o.Next
	}
	return reason + "。下一步：" + o.Next
}

// Info returns the registry entry of o's code; ok is false for a success.
func (o Observation) Info() (CodeInfo, bool) { return o.Code.Info() }

// MarshalJSON adds the derived fields (wire code, category, signal, message)
// that traces and clients read, beside the fields that round-trip.
func (o Observation) MarshalJSON() ([]byte, error) {
	if !o.Outcome.Valid() {
		return nil, fmt.Errorf("abi: marshal observation: %w", ErrUnknownOutcome)
	}
	return o.AppendJSON(nil), nil
}

// AppendJSON appends the observation's JSON (as MarshalJSON) to dst. Data is
// copied verbatim and must be valid JSON.
func (o Observation) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"outcome":`...)
	dst = appendString(dst, o.Outcome.String())
	if o.Code != "" {
		dst = append(dst, `,"code":`...)
		dst = appendString(dst, string(o.Code))
	}
	dst = append(dst, `,"text":`...)
	dst = appendString(dst, o.Text)
	if o.Next != "" {
		dst = append(dst, `,"next":`...)
		dst = appendString(dst, o.Next)
	}
	dst = appendRaw(dst, "data", o.Data)
	if o.Locale != "" {
		dst = append(dst, `,"locale":`...)
		dst = appendString(dst, string(o.Locale))
	}
	if i, ok := o.Code.Info(); ok {
		dst = append(dst, `,"wire":`...)
		dst = appendString(dst, i.Wire)
		dst = append(dst, `,"category":`...)
		dst = appendString(dst, string(i.Category))
		dst = append(dst, `,"signal":`...)
		dst = appendString(dst, string(i.Signal))
	}
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, o.Message())
	return append(dst, '}')
}
