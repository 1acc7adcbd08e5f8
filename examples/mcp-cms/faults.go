package main

import (
	"fmt"
	"sync"
	"time"
)

// Fault modes for failNext.
const (
	modeBusiness = "business" // a normal response {"code":50000,...}
	modeIsError  = "iserror"  // an MCP tool error (isError: true)
	modeRPC      = "rpc"      // a JSON-RPC internal error (-32603)
	modeInvalid  = "invalid"  // a JSON-RPC invalid params error (-32602)
	modeTimeout  = "timeout"  // no answer until the client gives up
	modeCrash    = "crash"    // the server process exits mid-call
)

var modes = []string{modeBusiness, modeIsError, modeRPC, modeInvalid, modeTimeout, modeCrash}

// faultConfig is what the flags, the environment or admin_set_faults set.
type faultConfig struct {
	Delay             time.Duration
	FailNext          int
	FailMode          string
	CommitTimeoutNext int
	// Tool limits the faults to one tool; "" means every business tool.
	Tool string
}

func (c faultConfig) validate() error {
	if c.FailNext < 0 || c.CommitTimeoutNext < 0 || c.Delay < 0 {
		return fmt.Errorf("fault counts and delay must not be negative")
	}
	if c.FailNext > 0 {
		for _, m := range modes {
			if c.FailMode == m {
				return nil
			}
		}
		return fmt.Errorf("fail mode %q is not one of %v", c.FailMode, modes)
	}
	return nil
}

// plan is what happens to one call.
type plan struct {
	delay         time.Duration
	fail          string // a mode, or ""
	commitTimeout bool
}

// faults holds the armed faults and counts the calls that reached tools.
type faults struct {
	mu    sync.Mutex
	cfg   faultConfig
	calls map[string]int
}

func newFaults(cfg faultConfig) *faults {
	return &faults{cfg: cfg, calls: map[string]int{}}
}

func (f *faults) set(cfg faultConfig) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg = cfg
}

func (f *faults) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cfg = faultConfig{}
	f.calls = map[string]int{}
}

// take counts a call to tool and consumes the faults armed for it: a failure
// first, else a commit-then-timeout.
func (f *faults) take(tool string) plan {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[tool]++
	if f.cfg.Tool != "" && f.cfg.Tool != tool {
		return plan{}
	}
	p := plan{delay: f.cfg.Delay}
	switch {
	case f.cfg.FailNext > 0:
		f.cfg.FailNext--
		p.fail = f.cfg.FailMode
	case f.cfg.CommitTimeoutNext > 0:
		f.cfg.CommitTimeoutNext--
		p.commitTimeout = true
	}
	return p
}

func (f *faults) snapshot() (faultConfig, map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := make(map[string]int, len(f.calls))
	for k, v := range f.calls {
		calls[k] = v
	}
	return f.cfg, calls
}
