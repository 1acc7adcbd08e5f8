package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"agent cms-editor: 2 skill(s) loaded, 1 dropped",
		"rule 6: WRITE tool without success",
		"- complete arguments\n  PASS\n",
		"- spaceId comes from the contract\n  PASS\n",
		"REJECTED ARG_REJECTED [argument, change]: 参数不符合工具 create_article 的定义：body: required property is missing；publishAt: \"tomorrow\" is not a valid date-time。下一步：",
		"REJECTED PLUGIN_TIMEOUT [execution, retry]: 插件 loop@1.0.0 在 100ms 内没有给出结果。下一步：",
		"- the next call on argcheck@1.0.0\n  PASS\n",
		"loop@1.0.0: 1 timeout(s), 1 instance(s) closed, 0 call(s) in flight",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q\n%s", want, out.String())
		}
	}
}
