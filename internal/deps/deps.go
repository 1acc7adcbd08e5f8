// Package dep pins dependencies until the packages that use them land.
package dep
import (
 _ "github.com/tetratelabs/wazero"
 _ "github.com/extism/go-sdk"
 _ "github.com/tidwall/gjson"
 _ "github.com/tidwall/sjson"
 _ "sigs.k8s.io/yaml"
)
