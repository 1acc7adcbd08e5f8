package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	yaml "go.yaml.in/yaml/v3"

	"github.com/agentwarden/warden/abi"
)

// errConfigKey: a config file gives a key twice, or in another case than
// its own name. The errors that match it read without its text.
var errConfigKey = errors.New("config file key refused")

type fileKeyError struct{ msg string }

func (e *fileKeyError) Error() string        { return e.msg }
func (e *fileKeyError) Is(target error) bool { return target == errConfigKey }

func keyErr(format string, a ...any) error { return &fileKeyError{fmt.Sprintf(format, a...)} }

// checkConfigKeys refuses, before viper reads the file, what viper would
// read silently one way out of several: a key given twice in one mapping
// (JSON keeps the last), two keys that differ only in case (viper folds
// every key to lower case and keeps one of them), and a known key written
// in another case ("Addr": keys are kebab-case, exactly as --help lists
// them). Within mcp-servers the same holds for each server's keys. Unknown
// keys are left to readConfigFile, which lists them all.
func checkConfigKeys(path string, b []byte) error {
	var doc any
	switch filepath.Ext(path) {
	case ".json":
		if err := abi.CheckDuplicateKeys(b); err != nil {
			if !errors.Is(err, abi.ErrDuplicateKey) {
				return nil // not JSON: viper says so
			}
			return keyErr("%s", jsonPath(strings.TrimPrefix(err.Error(), "abi: strict json: ")))
		}
		if json.Unmarshal(b, &doc) != nil {
			return nil
		}
	case ".yaml", ".yml":
		var n yaml.Node
		if yaml.Unmarshal(b, &n) != nil {
			return nil
		}
		var err error
		if doc, err = yamlTree(&n, ""); err != nil {
			return err
		}
	case ".toml":
		// go-toml refuses a key defined twice itself, and viper reports it.
		if toml.Unmarshal(b, &doc) != nil {
			return nil
		}
	default:
		return nil
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	known := map[string]bool{}
	for _, s := range (&serveConfig{}).settings() {
		known[s.name] = true
	}
	known[configKey] = true // refused by readConfigFile with its own message
	if err := checkCase(top, "", known); err != nil {
		return err
	}
	if servers, ok := top["mcp-servers"].([]any); ok {
		fields := map[string]bool{}
		t := reflect.TypeFor[mcpServer]()
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			fields[name] = true
		}
		for i, s := range servers {
			if m, ok := s.(map[string]any); ok {
				if err := checkCase(m, fmt.Sprintf("mcp-servers[%d]", i), fields); err != nil {
					return err
				}
			}
		}
	}
	return checkFolded(doc, "")
}

// checkCase refuses a key of m that is a known name only when case is
// ignored.
func checkCase(m map[string]any, where string, known map[string]bool) error {
	names := slices.Sorted(maps.Keys(known))
	for _, k := range sortedKeys(m) {
		if known[k] {
			continue
		}
		for _, n := range names {
			if strings.EqualFold(k, n) {
				return keyErr("%s must be spelled %q", keyAt(where, k), n)
			}
		}
	}
	return nil
}

// checkFolded refuses two keys of one mapping, anywhere, that differ only
// in case: viper would keep one of them.
func checkFolded(v any, where string) error {
	switch v := v.(type) {
	case map[string]any:
		seen := map[string]string{}
		for _, k := range sortedKeys(v) {
			low := strings.ToLower(k)
			if prev, dup := seen[low]; dup {
				return keyErr("%s and %q differ only in case", keyAt(where, prev), k)
			}
			seen[low] = k
			if err := checkFolded(v[k], joinKey(where, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkFolded(e, fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// yamlTree turns a YAML document into maps and lists, refusing a key given
// twice in one mapping. Scalars are nil: only keys matter here.
func yamlTree(n *yaml.Node, where string) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return yamlTree(n.Content[0], where)
	case yaml.AliasNode:
		return yamlTree(n.Alias, where)
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if _, dup := m[k]; dup {
				return nil, keyErr("line %d: %s appears twice", n.Content[i].Line, keyAt(where, k))
			}
			v, err := yamlTree(n.Content[i+1], joinKey(where, k))
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := yamlTree(c, fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	}
	return nil, nil
}

// jsonPath rewrites abi's `duplicate key "k" in $.a[0]` as `key "k" of
// a[0] appears twice`.
func jsonPath(msg string) string {
	i := strings.LastIndex(msg, " in $")
	if i < 0 {
		return msg
	}
	key := strings.TrimPrefix(msg[:i], abi.ErrDuplicateKey.Error()+" ")
	return fmt.Sprintf("key %s%s appears twice", key, of(strings.TrimPrefix(msg[i+len(" in $"):], ".")))
}

func keyAt(where, k string) string { return fmt.Sprintf("key %q%s", k, of(where)) }

func of(where string) string {
	if where == "" {
		return ""
	}
	return " of " + where
}

func joinKey(where, k string) string {
	if where == "" {
		return k
	}
	return where + "." + k
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
