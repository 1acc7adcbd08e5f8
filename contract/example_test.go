package contract_test

import (
	"fmt"

	"github.com/agentwarden/warden/contract"
)

func ExampleParse() {
	src := []byte(`{
	  // a WRITE tool must say when it succeeded
	  "tools": {"create_article": {"sideEffect": "WRITE", "args": {"title": {"from": "input.title"}}}}
	}`)
	_, _, err := contract.Parse("cms.article.lifecycle", src)
	for _, p := range contract.Problems(err) {
		fmt.Printf("rule %s at %s: %s\n", p.Rule, p.Path, p.Message())
	}
	// Output:
	// rule 2 at tools.create_article.args.title.from: invalid expression prefix: expression "input.title": unknown prefix "input."
	// rule 6 at tools.create_article.success: WRITE tool without success: a WRITE tool must configure success
}

func ExampleTool_Judge() {
	c, _, _ := contract.Parse("k", []byte(`{"tools": {"q": {
	  "success": {"path": "code", "op": "EQ", "value": 200},
	  "error": {"code": "code", "message": "msg"}}}}`))
	q := c.Tool("q")
	fmt.Println(q.Judge([]byte(`{"code": "200"}`)).OK)
	fmt.Printf("%+v\n", q.Judge([]byte(`{"code": 40401, "msg": "space not found"}`)))
	// Output:
	// true
	// {OK:false Code:40401 Message:space not found}
}

func ExampleIdempotencyKey() {
	a := contract.IdempotencyKey("create_article", []string{"title", "spaceId"}, []byte(`{"title":"Hello","spaceId":7,"body":"v1"}`))
	b := contract.IdempotencyKey("create_article", []string{"title", "spaceId"}, []byte(`{"body":"v2","spaceId":7,"title":"Hello"}`))
	fmt.Println(a == b)
	// Output: true
}
