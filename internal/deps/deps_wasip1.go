//go:build wasip1

package dep

import _ "github.com/extism/go-pdk"
