package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/agentwarden/warden/internal/model"
	"github.com/agentwarden/warden/internal/model/openai"
)

func Example() {
	// A stand-in for an OpenAI-compatible endpoint.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"call_1","type":"function","function":{"name":"query_site","arguments":"{\"space\":\"s1\""}}]},`+
			`"finish_reason":"tool_calls"}]}`)
	}))
	defer srv.Close()

	client, err := openai.New(openai.Defaults(srv.URL+"/v1", "sk-…", "gpt-4.1"))
	if err != nil {
		panic(err)
	}
	resp, err := client.Complete(context.Background(), model.Request{
		Messages: []model.Message{{Role: model.RoleUser, Content: "Which sites are in space s1?"}},
		Tools: []model.Tool{{
			Name:       "query_site",
			Parameters: []byte(`{"type":"object","properties":{"space":{"type":"string"}},"required":["space"],"additionalProperties":false}`),
			Strict:     true,
		}},
	})
	if err != nil {
		panic(err)
	}
	for _, c := range resp.Message.ToolCalls {
		// The argument text is as the model wrote it, here missing its "}".
		fmt.Printf("%s %s %s\n", c.ID, c.Name, c.Arguments)
	}
	fmt.Println(resp.FinishReason, len(resp.StrictFallbacks))
	// Output:
	// call_1 query_site {"space":"s1"
	// tool_calls 0
}

func Example_providerError() {
	// A provider refusing a conversation longer than its context window.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
	}))
	defer srv.Close()

	client, err := openai.New(openai.Defaults(srv.URL+"/v1", "sk-…", "gpt-4.1"))
	if err != nil {
		panic(err)
	}
	_, err = client.Complete(context.Background(), model.Request{
		Messages: []model.Message{{Role: model.RoleUser, Content: "…"}},
	})
	var pe *model.ProviderError
	if errors.As(err, &pe) {
		fmt.Println(errors.Is(err, model.ErrContextLength), pe.Status, pe.Code, model.KindName(err))
	}
	fmt.Println(err)
	// Output:
	// true 400 context_length_exceeded context_length
	// model/openai: model: context length exceeded: HTTP 400 (context_length_exceeded): This model's maximum context length is 8192 tokens.
}
