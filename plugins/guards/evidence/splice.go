package evidence

import (
	"encoding/json"
	"strconv"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/contract"
)

// spliceItem names the call's EvidenceItem as parts the host assembles
// (guest.Parts), byte for byte what appendItem writes of item's
// EvidenceItem: the guest writes every field it decides, and the host
// copies in the response (the payload), the extracts' values, the
// excerpt (the response's compact head), the locator's canonical arguments
// and, for a single extract, its leaf values (the walk's), so that none
// of them is copied into the guest to be encoded again.
func (e *call) spliceItem(p *guest.Parts, retrievedAt string) {
	if e.toolSpec != nil && len(e.toolSpec.Extracts) == 1 {
		e.walkLimit = 1 // whether there are leaves; the host writes them
	}
	// In wasm an array extract stays in the envelope: the host copies it
	// into the item and lists its items for the entities.
	e.lazyArrays = listByHost && e.toolSpec != nil && len(e.toolSpec.Extracts) <= 64
	truncated := e.size > e.budget
	p.JSON(`{"id":`)
	p.String(e.id)
	p.JSON(`,"sourceType":`)
	p.String(sourceType(e.req, e.tool))
	p.JSON(`,"locator":`)
	if e.argsPath != "" {
		p.StringOf(Locator, guest.Text(e.tool+" "), guest.CanonicalText(e.argsPath))
	} else {
		p.String(contract.Truncate([]byte(e.tool+" "+e.canonArgs()), Locator))
	}
	p.JSON(`,"retrievedAt":`)
	p.String(retrievedAt)
	p.JSON(`,"toolCallId":`)
	p.String(e.callID)
	if e.size > 0 {
		p.JSON(`,"excerpt":`)
		p.StringOf(Excerpt, guest.RawText(abi.FieldResponse))
		p.JSON(`,"contentHash":`)
		p.String(e.contentHash())
	}
	p.JSON(`,"tool":`)
	p.String(e.tool)
	p.JSON(`,"status":`)
	p.String(e.status.String())
	p.JSON(`,"businessOk":`)
	p.JSON(strconv.FormatBool(e.ok))
	result, empty := abi.ResultFailure, false
	var x *contract.Extraction
	if e.ok {
		x = e.extraction()
		result, empty = abi.ResultWithData, x.Empty
		if x.Empty {
			result = abi.ResultEmpty
		}
	}
	p.JSON(`,"result":`)
	p.String(result)
	p.JSON(`,"empty":`)
	p.JSON(strconv.FormatBool(empty))
	if truncated {
		p.JSON(`,"truncated":true`)
	}
	if e.size != 0 {
		p.JSON(`,"size":`)
		p.JSON(strconv.Itoa(e.size))
	}
	if x != nil {
		e.spliceExtracts(p, x)
	}
	if e.size > 0 {
		p.JSON(`,"payload":`)
		if truncated {
			b, _ := json.Marshal(contract.Truncate(e.response(), e.budget))
			p.RawJSON(b)
		} else {
			p.Value(abi.FieldResponse)
		}
	}
	p.JSON(`}`)
}

// spliceExtracts writes the item's extracts, counts and values as item
// and appendItem do: by name in key order (a later extract of the same
// name replacing an earlier one), the values merged across extracts in
// their order.
func (e *call) spliceExtracts(p *guest.Parts, x *contract.Extraction) {
	if len(x.Items) == 0 {
		return
	}
	// Each name's extract: the last of that name (as item's maps keep
	// it), and the last of that name with a value; in key order.
	names := make([]named, 0, len(x.Items))
	for i, xi := range x.Items {
		name := xi.Key
		if name == "" {
			name = xi.Path
		}
		j := 0
		for j < len(names) && names[j].name < name {
			j++
		}
		if j == len(names) || names[j].name != name {
			names = append(names, named{})
			copy(names[j+1:], names[j:])
			names[j] = named{name: name, value: -1}
		}
		names[j].count = i
		if xi.Value.Exists() {
			names[j].value = i
		}
	}
	first := true
	for _, n := range names {
		if n.value < 0 {
			continue
		}
		if first {
			p.JSON(`,"extracts":{`)
		} else {
			p.JSON(",")
		}
		first = false
		p.String(n.name)
		p.JSON(":")
		if i := n.value; i < len(e.walked) && e.walked[i] != nil {
			p.Value(e.paths[i]) // the value the host found
		} else {
			p.Literal(func(b []byte) []byte { return appendCompact(b, []byte(x.Items[i].Value.Raw), false, -1) })
		}
	}
	if !first {
		p.JSON("}")
	}
	p.JSON(`,"counts":{`)
	for j, n := range names {
		if j > 0 {
			p.JSON(",")
		}
		p.String(n.name)
		p.JSON(":")
		p.JSON(strconv.Itoa(x.Items[n.count].Count))
	}
	p.JSON("}")
	if len(x.Items) == 1 && len(e.walked) == 1 && e.walked[0] != nil && e.walkLimit == 1 {
		// One extract: its values are the walk's leaves as they are.
		if x.Items[0].Value.Exists() && len(e.walked[0].Leaves) > 0 {
			p.JSON(`,"values":`)
			p.Leaves(e.paths[0], MaxValues)
		}
		return
	}
	var l leaves
	var vals []string
	for i, xi := range x.Items {
		if xi.Value.Exists() {
			vals = e.appendLeaves(&l, vals, i, xi)
		}
	}
	if len(vals) > 0 {
		p.JSON(`,"values":[`)
		for i, v := range vals {
			if i > 0 {
				p.JSON(",")
			}
			p.String(v)
		}
		p.JSON("]")
	}
}

// spliceEntities writes the entity.record payloads entities makes, each
// ended by End, and says how many.
func (e *call) spliceEntities(p *guest.Parts) int {
	if !e.ok {
		return 0
	}
	x := e.extraction()
	n := 0
	var list func(int) (contract.ItemList, bool)
	if listByHost {
		list = func(i int) (contract.ItemList, bool) {
			l, ok := e.listItems(i)
			if !ok {
				e.value(i) // the guest reads it itself: copied in now
			}
			return l, ok
		}
	}
	e.toolSpec.EachEntityOf([]byte(e.rawArgs.Raw), *x, list, func(f *contract.EntityFields) {
		// an entity's values are scalars, whose raw JSON is compact
		p.Literal(func(b []byte) []byte { return appendEntityFields(b, f, true) })
		p.End()
		n++
	})
	return n
}

// named is an extract name of an item: the extract whose count it
// records and the one whose value it records (-1 for none).
type named struct {
	name         string
	count, value int
}
