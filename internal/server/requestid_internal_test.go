package server

import (
	"slices"
	"testing"
)

func TestWildcards(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"", nil},
		{"GET /v1/sessions", nil},
		{"GET /v1/sessions/{session}/tasks/{task}", []string{"session", "task"}},
		{"GET /files/{path...}", []string{"path"}},
		{"GET /{$}", nil},
		{"GET /broken/{open", nil},
	} {
		if got := wildcards(tc.pattern); !slices.Equal(got, tc.want) {
			t.Errorf("wildcards(%q) = %q, want %q", tc.pattern, got, tc.want)
		}
	}
}
