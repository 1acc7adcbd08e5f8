package main

import (
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/fakeprovider"
	"github.com/agentwarden/warden/internal/model"
)

// The model-* keys of warden serve: read from every source with their
// types, validated once, naming the key.
func TestConfigModelKeys(t *testing.T) {
	t.Parallel()
	f := newConfigFixture(t)
	openaiArgs := func(extra ...string) []string {
		return f.with(append([]string{"--model", "openai", "--base-url", "http://127.0.0.1:1/v1", "--model-name", "m"}, extra...)...)
	}
	file := f.file(t, "model.yaml", "model-max-retries: 5\nmodel-stream: true\nmodel-parallel-tool-calls: false\nmodel-backoff: 250ms\n")
	jsonFile := f.file(t, "model.json", `{"model-max-retries": 2, "model-strict": false}`)
	tomlFile := f.file(t, "model.toml", "model-max-retries = 7\nmodel-tool-choice = \"required\"\n")
	fractional := f.file(t, "frac.json", `{"model-max-retries": 1.5}`)
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string
		wantErr string
	}{
		{name: "defaults", args: openaiArgs(),
			want: "1m0s|3m0s|3|1s|30s|false|true|default|"},
		{name: "flags", args: openaiArgs("--model-attempt-timeout", "20s", "--model-call-timeout", "1m", "--model-max-retries", "0",
			"--model-backoff", "2s", "--model-max-backoff", "8s", "--model-stream", "--model-strict=false", "--model-parallel-tool-calls", "--model-tool-choice", "auto"),
			want: "20s|1m0s|0|2s|8s|true|false|true|auto"},
		{name: "env", args: openaiArgs(), env: map[string]string{"WARDEN_MODEL_MAX_RETRIES": "4", "WARDEN_MODEL_PARALLEL_TOOL_CALLS": "false"},
			want: "1m0s|3m0s|4|1s|30s|false|true|false|"},
		{name: "yaml file", args: openaiArgs("--config", file), want: "1m0s|3m0s|5|250ms|30s|true|true|false|"},
		{name: "json file", args: openaiArgs("--config", jsonFile), want: "1m0s|3m0s|2|1s|30s|false|false|default|"},
		{name: "toml file", args: openaiArgs("--config", tomlFile), want: "1m0s|3m0s|7|1s|30s|false|true|default|required"},
		{name: "retries not a number", args: openaiArgs("--model-max-retries", "many"),
			wantErr: `--model-max-retries (WARDEN_MODEL_MAX_RETRIES): flag --model-max-retries: "many" is not an integer`},
		{name: "retries not whole in a file", args: openaiArgs("--config", fractional),
			wantErr: "--model-max-retries (WARDEN_MODEL_MAX_RETRIES): file " + fractional + " key model-max-retries: 1.5 is not an integer"},
		{name: "too many retries", args: openaiArgs("--model-max-retries", "11"),
			wantErr: "--model-max-retries (WARDEN_MODEL_MAX_RETRIES): 11 is not between 0 and 10"},
		{name: "negative retries from env", args: openaiArgs(), env: map[string]string{"WARDEN_MODEL_MAX_RETRIES": "-1"},
			wantErr: "--model-max-retries (WARDEN_MODEL_MAX_RETRIES): -1 is not between 0 and 10"},
		{name: "zero attempt timeout", args: openaiArgs("--model-attempt-timeout", "0s"),
			wantErr: "--model-attempt-timeout (WARDEN_MODEL_ATTEMPT_TIMEOUT): 0s is not positive"},
		{name: "attempt longer than the call", args: openaiArgs("--model-attempt-timeout", "5m"),
			wantErr: "--model-attempt-timeout (WARDEN_MODEL_ATTEMPT_TIMEOUT): 5m0s exceeds --model-call-timeout 3m0s"},
		{name: "negative call timeout", args: openaiArgs("--model-call-timeout=-1s"),
			wantErr: "--model-call-timeout (WARDEN_MODEL_CALL_TIMEOUT): -1s is not positive"},
		{name: "zero backoff", args: openaiArgs("--model-backoff", "0s"),
			wantErr: "--model-backoff (WARDEN_MODEL_BACKOFF): 0s is not positive"},
		{name: "max backoff below backoff", args: openaiArgs("--model-backoff", "10s", "--model-max-backoff", "5s"),
			wantErr: "--model-max-backoff (WARDEN_MODEL_MAX_BACKOFF): 5s is below --model-backoff 10s"},
		{name: "tool choice", args: openaiArgs("--model-tool-choice", "function"),
			wantErr: `--model-tool-choice (WARDEN_MODEL_TOOL_CHOICE): "function" is not auto, none or required`},
		{name: "stream not a bool", args: openaiArgs(), env: map[string]string{"WARDEN_MODEL_STREAM": "yes"},
			wantErr: `--model-stream (WARDEN_MODEL_STREAM): env WARDEN_MODEL_STREAM: "yes" is not a bool`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := loadServeConfig(tt.args, envOf(tt.env), io.Discard)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("got %v\nwant %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			oc := c.model.config(c.BaseURL, c.apiKey, c.ModelName)
			parallel := "default"
			if oc.ParallelToolCalls != nil {
				parallel = fmt.Sprint(*oc.ParallelToolCalls)
			}
			got := fmt.Sprintf("%s|%s|%d|%s|%s|%t|%t|%s|%s", oc.AttemptTimeout, oc.CallTimeout, oc.MaxRetries, oc.InitialBackoff,
				oc.MaxBackoff, oc.Stream, oc.Strict, parallel, oc.ToolChoice)
			if got != tt.want {
				t.Errorf("config\ngot  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestModelKeysConfig(t *testing.T) {
	t.Parallel()
	k := defaultModelKeys()
	k.MaxRetries, k.Backoff, k.ToolChoice = 1, 5*time.Millisecond, "none"
	c := k.config("http://h/v1", "sk", "m")
	if c.MaxRetries != 1 || c.InitialBackoff != 5*time.Millisecond || c.ToolChoice != model.ToolChoiceNone || c.MaxResponseBytes != 8<<20 {
		t.Errorf("config = %v", c)
	}
}

// warden serve --model openai: a turn's tokens count per tenant, and a
// provider failure answers with its type.
func TestServeOpenAI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example MCP server")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "mcp-cms")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/mcp-cms").CombinedOutput(); err != nil {
		t.Fatalf("build mcp-cms: %v\n%s", err, out)
	}
	prov := fakeprovider.New(t,
		fakeprovider.Reply{Calls: []fakeprovider.Call{{ID: "c1", Name: "query_space", Arguments: `{"spaceId":"sp-1"}`}},
			Usage: &fakeprovider.Usage{Prompt: 900, Completion: 20, Cached: 512}},
		fakeprovider.Reply{Calls: []fakeprovider.Call{{ID: "c2", Name: "builtin_node_finish", Arguments: `{"output":"found Marketing"}`}},
			Usage: &fakeprovider.Usage{Prompt: 1000, Completion: 15}},
		fakeprovider.ContextLength(),
	)
	skills, keys, _ := serveFixture(t)
	base, _ := startServe(t, []string{"--addr", "127.0.0.1:0", "--skills", skills, "--keys", keys, "--model", "openai",
		"--base-url", prov.BaseURL(), "--model-name", "gpt-test", "--model-stream", "--model-max-retries", "0",
		"--tools", "mcp-command", "--mcp-command", bin, "--shutdown-grace", "2s"})
	var sess struct {
		ID string `json:"id"`
	}
	if code := apiCall(t, base, "POST", "/v1/sessions", tenantKey, "", &sess); code != http.StatusCreated {
		t.Fatalf("create session: %d", code)
	}
	var res struct {
		Task struct {
			Status string `json:"status"`
			Output any    `json:"output"`
		} `json:"task"`
	}
	if code := apiCall(t, base, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", tenantKey, `{"text":"find Marketing"}`, &res); code != http.StatusOK || res.Task.Status != "DONE" {
		t.Fatalf("message: %d %+v", code, res)
	}
	var eb struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	code := apiCall(t, base, "POST", "/v1/sessions/"+sess.ID+"/messages?wait=5m", tenantKey, `{"text":"and again"}`, &eb)
	const msg = "model: context length exceeded: HTTP 400 (context_length_exceeded): This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages."
	if code != http.StatusUnprocessableEntity || eb.Error.Code != "context_length_exceeded" || eb.Error.Message != msg {
		t.Errorf("context length: %d %+v", code, eb)
	}
	for _, r := range prov.Requests() {
		if !r.Stream {
			t.Errorf("a request without stream: %s", r.Body)
		}
	}
	resp, err := metricsGet(base)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`warden_model_tokens_total{kind="prompt",model="gpt-test",tenant="acme"} 1900`,
		`warden_model_tokens_total{kind="completion",model="gpt-test",tenant="acme"} 35`,
		`warden_model_tokens_total{kind="cached",model="gpt-test",tenant="acme"} 512`,
		`warden_model_failures_total{kind="context_length",model="gpt-test",tenant="acme"} 1`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
