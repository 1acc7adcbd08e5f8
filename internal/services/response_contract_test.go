package services

import (
	"errors"
	"strings"
	"testing"
)

func TestResponseJudge(t *testing.T) {
	t.Parallel()
	const c = `"contract":{"success":{"path":"code","op":"EQ","value":0},"error":{"code":"err","message":"msg"}}`
	cases := []struct {
		name, req, want string
	}{
		{"ok", `{"tool":"t",` + c + `,"response":{"code":0}}`, "1"},
		{"no contract", `{"tool":"t","response":{"code":9}}`, "1"},
		{"downstream code", `{"tool":"t",` + c + `,"response":{"code":1,"err":"system.50001","msg":"余额不足"}}`, "0业务失败 [system.50001]：余额不足"},
		{"downstream code en", `{"tool":"t","locale":"en",` + c + `,"response":{"code":1,"err":"E1","msg":"no"}}`, "0business failure [E1]: no"},
		{"no downstream code", `{"tool":"t",` + c + `,"response":{"code":1,"msg":"余额不足"}}`, "0业务失败：余额不足"},
		{"empty response", `{"tool":"t",` + c + `}`, "0业务失败：返回为空"},
		{"verify is ignored", `{"tool":"t","contract":{"sideEffect":"WRITE","success":{"path":"ok","op":"TRUTHY"},"verify":{"tool":"elsewhere"}},"response":{"ok":true}}`, "1"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Call("response.judge", []byte(tt.req), nil)
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestResponseJudgeInvalidContract(t *testing.T) {
	t.Parallel()
	_, err := Call("response.judge", []byte(`{"tool":"t","contract":{"sideEffect":"WRITE"}}`), nil)
	if err == nil || !strings.HasPrefix(err.Error(), `services: contract of tool "t": `) {
		t.Fatalf("err = %v", err)
	}
	if errors.Is(err, ErrUnknown) {
		t.Fatal("not an unknown service")
	}
}
