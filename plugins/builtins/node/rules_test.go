package node

import (
	"slices"
	"testing"
)

func TestPageBounds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		in   string
		size int
		want [][2]int
	}{
		{"empty", "", 4, [][2]int{{0, 0}}},
		{"exact", "abcdefgh", 4, [][2]int{{0, 4}, {4, 8}}},
		{"rune moves to the next page", "abc证d", 4, [][2]int{{0, 3}, {3, 7}}},
		{"rune longer than a page", "证证", 2, [][2]int{{0, 3}, {3, 6}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := pageBounds([]byte(tt.in), tt.size); !slices.Equal(got, tt.want) {
				t.Fatalf("pages = %v, want %v", got, tt.want)
			}
		})
	}
}
