package rules

import "github.com/agentwarden/warden/abi"

// AppendString appends s to dst as a JSON string with HTML escaping off
// (abi.AppendJSONString).
func AppendString(dst []byte, s string) []byte { return abi.AppendJSONString(dst, s, false) }
