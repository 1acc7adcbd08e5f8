package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// metricsGet reads base's /metrics with the fixture's admin key.
func metricsGet(base string) (*http.Response, error) {
	req, err := http.NewRequest("GET", base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	return http.DefaultClient.Do(req)
}

// scrape answers GET url with key: the status, the error code, the body.
func scrape(t *testing.T, url, key string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
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
	var eb struct {
		Error struct{ Code string } `json:"error"`
	}
	if resp.StatusCode >= 400 {
		_ = json.Unmarshal(b, &eb)
	}
	return resp.StatusCode, eb.Error.Code, string(b)
}

// TestServeMetricsAccess: on the API's address /metrics, which names every
// tenant, answers an admin or metrics key only; with --metrics-addr it is
// served there without a key, and the API's address does not serve it.
func TestServeMetricsAccess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example MCP server")
	}
	const metricsKey = "metrics-key-0123456789"
	cms := buildBin(t, "mcp-cms", "../../examples/mcp-cms")
	skills, _, script := serveFixture(t)
	keys := filepath.Join(t.TempDir(), "keys.json")
	writeFile(t, keys, `{"tenants":[{"tenant":"acme","agent":"cms","keys":["`+tenantKey+`"]}],"admin_keys":["`+adminKey+`"],"metrics_keys":["`+metricsKey+`"]}`)
	args := []string{"--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--model", "scripted",
		"--model-script", script, "--tools", "mcp-command", "--mcp-command", cms, "--shutdown-grace", "2s"}
	const metric = "warden_http_requests_total"

	t.Run("on the API's address", func(t *testing.T) {
		base, stop := startServe(t, args)
		defer stop()
		// A tenant request, so that there is something to scrape.
		if code := apiCall(t, base, "GET", "/v1/sessions", tenantKey, "", nil); code != 200 {
			t.Fatalf("sessions: %d", code)
		}
		for _, tt := range []struct {
			name, key string
			status    int
			code      string
		}{
			{"no key", "", 401, "unauthorized"},
			{"unknown key", "nope", 401, "unauthorized"},
			{"tenant key", tenantKey, 403, "forbidden"},
			{"admin key", adminKey, 200, ""},
			{"metrics key", metricsKey, 200, ""},
		} {
			status, code, body := scrape(t, base+"/metrics", tt.key)
			if status != tt.status || code != tt.code || (status == 200) != strings.Contains(body, metric) {
				t.Errorf("%s: %d %s, metrics shown %v; want %d %s", tt.name, status, code, strings.Contains(body, metric), tt.status, tt.code)
			}
		}
	})

	t.Run("on an address of their own", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		maddr := l.Addr().String()
		l.Close()
		base, stop := startServe(t, append(args, "--metrics-addr", maddr))
		defer stop()
		if code := apiCall(t, base, "GET", "/v1/sessions", tenantKey, "", nil); code != 200 {
			t.Fatalf("sessions: %d", code)
		}
		if status, code, body := scrape(t, "http://"+maddr+"/metrics", ""); status != 200 || code != "" || !strings.Contains(body, metric) {
			t.Fatalf("metrics-addr: %d %s %.200s", status, code, body)
		}
		if status, code, body := scrape(t, base+"/metrics", adminKey); status != 404 || code != "not_found" || strings.Contains(body, metric) {
			t.Fatalf("API address: %d %s %.200s", status, code, body)
		}
		// The metrics address serves nothing of the API.
		if status, _, _ := scrape(t, "http://"+maddr+"/v1/sessions", tenantKey); status != 404 {
			t.Fatalf("metrics-addr serves the API: %d", status)
		}
	})
}
