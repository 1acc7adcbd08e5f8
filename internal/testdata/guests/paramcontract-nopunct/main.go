//go:build wasip1

// Command paramcontract-nopunct is a changed generation of the first-party
// ParamContract (version 1.1.0) whose USER source also ignores punctuation
// and symbols: "Q3 launch" matches a user who typed "q3-launch". The
// hot-swap tests swap it in under load.
package main

import (
	"strings"
	"unicode"

	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/plugins/guards/paramcontract"
)

func normalise(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPunct(r) || unicode.IsSymbol(r) {
			return -1
		}
		return r
	}, paramcontract.Normalise(s))
}

func init() {
	guest.Serve(paramcontract.New(paramcontract.Options{Version: "1.1.0", Normalise: normalise}))
}

func main() {}
