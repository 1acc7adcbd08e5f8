package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/agentwarden/warden/internal/store"
)

// fileKey identifies what one read of a plugin file found: the module's
// digest and its sidecar's ("" when there is none).
type fileKey struct{ module, sidecar string }

func (m moduleFile) key() fileKey { return fileKey{m.digest, m.sidecarDigest} }

// fileState is what the watcher knows of one plugin file.
type fileState struct {
	// attempted is the last content installed or refused: it is not tried
	// again until the file changes.
	attempted fileKey
	// pending is new content the last scan saw; it is tried when the next
	// scan sees it unchanged.
	pending fileKey
	// unreadable is set once a missing or unreadable file was logged.
	unreadable bool
}

// Watch scans Options.Plugins every interval until ctx ends, installing
// each changed module (or sidecar) as the next generation of its slot
// through the same checks as the admin API. It blocks; run it after
// LoadPlugins, and end it before Close. It returns ErrConfig at once when
// the server has no plugin directory or interval is not positive.
//
// A file is installed only once two consecutive scans read the same
// content, so a module caught half-written is not tried; still, drop files
// by writing them beside the directory's modules under another name and
// renaming them into place, which is atomic. A candidate that fails leaves
// the serving generation, is logged and recorded as refused, and is not
// tried again until its file changes.
func (s *Server) Watch(ctx context.Context, interval time.Duration) error {
	if s.opt.Plugins == "" || interval <= 0 {
		return fmt.Errorf("%w: watching needs a plugin directory and a positive interval", ErrConfig)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.Scan(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("plugin directory scan failed", "dir", s.opt.Plugins, "err", err)
			}
		}
	}
}

// Scan reads every first-party module of Options.Plugins once, and
// installs those whose content is new and was read the same by the
// previous scan. Tests drive the watcher with it; Watch calls it every
// interval. A refused candidate is not an error of Scan (it is recorded);
// Scan fails only when the server has no plugin directory or ctx ends.
func (s *Server) Scan(ctx context.Context) error {
	dir := s.opt.Plugins
	if dir == "" {
		return fmt.Errorf("%w: no plugin directory", ErrConfig)
	}
	ps := s.pluginsOf()
	ps.watchMu.Lock()
	defer ps.watchMu.Unlock()
	for _, f := range pluginFiles {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("server: scan %s: %w", dir, err)
		}
		st := ps.files[f.slot]
		if st == nil {
			st = &fileState{}
			ps.files[f.slot] = st
		}
		m, err := readPluginFile(dir, f)
		if err != nil {
			// A module taken away, or unreadable, changes nothing: the
			// serving generation stays. Said once per episode.
			if !st.unreadable {
				st.unreadable = true
				level := "unreadable"
				if errors.Is(err, fs.ErrNotExist) {
					level = "missing"
				}
				s.log.Warn("plugin file "+level+"; the serving generation stays", "slot", f.slot, "file", m.path, "err", err)
			}
			st.pending = fileKey{}
			continue
		}
		st.unreadable = false
		k := m.key()
		switch {
		case k == st.attempted:
			st.pending = fileKey{}
			continue
		case k != st.pending:
			st.pending = k // new, or still changing: try once it holds still
			continue
		}
		prev := st.attempted
		st.pending, st.attempted = fileKey{}, k
		if sl, err := s.slot(f.slot); err == nil && sl.Current().Digest == k.module && k.sidecar == prev.sidecar {
			continue // already serving (installed through the admin API, say)
		}
		// An install in progress finishes even if ctx ends meanwhile: a
		// half-done candidate would only be recorded as refused.
		s.installFile(context.WithoutCancel(ctx), f, m)
	}
	return nil
}

// installFile proposes a changed file as its slot's candidate, as an
// install through the admin API does; a bad sidecar is a refusal.
func (s *Server) installFile(ctx context.Context, f pluginFile, m moduleFile) {
	file := filepath.Base(m.path)
	src, config, err := m.source()
	if err != nil {
		s.record(ctx, GenerationRecord{Slot: f.slot, Event: GenerationRefused, Digest: m.digest, Reason: err.Error(), Origin: OriginWatch, File: file})
		s.log.Warn("plugin candidate refused", "slot", f.slot, "file", file, "digest", m.digest, "origin", OriginWatch, "err", err)
		return
	}
	g := store.SlotGeneration{Slot: f.slot, Digest: m.digest, Config: config, Origin: store.SlotOriginWatch, File: file}
	c, added, err := s.propose(ctx, g, src.Bytes, src.SHA256)
	if err != nil {
		s.log.Warn("plugin candidate not proposed", "slot", f.slot, "file", file, "digest", m.digest, "err", err)
		return
	}
	if added {
		// As an install without ?wait=: until this instance answered it.
		_, _ = s.waitRollout(ctx, f.slot, c.Number, false, 0)
	}
}
