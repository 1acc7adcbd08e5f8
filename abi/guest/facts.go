package guest

import (
	"github.com/agentwarden/warden/abi"
)

// appendFacts appends facts as json.Marshal encodes a []abi.Fact, without
// its reflection, which costs much inside a guest (TestAppendFacts and
// FuzzAppendFacts check the bytes against json.Marshal).
func appendFacts(b []byte, facts []abi.Fact) []byte {
	b = append(b, '[')
	for i := range facts {
		f := &facts[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = abi.AppendJSONString(b, f.Path, true)
		b = append(b, `,"source":`...)
		b = abi.AppendJSONString(b, f.Source, true)
		if f.Detail != "" {
			b = append(b, `,"detail":`...)
			b = abi.AppendJSONString(b, f.Detail, true)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}
