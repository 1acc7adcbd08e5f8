package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"

	"github.com/agentwarden/warden/internal/telemetry"
)

// TestSetupTracing installs the stdout exporter (the only test here that
// touches the global tracer provider), and reads the spans back from the
// file.
func TestSetupTracing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "spans.json")
	shutdown, err := telemetry.SetupTracing("stdout:"+file, attribute.String("service.version", "1.2.3"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := otel.Tracer("test").Start(context.Background(), "warden.task")
	_, child := otel.Tracer("test").Start(ctx, "warden.node")
	child.End()
	parent.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	type span struct {
		Name        string
		SpanContext struct{ TraceID, SpanID string }
		Parent      struct{ SpanID string }
		Resource    []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	var got []span
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s span
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, s)
	}
	if len(got) != 2 || got[0].Name != "warden.node" || got[1].Name != "warden.task" {
		t.Fatalf("spans %+v", got)
	}
	if got[0].Parent.SpanID != got[1].SpanContext.SpanID || got[0].SpanContext.TraceID != got[1].SpanContext.TraceID {
		t.Fatalf("warden.node is not the child of warden.task: %+v", got)
	}
	res := map[string]any{}
	for _, kv := range got[1].Resource {
		res[kv.Key] = kv.Value.Value
	}
	if len(res) != 2 || res["service.name"] != "warden" || res["service.version"] != "1.2.3" {
		t.Fatalf("resource %v", res)
	}
}

func TestSetupTracingNone(t *testing.T) {
	t.Parallel()
	shutdown, err := telemetry.SetupTracing("none")
	if err != nil {
		t.Fatal(err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSetupTracingRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec string
		want string
		is   error
	}{
		{"", `telemetry: trace exporter "" (want none, stdout:FILE or otlp:URL): unknown trace exporter`, telemetry.ErrTraceSpec},
		{"otlp", `telemetry: trace exporter "otlp" (want none, stdout:FILE or otlp:URL): unknown trace exporter`, telemetry.ErrTraceSpec},
		{"otlp:collector:4318", `telemetry: trace exporter otlp:collector:4318: want an http(s) URL: unknown trace exporter`, telemetry.ErrTraceSpec},
		{"otlp:http://", `telemetry: trace exporter otlp:http://: want an http(s) URL: unknown trace exporter`, telemetry.ErrTraceSpec},
		{"stdout:", `telemetry: trace exporter "stdout:" (want none, stdout:FILE or otlp:URL): unknown trace exporter`, telemetry.ErrTraceSpec},
		{"stdout:" + filepath.Join(t.TempDir(), "missing", "spans.json"), "", os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			t.Parallel()
			_, err := telemetry.SetupTracing(tt.spec)
			if !errors.Is(err, tt.is) || (tt.want != "" && err.Error() != tt.want) {
				t.Fatalf("error %v, want %s (%v)", err, tt.want, tt.is)
			}
		})
	}
}

// TestSetupTracingOTLP sends spans to a collector's OTLP/HTTP endpoint.
func TestSetupTracingOTLP(t *testing.T) {
	var mu sync.Mutex
	var got []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %s %s %t", r.Method, r.URL.Path, r.Header.Get("Content-Type"), bytes.Contains(b, []byte("warden.task"))))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	shutdown, err := telemetry.SetupTracing("otlp:" + collector.URL + "/v1/traces")
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(context.Background(), "warden.task")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "POST /v1/traces application/x-protobuf true" {
		t.Fatalf("the collector got %q", got)
	}
}

// lockedBuffer is a bytes.Buffer safe for the exporter's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestOTelErrorsLogged points the exporter at a closed port: the failed
// export is one JSON record of the logger LogOTel named, not plain text on
// standard error.
func TestOTelErrorsLogged(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var buf lockedBuffer
	log, err := telemetry.NewLogger(&buf, "info")
	if err != nil {
		t.Fatal(err)
	}
	telemetry.LogOTel(log)
	t.Cleanup(func() { telemetry.LogOTel(slog.New(slog.DiscardHandler)) })
	shutdown, err := telemetry.SetupOTLPNoRetry("http://" + addr + "/v1/traces")
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(context.Background(), "warden.task")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var rec struct{ Level, Msg, Err string }
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rec) != nil {
		t.Fatalf("logged %q, want one JSON record", buf.String())
	}
	if rec.Level != "ERROR" || rec.Msg != telemetry.OTelErrorMessage || !strings.Contains(rec.Err, addr) || !strings.Contains(rec.Err, "connection refused") {
		t.Fatalf("record %+v", rec)
	}
}
