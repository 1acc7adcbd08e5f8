package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/host"
)

// maxUpload bounds an install request: a base64 module of up to 64 MiB.
const maxUpload = 88 << 20

var slotName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

// Generation is one generation of a slot as the admin API shows it.
type Generation struct {
	Number    uint64     `json:"number"`
	Ref       string     `json:"ref"`
	Digest    string     `json:"digest"`
	Installed time.Time  `json:"installed"`
	Retired   *time.Time `json:"retired,omitempty"`
}

// SlotInfo is a slot: its serving generation, every generation installed,
// the candidates it refused, and the serving plugin's counters.
type SlotInfo struct {
	Name        string       `json:"name"`
	Current     Generation   `json:"current"`
	Generations []Generation `json:"generations"`
	// Refused are the candidates the slot refused (admin API, plugin
	// directory), oldest first, from the generation log: with a shared
	// store, every instance's.
	Refused []GenerationRecord `json:"refused,omitempty"`
	Stats   host.Stats         `json:"stats"`
}

func generation(g host.GenerationInfo) Generation {
	out := Generation{Number: g.Number, Ref: g.Ref, Digest: g.Digest, Installed: g.Installed}
	if !g.Retired.IsZero() {
		r := g.Retired
		out.Retired = &r
	}
	return out
}

func (s *Server) slotInfo(ctx context.Context, name string, sl *host.Slot) SlotInfo {
	in := SlotInfo{Name: name, Current: generation(sl.Current()), Generations: []Generation{},
		Refused: s.refusals(ctx, name), Stats: sl.Plugin().Stats()}
	for _, g := range sl.History() {
		in.Generations = append(in.Generations, generation(g))
	}
	return in
}

func (s *Server) listSlots(w http.ResponseWriter, r *http.Request) error {
	s.slotMu.Lock()
	slots := make(map[string]*host.Slot, len(s.slots))
	for n, sl := range s.slots {
		slots[n] = sl
	}
	s.slotMu.Unlock()
	out := []SlotInfo{}
	for n, sl := range slots {
		out = append(out, s.slotInfo(r.Context(), n, sl))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	writeJSON(w, http.StatusOK, map[string]any{"slots": out})
	return nil
}

func (s *Server) slot(name string) (*host.Slot, error) {
	s.slotMu.Lock()
	defer s.slotMu.Unlock()
	sl, ok := s.slots[name]
	if !ok {
		return nil, fail(http.StatusNotFound, CodeSlotNotFound, "no slot "+name)
	}
	return sl, nil
}

func (s *Server) getSlot(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("slot")
	sl, err := s.slot(name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.slotInfo(r.Context(), name, sl))
	return nil
}

// Install is the body of an install request.
type Install struct {
	// Module is the .wasm module (base64 in JSON).
	Module []byte `json:"module"`
	// SHA256 optionally pins the module's digest (hex, "sha256:" allowed).
	SHA256 string `json:"sha256,omitempty"`
	// Config is the plugin's configuration, checked against its manifest.
	Config json.RawMessage `json:"config,omitempty"`
}

// installSlot loads a module as the next generation of a slot (the first
// one creates the slot) through install: pin, compile, config, start,
// self-test, then an atomic swap. A candidate that fails leaves the
// serving generation alone.
func (s *Server) installSlot(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("slot")
	if !slotName.MatchString(name) {
		return fail(http.StatusBadRequest, CodeInvalidRequest, "slot name must match "+slotName.String())
	}
	var req Install
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/wasm" {
		// The module as the body, unencoded: a several-MiB module skips
		// base64 and the JSON scanner. The pin is ?sha256=, the config the
		// Warden-Config header (JSON).
		if err := readModule(w, r, &req); err != nil {
			return err
		}
	} else if err := decode(w, r, maxUpload, &req); err != nil {
		return err
	}
	if len(req.Module) == 0 {
		return fail(http.StatusBadRequest, CodeInvalidRequest, "module is required")
	}
	src := host.Source{Name: name, Bytes: req.Module, SHA256: req.SHA256}
	sl, _, created, err := s.install(context.WithoutCancel(r.Context()), name, src, req.Config, OriginAdmin, "")
	if err != nil {
		return candidateError(err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, s.slotInfo(r.Context(), name, sl))
	return nil
}

// readModule reads an application/wasm install request.
func readModule(w http.ResponseWriter, r *http.Request, req *Install) error {
	for k := range r.URL.Query() {
		if k != "sha256" {
			return fail(http.StatusBadRequest, CodeUnknownField, "unknown query parameter "+k)
		}
	}
	req.SHA256 = r.URL.Query().Get("sha256")
	if c := r.Header.Get("Warden-Config"); c != "" {
		if !json.Valid([]byte(c)) {
			return fail(http.StatusBadRequest, CodeBadJSON, "the Warden-Config header is not JSON")
		}
		if err := abi.CheckDuplicateKeys([]byte(c)); err != nil {
			return fail(http.StatusBadRequest, CodeInvalidBody, "the Warden-Config header: "+strings.TrimPrefix(err.Error(), "abi: strict json: "))
		}
		req.Config = json.RawMessage(c)
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpload))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return fail(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("the module exceeds %d bytes", maxUpload))
	}
	if err != nil {
		return fail(http.StatusBadRequest, CodeInvalidRequest, "the module could not be read: "+err.Error())
	}
	req.Module = b
	return nil
}

// candidateError reports why a candidate was refused.
func candidateError(err error) error {
	switch {
	case errors.Is(err, host.ErrDigestMismatch):
		return fail(http.StatusUnprocessableEntity, CodeDigestMismatch, err.Error())
	case errors.Is(err, host.ErrModuleTooLarge):
		return fail(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, err.Error())
	case errors.Is(err, ErrSelfTest), errors.Is(err, host.ErrLoadCheck):
		return fail(http.StatusUnprocessableEntity, CodeSelfTestFailed, err.Error())
	default:
		return fail(http.StatusUnprocessableEntity, CodePluginRejected, err.Error())
	}
}

func (s *Server) rollbackSlot(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("slot")
	sl, err := s.slot(name)
	if err != nil {
		return err
	}
	if _, err := s.rollback(context.WithoutCancel(r.Context()), name, sl); err != nil {
		if errors.Is(err, host.ErrNoPrevious) {
			return fail(http.StatusConflict, CodeNoPrevious, "the slot has no previous generation")
		}
		return candidateError(err)
	}
	writeJSON(w, http.StatusOK, s.slotInfo(r.Context(), name, sl))
	return nil
}

// DefaultSelfTest calls a candidate once in its role with an empty request
// and refuses it when the plugin itself failed (trapped, timed out, broke
// the result contract or was unavailable). What the plugin decides about
// the empty call does not matter; that it decides does.
func DefaultSelfTest(ctx context.Context, p *host.Plugin) error {
	m := p.Manifest()
	var v abi.Verdict
	switch m.Role {
	case abi.RoleGuard:
		phase := abi.PhaseBefore
		if len(m.Phases) > 0 {
			phase = m.Phases[0]
		}
		v = p.Guard(ctx, host.ProbeTenant, &abi.Request{Phase: phase, Tool: "self_test", Args: json.RawMessage(`{}`)})
	case abi.RoleBuiltin:
		tool := "self_test"
		if len(m.Tools) > 0 {
			tool = m.Tools[0].Name
		}
		v = p.Builtin(ctx, host.ProbeTenant, &abi.Request{Tool: tool, Args: json.RawMessage(`{}`)})
	default:
		return fmt.Errorf("%w: role %q", ErrSelfTest, m.Role)
	}
	if o := v.Observation; o != nil {
		switch o.Code {
		case abi.PluginTrap, abi.PluginTimeout, abi.PluginContractViolation, abi.PluginUnavailable,
			abi.GuardUnavailable, abi.PluginOutputTooLarge, abi.PluginMemoryLimit:
			return fmt.Errorf("%w: %s: %s", ErrSelfTest, o.Code, o.Text)
		}
	}
	return nil
}
