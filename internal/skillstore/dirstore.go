package skillstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentwarden/warden/contract"
	"github.com/agentwarden/warden/internal/yamljson"
)

// TableNames are the four studio tables, in the order DirStore reads them.
var TableNames = []string{"agent_profile", "skill_profile", "agent_skill_binding", "skill_tool_binding"}

// DirStore is the embedded Store: a directory holding one file per table,
// named <table>.yaml, <table>.yml or <table>.json (exactly one per table),
// each a list of rows whose keys are the table's column names. A
// skill_profile row gives its contract either inline in skill_contract (a
// string of JSON with comments, or a YAML/JSON object) or as
// skill_contract_file, a path relative to the directory. Missing table files
// are empty tables.
//
// Decoded tables are cached by the SHA-256 of the table files, so reading
// the directory every turn costs four file reads and a hash.
type DirStore struct {
	Dir string

	mu     sync.Mutex
	digest [32]byte
	tables contract.Tables
}

// NewDirStore returns a store reading dir.
func NewDirStore(dir string) *DirStore { return &DirStore{Dir: dir} }

// AgentTables implements Store.
func (d *DirStore) AgentTables(ctx context.Context, agentCode string) (contract.Tables, error) {
	t, err := d.All(ctx)
	if err != nil {
		return contract.Tables{}, err
	}
	return t.Filter(agentCode), nil
}

// All returns every row of the four tables.
func (d *DirStore) All(ctx context.Context) (contract.Tables, error) {
	if err := ctx.Err(); err != nil {
		return contract.Tables{}, err
	}
	files := make([][]byte, len(TableNames))
	names := make([]string, len(TableNames))
	h := sha256.New()
	for i, table := range TableNames {
		name, data, err := d.readTable(table)
		if err != nil {
			return contract.Tables{}, err
		}
		files[i], names[i] = data, name
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(data))
		h.Write(data)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	d.mu.Lock()
	defer d.mu.Unlock()
	if sum == d.digest && d.tables.Agents != nil {
		return d.withContractFiles(d.tables)
	}
	var t contract.Tables
	var skills []skillRow
	dst := []any{&t.Agents, &skills, &t.AgentSkills, &t.SkillTools}
	for i := range TableNames {
		if files[i] == nil {
			continue
		}
		// Read exactly: a contract written inline keeps its key order and
		// every digit of its numbers (a const id past 2^53 stays whole).
		doc, err := yamljson.ToJSON(files[i])
		if err == nil {
			err = json.Unmarshal(doc, dst[i])
		}
		if err != nil {
			return contract.Tables{}, fmt.Errorf("contract: store %s: %w: %w", names[i], contract.ErrStore, err)
		}
	}
	for _, r := range skills {
		sp, err := r.profile()
		if err != nil {
			return contract.Tables{}, fmt.Errorf("contract: store %s: skill %q: %w: %w", names[1], r.SkillKey, contract.ErrStore, err)
		}
		t.Skills = append(t.Skills, sp)
	}
	if t.Agents == nil {
		t.Agents = []contract.AgentProfile{}
	}
	d.digest, d.tables = sum, t
	return d.withContractFiles(t)
}

// withContractFiles fills skill_contract from skill_contract_file; those
// files are read on every call so that an edit shows up at the next turn.
func (d *DirStore) withContractFiles(t contract.Tables) (contract.Tables, error) {
	out := t
	out.Skills = make([]contract.SkillProfile, len(t.Skills))
	for i, s := range t.Skills {
		if f, ok := strings.CutPrefix(s.SkillContract, contractFileMarker); ok {
			b, err := os.ReadFile(filepath.Join(d.Dir, filepath.FromSlash(f)))
			if err != nil {
				return contract.Tables{}, fmt.Errorf("contract: store skill %q: %w: %w", s.SkillKey, contract.ErrStore, err)
			}
			s.SkillContract = string(b)
		}
		out.Skills[i] = s
	}
	return out, nil
}

// contractFileMarker marks a cached row whose contract lives in a file; the
// NUL byte keeps it from colliding with contract text.
const contractFileMarker = "\x00file:"

func (d *DirStore) readTable(table string) (string, []byte, error) {
	var found string
	var data []byte
	for _, ext := range []string{".yaml", ".yml", ".json"} {
		name := table + ext
		b, err := os.ReadFile(filepath.Join(d.Dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("contract: store %s: %w: %w", name, contract.ErrStore, err)
		}
		if found != "" {
			return "", nil, fmt.Errorf("contract: store %s: %w: both %s and %s exist", table, contract.ErrStore, found, name)
		}
		found, data = name, b
	}
	return found, data, nil
}

type skillRow struct {
	ID                contract.ID     `json:"id"`
	SkillKey          string          `json:"skill_key"`
	SkillName         string          `json:"skill_name"`
	SemanticDesc      string          `json:"semantic_desc"`
	SkillManual       string          `json:"skill_manual"`
	SkillContract     json.RawMessage `json:"skill_contract"`
	SkillContractFile string          `json:"skill_contract_file"`
	Status            string          `json:"status"`
}

func (r skillRow) profile() (contract.SkillProfile, error) {
	sp := contract.SkillProfile{ID: r.ID, SkillKey: r.SkillKey, SkillName: r.SkillName, SemanticDesc: r.SemanticDesc, SkillManual: r.SkillManual, Status: r.Status}
	raw := bytes.TrimSpace(r.SkillContract)
	switch {
	case r.SkillContractFile != "" && len(raw) > 0 && string(raw) != "null":
		return sp, errors.New("both skill_contract and skill_contract_file are set")
	case r.SkillContractFile != "":
		sp.SkillContract = contractFileMarker + r.SkillContractFile
	case len(raw) > 0 && raw[0] == '"':
		if err := json.Unmarshal(raw, &sp.SkillContract); err != nil {
			return sp, err
		}
	case len(raw) > 0 && string(raw) != "null":
		sp.SkillContract = string(raw)
	}
	return sp, nil
}
