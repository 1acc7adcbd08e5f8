//go:build killpoints

// This file is compiled only with the build tag killpoints, which the
// crash tests pass to go build (killsweep_test.go); a warden built any
// other way has no kill points at all (killpoint_off.go). Even in such a
// build nothing happens unless WARDEN_KILLPOINT is set:
//
//	WARDEN_KILLPOINT=trace     print every step, "killpoint N NAME", to stderr
//	WARDEN_KILLPOINT=N         SIGKILL this process at step N, before it runs
//	WARDEN_KILLPOINT=N+300ms   SIGKILL it 300ms after step N began
//
// A step is one change to the durable state (a state store or directory
// write), one tool call, or the return of a tool call or of a task's
// save, counted from 1 in the order the process makes them. The lease's
// own writes (heartbeats, claims) are not steps: they come on a timer.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/internal/chain"
	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/server"
	"github.com/agentwarden/warden/internal/state"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/tools"
)

// killpointEnv names the step to die at (see the file comment).
const killpointEnv = "WARDEN_KILLPOINT"

// installKillpoints wraps the directory, the session stores and the tools
// so that each step is counted, and the process killed at the one
// WARDEN_KILLPOINT names.
func installKillpoints(opts *server.Options, log *slog.Logger) error {
	spec := os.Getenv(killpointEnv)
	if spec == "" {
		return nil
	}
	k := &killer{}
	if spec == "trace" {
		k.trace = true
	} else {
		at, after, _ := strings.Cut(spec, "+")
		n, err := strconv.Atoi(at)
		if err != nil || n < 1 {
			return &configError{"killpoint", fmt.Sprintf("%s=%q: want trace, N or N+DURATION", killpointEnv, spec)}
		}
		k.at = n
		if after != "" {
			if k.after, err = time.ParseDuration(after); err != nil || k.after <= 0 {
				return &configError{"killpoint", fmt.Sprintf("%s=%q: %q is not a positive duration", killpointEnv, spec, after)}
			}
		}
	}
	log.Warn("killpoints build: this process kills itself at a step", "killpoint", spec)
	if opts.Directory != nil {
		opts.Directory = killDir{Directory: opts.Directory, k: k}
	}
	if next := opts.NewStore; next != nil {
		opts.NewStore = func(id string, opt state.Options) (state.Store, error) {
			st, err := next(id, opt)
			if err != nil {
				return nil, err
			}
			return killState{Store: st, k: k}, nil
		}
	}
	opts.Tools = killTools{Provider: opts.Tools, k: k}
	return nil
}

type killer struct {
	trace bool
	at    int
	after time.Duration

	mu sync.Mutex
	n  int
}

func (k *killer) step(name string) {
	k.mu.Lock()
	k.n++
	n := k.n
	k.mu.Unlock()
	switch {
	case k.trace:
		fmt.Fprintf(os.Stderr, "killpoint %d %s\n", n, name)
	case n != k.at:
	case k.after > 0:
		fmt.Fprintf(os.Stderr, "killpoint %d %s: SIGKILL in %v\n", n, name, k.after)
		time.AfterFunc(k.after, die)
	default:
		fmt.Fprintf(os.Stderr, "killpoint %d %s: SIGKILL\n", n, name)
		die()
	}
}

func die() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

type killDir struct {
	store.Directory
	k *killer
}

func (d killDir) CreateSession(ctx context.Context, s store.Session) error {
	d.k.step("dir.CreateSession")
	return d.Directory.CreateSession(ctx, s)
}

func (d killDir) PutTask(ctx context.Context, session string, t store.Doc) error {
	d.k.step("dir.PutTask")
	err := d.Directory.PutTask(ctx, session, t)
	d.k.step("dir.PutTask:done")
	return err
}

func (d killDir) AddApproval(ctx context.Context, a store.Approval) error {
	d.k.step("dir.AddApproval")
	return d.Directory.AddApproval(ctx, a)
}

func (d killDir) MoveApproval(ctx context.Context, id, from, to string, doc json.RawMessage) (bool, error) {
	d.k.step("dir.MoveApproval")
	return d.Directory.MoveApproval(ctx, id, from, to, doc)
}

func (d killDir) AppendEvent(ctx context.Context, session string, e store.Doc) error {
	d.k.step("dir.AppendEvent")
	return d.Directory.AppendEvent(ctx, session, e)
}

type killTools struct {
	tools.Provider
	k *killer
}

func (t killTools) CallTool(ctx context.Context, name string, args json.RawMessage) (chain.Response, error) {
	t.k.step("tool." + name)
	r, err := t.Provider.CallTool(ctx, name, args)
	t.k.step("tool." + name + ":done")
	return r, err
}

type killState struct {
	state.Store
	k *killer
}

func (s killState) CreateTask(t state.Task) error {
	s.k.step("state.CreateTask")
	return s.Store.CreateTask(t)
}

func (s killState) SetTaskStatus(id string, st state.Status) error {
	s.k.step("state.SetTaskStatus")
	return s.Store.SetTaskStatus(id, st)
}

func (s killState) SetTaskGraph(id string, g json.RawMessage) error {
	s.k.step("state.SetTaskGraph")
	return s.Store.SetTaskGraph(id, g)
}

func (s killState) CreateNode(n state.Node) error {
	s.k.step("state.CreateNode")
	return s.Store.CreateNode(n)
}

func (s killState) SetNodeStatus(id string, st state.Status, reason string) error {
	s.k.step("state.SetNodeStatus")
	return s.Store.SetNodeStatus(id, st, reason)
}

func (s killState) SetTarget(id, tool string, claimed bool) error {
	s.k.step("state.SetTarget")
	return s.Store.SetTarget(id, tool, claimed)
}

func (s killState) SetProgress(id string, stalls, rounds int) error {
	s.k.step("state.SetProgress")
	return s.Store.SetProgress(id, stalls, rounds)
}

func (s killState) AddUserMessage(text string) error {
	s.k.step("state.AddUserMessage")
	return s.Store.AddUserMessage(text)
}

func (s killState) AppendMessages(nodeID string, msgs ...model.Message) error {
	s.k.step("state.AppendMessages")
	return s.Store.AppendMessages(nodeID, msgs...)
}

func (s killState) Gate(nodeID, tool, callID string, args json.RawMessage) error {
	s.k.step("state.Gate")
	return s.Store.Gate(nodeID, tool, callID, args)
}

func (s killState) Approve(nodeID string, at time.Time) (abi.GatedCall, error) {
	s.k.step("state.Approve")
	return s.Store.Approve(nodeID, at)
}

func (s killState) ClearApproval(nodeID string) error {
	s.k.step("state.ClearApproval")
	return s.Store.ClearApproval(nodeID)
}

func (s killState) AnswerFollowUp(nodeID, answer string) (abi.FollowUp, error) {
	s.k.step("state.AnswerFollowUp")
	return s.Store.AnswerFollowUp(nodeID, answer)
}

func (s killState) Resuspend(nodeID string, at time.Time) error {
	s.k.step("state.Resuspend")
	return s.Store.Resuspend(nodeID, at)
}

func (s killState) Apply(nodeID string, effects []abi.Effect) error {
	s.k.step("state.Apply")
	return s.Store.Apply(nodeID, effects)
}

func (s killState) RecordCall(taskID, callID string, args json.RawMessage) error {
	s.k.step("state.RecordCall")
	return s.Store.RecordCall(taskID, callID, args)
}

func (s killState) SettleUncertain(taskID, tool, key string, took bool, result *abi.Observation) error {
	s.k.step("state.SettleUncertain")
	return s.Store.SettleUncertain(taskID, tool, key, took, result)
}

func (d killDir) SessionStates(ctx context.Context, f store.SessionFilter, after store.Cursor, limit int) ([]store.SessionState, error) {
	ls, ok := d.Directory.(store.SessionStates)
	if !ok {
		return nil, fmt.Errorf("killpoint: %T does not list session states", d.Directory)
	}
	return ls.SessionStates(ctx, f, after, limit)
}
