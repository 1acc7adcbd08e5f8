package guest

// ItemsView is what Items answers, read in place and in one pass: each
// item's kind, raw JSON, text and members are decoded from the answer when
// asked, so that a guest going through the items in order allocates
// nothing per item or member (Items decodes every member into a Member
// first). Items asked out of order are found by reading the answer from
// the last item known. A cut or corrupted answer ends where it stops
// making sense: the items after it have kind 0 and no members.
type ItemsView struct {
	// Kind is the value's kind (WalkMissing when the path matches nothing).
	Kind byte
	b    string
	n    int
	at   []int // where each item known so far starts in b; one more past the last read
}

// ItemsView is Items read in place.
func (c *Call) ItemsView(path string, limit int) ItemsView {
	return viewItems(c.r.items(path, limit))
}

func viewItems(b string) ItemsView {
	if len(b) < 5 {
		return ItemsView{}
	}
	n := le32(b, 1)
	v := ItemsView{Kind: b[0], b: b, n: n, at: make([]int, 1, min(n, len(b)/9)+1)}
	v.at[0] = 5
	return v
}

// Len is the number of items the answer lists.
func (v *ItemsView) Len() int { return v.n }

// start is where item i starts, reading the answer up to it; -1 when the
// answer ends before it.
func (v *ItemsView) start(i int) int {
	for len(v.at) <= i {
		end := v.skip(v.at[len(v.at)-1], nil)
		if end < 0 {
			return -1
		}
		v.at = append(v.at, end)
	}
	return v.at[i]
}

// skip reads the item at b[at:], its members given to fn (when not nil),
// and says where the next one starts (-1 when the answer is cut).
func (v *ItemsView) skip(at int, fn func(key string, kind byte, raw, text string)) int {
	if at < 0 {
		return -1
	}
	iv, i, ok := itemValue(v.b, at)
	if !ok {
		return -1
	}
	if iv.Kind != WalkObject {
		return i
	}
	if i+4 > len(v.b) {
		return -1
	}
	m := le32(v.b, i)
	i += 4
	for range m {
		k, next, ok := lenField(v.b, i)
		if !ok {
			return -1
		}
		mv, next, ok := itemValue(v.b, next)
		if !ok {
			return -1
		}
		i = next
		if fn != nil {
			fn(k, mv.Kind, mv.Raw, mv.Text)
		}
	}
	return i
}

// Item is the i-th item's kind, raw JSON and text.
func (v *ItemsView) Item(i int) (kind byte, raw, text string) {
	at := v.start(i)
	if at < 0 {
		return 0, "", ""
	}
	iv, _, _ := itemValue(v.b, at)
	return iv.Kind, iv.Raw, iv.Text
}

// EachMember calls fn with each member of the i-th item, an object's, in
// document order (none for an item that is not an object).
func (v *ItemsView) EachMember(i int, fn func(key string, kind byte, raw, text string)) {
	at := v.start(i)
	end := v.skip(at, fn)
	if len(v.at) == i+1 && end >= 0 && i+1 < v.n {
		v.at = append(v.at, end) // read once: the next item starts here
	}
}
