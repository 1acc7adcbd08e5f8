package main

import (
	"testing"
)

// Tool and model text reaches the terminal through the client: what a
// terminal would act on is shown as U+FFFD.
func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"plain 市场部", "plain 市场部"},
		{"a\x1b[31mred\x1b[0m", "a\uFFFD[31mred\uFFFD[0m"},
		{"bell\a\x00\u009b", "bell\uFFFD\uFFFD\uFFFD"},
		{"tab\there", "tab here"},
	} {
		if got := printable(tt.in); got != tt.want {
			t.Errorf("printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := oneLine("a\r\nb\x1b"); got != "a ⏎ b\uFFFD" {
		t.Errorf("oneLine = %q", got)
	}
}
