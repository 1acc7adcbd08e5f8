package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// apiCall sends a request to the warden serve at base, authorised by key
// when it is set, and decodes a JSON answer into out when it is not nil; it
// returns the status.
func apiCall(t *testing.T, base, method, path, key, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode
}
