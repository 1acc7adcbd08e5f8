package env_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agentwarden/warden/abi"
	"github.com/agentwarden/warden/abi/guest"
	"github.com/agentwarden/warden/host"
	"github.com/agentwarden/warden/host/plugintest"
	"github.com/agentwarden/warden/internal/testdata"
	"github.com/agentwarden/warden/plugins/builtins/env"
)

// fixedNow is the clock of every test: 10:03:04.567 on Wednesday
// 2024-05-01 in Asia/Shanghai.
var fixedNow = time.Date(2024, 5, 1, 2, 3, 4, 567e6, time.UTC)

func clock() time.Time { return fixedNow }

// seeded is the random source of the wasm host: every read gets the bytes a
// fresh native runner's deterministic stream starts with (sha256 of the
// little-endian counters 0, 1, …), so both builds draw the same values.
type seeded struct{}

func (seeded) Read(p []byte) (int, error) {
	for i := 0; i < len(p); i += sha256.Size {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(i/sha256.Size))
		s := sha256.Sum256(b[:])
		copy(p[i:], s[:])
	}
	return len(p), nil
}

// nativePlugin is env.Plugin without the random grant: the native runner
// then reads its deterministic stream instead of crypto/rand (it has no
// option to fix granted randomness), which seeded reproduces for wasm.
func nativePlugin() guest.Plugin {
	p := env.Plugin
	p.Manifest.Capabilities = slices.DeleteFunc(slices.Clone(p.Manifest.Capabilities), func(c abi.Capability) bool { return c == abi.CapRandom })
	return p
}

const (
	fixZH = "按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户"
	fixEN = "fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"
)

type want struct {
	outcome abi.Outcome
	code    abi.Code
	message string
	data    string // exact JSON; "" for a non-success
}

func ok(message, data string) want {
	return want{outcome: abi.OutcomeSuccess, message: message, data: data}
}

func rejected(tool, detail string) want {
	return want{outcome: abi.OutcomeRejected, code: abi.ArgRejected, message: "参数不符合工具 " + tool + " 的定义：" + detail + "。下一步：" + fixZH}
}

type tcase struct {
	name   string
	tool   string
	args   string
	config string
	locale abi.Locale
	want   want
}

var cases = []tcase{
	// current_datetime
	{name: "now in Shanghai", tool: env.ToolCurrentDatetime, args: `{}`,
		want: ok("当前时间：2024-05-01 10:03:04（Asia/Shanghai，星期三）",
			`{"datetime":"2024-05-01 10:03:04","date":"2024-05-01","time":"10:03:04","timezone":"Asia/Shanghai","offset":"+08:00","weekday":3,"timestamp":1714528984567}`)},
	{name: "now in UTC en", tool: env.ToolCurrentDatetime, args: `{}`, config: `{"timezone":"UTC"}`, locale: abi.LocaleEN,
		want: ok("current time: 2024-05-01 02:03:04 (UTC, Wednesday)",
			`{"datetime":"2024-05-01 02:03:04","date":"2024-05-01","time":"02:03:04","timezone":"UTC","offset":"Z","weekday":3,"timestamp":1714528984567}`)},
	{name: "now at a fixed offset", tool: env.ToolCurrentDatetime, args: `{}`, config: `{"timezone":"UTC-05:30"}`,
		want: ok("当前时间：2024-04-30 20:33:04（UTC-05:30，星期二）",
			`{"datetime":"2024-04-30 20:33:04","date":"2024-04-30","time":"20:33:04","timezone":"UTC-05:30","offset":"-05:30","weekday":2,"timestamp":1714528984567}`)},
	{name: "now in Tokyo from the fixed-zone table", tool: env.ToolCurrentDatetime, args: `{}`, config: `{"timezone":"Asia/Tokyo"}`,
		want: ok("当前时间：2024-05-01 11:03:04（Asia/Tokyo，星期三）",
			`{"datetime":"2024-05-01 11:03:04","date":"2024-05-01","time":"11:03:04","timezone":"Asia/Tokyo","offset":"+09:00","weekday":3,"timestamp":1714528984567}`)},
	{name: "unknown zone fails", tool: env.ToolCurrentDatetime, args: `{}`, config: `{"timezone":"Mars/Olympus"}`,
		want: want{outcome: abi.OutcomeFailed, code: abi.ToolError,
			message: "工具 builtin_env_current_datetime 发生未知错误：时区 Mars/Olympus 不可用（本构建没有时区数据库），请在配置中改用固定偏移，如 +08:00。下一步：调用 builtin_node_fail 说明原因"}},

	// generate_uuid
	{name: "uuid", tool: env.ToolGenerateUUID, args: `{}`,
		want: ok("UUID：af5570f5-a181-4b7a-b78c-af4bc70a660f", `{"uuid":"af5570f5-a181-4b7a-b78c-af4bc70a660f"}`)},
	{name: "uuid of 12 hex digits", tool: env.ToolGenerateUUID, args: `{"length":12}`,
		want: ok("UUID：af5570f5a181", `{"uuid":"af5570f5a181"}`)},
	{name: "uuid arguments not JSON", tool: env.ToolGenerateUUID, args: `{"length":12`,
		want: want{outcome: abi.OutcomeRejected, code: abi.ArgJSONInvalid,
			message: "参数不是合法 JSON：第 1 行第 13 列：unexpected end of JSON input；该处参数原文：{\"length\":12。下一步：" + fixZH}},
	{name: "uuid without arguments", tool: env.ToolGenerateUUID, args: `  `,
		want: ok("UUID：af5570f5-a181-4b7a-b78c-af4bc70a660f", `{"uuid":"af5570f5-a181-4b7a-b78c-af4bc70a660f"}`)},
	{name: "uuid length too long", tool: env.ToolGenerateUUID, args: `{"length":33}`,
		want: rejected(env.ToolGenerateUUID, "length：应在 1 到 32 之间")},
	{name: "uuid length not an integer en", tool: env.ToolGenerateUUID, args: `{"length":"8"}`, locale: abi.LocaleEN,
		want: want{outcome: abi.OutcomeRejected, code: abi.ArgRejected,
			message: "arguments do not match tool builtin_env_generate_uuid: length: must be an integer. Next: " + fixEN}},

	// format_datetime
	{name: "format default output", tool: env.ToolFormatDatetime, args: `{"input":"2024-05-01T02:03:04Z"}`,
		want: ok("格式化结果：2024-05-01 10:03:04", `{"result":"2024-05-01 10:03:04"}`)},
	{name: "format with both patterns", tool: env.ToolFormatDatetime,
		args: `{"input":"5/1/2024 1:30 PM","inputPattern":"M/d/yyyy h:mm a","outputPattern":"yyyy年MM月dd日 EEEE HH:mm 'UTC'XXX"}`,
		want: ok("格式化结果：2024年05月01日 Wednesday 13:30 UTC+08:00", `{"result":"2024年05月01日 Wednesday 13:30 UTC+08:00"}`)},
	{name: "format millis and 12-hour", tool: env.ToolFormatDatetime,
		args: `{"input":"2024-05-01 00:05:06.789","outputPattern":"yy-M-d hh:m:s.SSS a EEE"}`,
		want: ok("格式化结果：24-5-1 12:5:6.789 AM Wed", `{"result":"24-5-1 12:5:6.789 AM Wed"}`)},
	{name: "format quote literal", tool: env.ToolFormatDatetime,
		args: `{"input":"2024-05-01","outputPattern":"''yy''"}`,
		want: ok("格式化结果：'24'", `{"result":"'24'"}`)},
	{name: "format bad output pattern", tool: env.ToolFormatDatetime,
		args: `{"input":"2024-05-01","outputPattern":"yyyy-QQ"}`,
		want: rejected(env.ToolFormatDatetime, `outputPattern：不支持的格式 "QQ"；可用格式符 yyyy yy MM M dd d HH H hh h mm m ss s SSS a EEE EEEE XXX，字面文字用单引号括起`)},
	{name: "format input pattern without a date", tool: env.ToolFormatDatetime,
		args: `{"input":"13:30","inputPattern":"HH:mm"}`,
		want: rejected(env.ToolFormatDatetime, "inputPattern：读取日期的格式须包含年、月、日（yyyy、MM、dd）")},
	{name: "format impossible date", tool: env.ToolFormatDatetime, args: `{"input":"2023-02-29"}`,
		want: rejected(env.ToolFormatDatetime, `input："2023-02-29" 不是可识别的日期时间；可用格式如 2024-05-01 13:30:00、2024-05-01、2024-05-01T13:30:00+08:00`)},
	{name: "format input against its pattern", tool: env.ToolFormatDatetime, args: `{"input":"2024-5-1","inputPattern":"yyyy-MM-dd"}`,
		want: rejected(env.ToolFormatDatetime, `input："2024-5-1" 不符合格式 yyyy-MM-dd 或不是有效日期`)},
	{name: "format missing input en", tool: env.ToolFormatDatetime, args: `{}`, locale: abi.LocaleEN,
		want: want{outcome: abi.OutcomeRejected, code: abi.ArgRejected,
			message: "arguments do not match tool builtin_env_format_datetime: input: is required. Next: " + fixEN}},

	// add_datetime
	{name: "add days by default", tool: env.ToolAddDatetime, args: `{"base":"2024-05-01","amount":30}`,
		want: ok("结果：2024-05-31（30 天）", `{"result":"2024-05-31"}`)},
	{name: "add a month clamps the day", tool: env.ToolAddDatetime, args: `{"base":"2024-01-31 08:00:00","amount":1,"unit":"MONTH"}`,
		want: ok("结果：2024-02-29 08:00:00（1 个月）", `{"result":"2024-02-29 08:00:00"}`)},
	{name: "subtract years from a leap day", tool: env.ToolAddDatetime, args: `{"base":"2024-02-29","amount":-1,"unit":"YEAR"}`,
		want: ok("结果：2023-02-28（-1 年）", `{"result":"2023-02-28"}`)},
	{name: "add hours to a date gains a time", tool: env.ToolAddDatetime, args: `{"base":"2024-05-01","amount":-2,"unit":"HOUR"}`, locale: abi.LocaleEN,
		want: ok("result: 2024-04-30 22:00:00 (-2 hour(s))", `{"result":"2024-04-30 22:00:00"}`)},
	{name: "add weeks keeps the input form", tool: env.ToolAddDatetime, args: `{"base":"2024/05/01","amount":2,"unit":"WEEK"}`,
		want: ok("结果：2024/05/15（2 周）", `{"result":"2024/05/15"}`)},
	{name: "add with a lowercase unit", tool: env.ToolAddDatetime, args: `{"base":"2024-05-01","amount":1,"unit":"day"}`,
		want: rejected(env.ToolAddDatetime, "unit：应为 SECOND、MINUTE、HOUR、DAY、WEEK、MONTH、YEAR 之一")},
	{name: "add every field wrong", tool: env.ToolAddDatetime, args: `{"base":"tomorrow","amount":1.5}`,
		want: rejected(env.ToolAddDatetime, "amount：应为整数")},
	{name: "add bad base", tool: env.ToolAddDatetime, args: `{"base":"tomorrow","amount":1}`,
		want: rejected(env.ToolAddDatetime, `base："tomorrow" 不是可识别的日期时间；可用格式如 2024-05-01 13:30:00、2024-05-01、2024-05-01T13:30:00+08:00`)},
	{name: "add past year 9999", tool: env.ToolAddDatetime, args: `{"base":"9999-12-31","amount":1}`,
		want: rejected(env.ToolAddDatetime, "amount：结果超出 0001–9999 年")},

	// diff_datetime
	{name: "diff days", tool: env.ToolDiffDatetime, args: `{"from":"2024-05-01","to":"2024-06-01 12:00:00"}`,
		want: ok("间隔：31 天", `{"diff":31,"unit":"DAY"}`)},
	{name: "diff negative hours", tool: env.ToolDiffDatetime, args: `{"from":"2024-05-01 10:00:00","to":"2024-05-01T00:30:00Z","unit":"HOUR"}`,
		want: ok("间隔：-1 小时", `{"diff":-1,"unit":"HOUR"}`)},
	{name: "diff whole months", tool: env.ToolDiffDatetime, args: `{"from":"2024-01-31","to":"2024-02-29","unit":"MONTH"}`, locale: abi.LocaleEN,
		want: ok("difference: 0 month(s)", `{"diff":0,"unit":"MONTH"}`)},
	{name: "diff years", tool: env.ToolDiffDatetime, args: `{"from":"2000-02-29","to":"2024-02-28","unit":"YEAR"}`,
		want: ok("间隔：23 年", `{"diff":23,"unit":"YEAR"}`)},
	{name: "diff seconds truncate toward zero", tool: env.ToolDiffDatetime,
		args: `{"from":"2024-05-01 10:00:01.900","to":"2024-05-01 10:00:00.000","unit":"SECOND"}`,
		want: ok("间隔：-1 秒", `{"diff":-1,"unit":"SECOND"}`)},
	{name: "diff both missing", tool: env.ToolDiffDatetime, args: `{"to":5}`,
		want: rejected(env.ToolDiffDatetime, "from：缺少必填参数；to：应为字符串")},

	// get_weekday
	{name: "weekday", tool: env.ToolGetWeekday, args: `{"date":"2024-05-05"}`,
		want: ok("2024-05-05 是星期日", `{"date":"2024-05-05","weekday":7,"name":"星期日"}`)},
	{name: "weekday of an instant in the zone en", tool: env.ToolGetWeekday, args: `{"date":"2024-05-05T20:00:00Z"}`, locale: abi.LocaleEN,
		want: ok("2024-05-06 is a Monday", `{"date":"2024-05-06","weekday":1,"name":"Monday"}`)},
	{name: "weekday null date", tool: env.ToolGetWeekday, args: `{"date":null}`,
		want: rejected(env.ToolGetWeekday, "date：缺少必填参数")},

	// random_int
	{name: "random int", tool: env.ToolRandomInt, args: `{"min":1,"max":100}`,
		want: ok("随机整数：4", `{"value":4,"min":1,"max":100}`)},
	{name: "random int of one value", tool: env.ToolRandomInt, args: `{"min":-7,"max":-7}`,
		want: ok("随机整数：-7", `{"value":-7,"min":-7,"max":-7}`)},
	{name: "random int reversed", tool: env.ToolRandomInt, args: `{"min":10,"max":1}`,
		want: rejected(env.ToolRandomInt, "max：应不小于 min（10）")},
	{name: "random int beyond 2^53", tool: env.ToolRandomInt, args: `{"min":0,"max":1e17}`,
		want: rejected(env.ToolRandomInt, "max：应为整数")},

	// hash
	{name: "sha256 by default", tool: env.ToolHash, args: `{"input":"abc"}`,
		want: ok("SHA256 哈希：ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
			`{"hash":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad","algorithm":"SHA256"}`)},
	{name: "md5", tool: env.ToolHash, args: `{"input":"abc","algorithm":"MD5"}`,
		want: ok("MD5 哈希：900150983cd24fb0d6963f7d28e17f72", `{"hash":"900150983cd24fb0d6963f7d28e17f72","algorithm":"MD5"}`)},
	{name: "sha1 shortened en", tool: env.ToolHash, args: `{"input":"abc","algorithm":"SHA1","length":8}`, locale: abi.LocaleEN,
		want: ok("SHA1 hash: a9993e36", `{"hash":"a9993e36","algorithm":"SHA1"}`)},
	{name: "sha512 of empty", tool: env.ToolHash, args: `{"input":"","algorithm":"SHA512","length":16}`,
		want: ok("SHA512 哈希：cf83e1357eefb8bd", `{"hash":"cf83e1357eefb8bd","algorithm":"SHA512"}`)},
	{name: "hash length beyond the digest", tool: env.ToolHash, args: `{"input":"abc","algorithm":"MD5","length":40}`,
		want: rejected(env.ToolHash, "length：MD5 的摘要只有 32 位十六进制")},
	{name: "hash unknown algorithm and no input", tool: env.ToolHash, args: `{"algorithm":"CRC32"}`,
		want: rejected(env.ToolHash, "input：缺少必填参数；algorithm：应为 MD5、SHA1、SHA256、SHA512 之一")},
}

func request(tc tcase) *abi.Request {
	r := &abi.Request{ABI: abi.Version, Kind: abi.RoleBuiltin, Tool: tc.tool, Args: json.RawMessage(tc.args), Locale: tc.locale}
	if !json.Valid([]byte(tc.args)) {
		// As the loop sends them: text that is not JSON travels as text.
		r.Args, r.ArgsText = nil, tc.args
	}
	if tc.config != "" {
		r.Config = json.RawMessage(tc.config)
	}
	return r
}

func check(t *testing.T, build string, v abi.Verdict, w want) {
	t.Helper()
	o := v.Observation
	if o == nil {
		t.Fatalf("%s: no observation: %+v", build, v)
	}
	if o.Outcome != w.outcome || o.Code != w.code {
		t.Fatalf("%s: got %v %s (%q), want %v %s", build, o.Outcome, o.Code, o.Message(), w.outcome, w.code)
	}
	if got := o.Message(); got != w.message {
		t.Fatalf("%s: message\n got %q\nwant %q", build, got, w.message)
	}
	if string(o.Data) != w.data {
		t.Fatalf("%s: data\n got %s\nwant %s", build, o.Data, w.data)
	}
}

func loadWasm(t *testing.T, opts host.Options) *host.Plugin {
	t.Helper()
	ctx := context.Background()
	opts.CacheDir = testdata.CacheDir(t)
	h, err := host.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(ctx) })
	path, err := testdata.Build("./plugins/builtins/env/cmd")
	if err != nil {
		t.Fatal(err)
	}
	src, err := host.ReadSource(path, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.Load(ctx, src, host.Policy{Capabilities: env.Plugin.Manifest.Capabilities})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNativeAndWasm runs every case in-process and through the wasm build
// under the same fixed clock and seed, and requires the exact expected
// observation from both and byte-identical verdicts.
func TestNativeAndWasm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := loadWasm(t, host.Options{Clock: clock, Rand: seeded{}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, err := guest.NewNative(nativePlugin(), 0, guest.WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			req := request(tc)
			body, _ := json.Marshal(req)
			nv, err := n.Call(ctx, body)
			if err != nil {
				t.Fatal(err)
			}
			if nv.Observation != nil {
				nv.Observation.Locale = tc.locale
			}
			check(t, "native", nv, tc.want)
			wv := p.Builtin(ctx, "tenant", request(tc))
			check(t, "wasm", wv, tc.want)
			nj, _ := json.Marshal(nv)
			wj, _ := json.Marshal(wv)
			if string(nj) != string(wj) {
				t.Fatalf("native and wasm differ:\nnative %s\nwasm   %s", nj, wj)
			}
		})
	}
}

// TestZoneDatabase shows the difference the wasm sandbox makes: a zone with
// daylight saving time needs a zone database, which the wasm build does not
// carry, so it fails there with a hint to configure an offset, while zones
// of env.FixedZones work in both builds (TestNativeAndWasm).
func TestZoneDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tc := tcase{tool: env.ToolGetWeekday, args: `{"date":"2024-07-01T23:30:00Z"}`, config: `{"timezone":"Europe/Berlin"}`}
	p := loadWasm(t, host.Options{Clock: clock, Rand: seeded{}})
	t.Run("wasm has no database", func(t *testing.T) {
		t.Parallel()
		check(t, "wasm", p.Builtin(ctx, "tenant", request(tc)), want{outcome: abi.OutcomeFailed, code: abi.ToolError,
			message: "工具 builtin_env_get_weekday 发生未知错误：时区 Europe/Berlin 不可用（本构建没有时区数据库），请在配置中改用固定偏移，如 +08:00。下一步：调用 builtin_node_fail 说明原因"})
	})
	t.Run("native reads the system database", func(t *testing.T) {
		t.Parallel()
		if _, err := time.LoadLocation("Europe/Berlin"); err != nil {
			t.Skip("no zone database on this machine")
		}
		n, err := guest.NewNative(nativePlugin(), 0, guest.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(request(tc))
		v, err := n.Call(ctx, body)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "native", v, ok("2024-07-02 是星期二", `{"date":"2024-07-02","weekday":2,"name":"星期二"}`))
	})
}

// TestConformance runs the plugintest kit with one case per tool.
func TestConformance(t *testing.T) {
	t.Parallel()
	path, err := testdata.Build("./plugins/builtins/env/cmd")
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pcs []plugintest.Case
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.tool] || tc.want.outcome != abi.OutcomeSuccess {
			continue
		}
		seen[tc.tool] = true
		pcs = append(pcs, plugintest.Case{Name: tc.tool, Request: *request(tc), Want: plugintest.WantOutcome(abi.OutcomeSuccess, "")})
	}
	if len(pcs) != len(env.Plugin.Manifest.Tools) {
		t.Fatalf("%d conformance cases for %d tools", len(pcs), len(env.Plugin.Manifest.Tools))
	}
	plugintest.Run(t, wasm, plugintest.Options{Name: "env", Host: host.Options{CacheDir: testdata.CacheDir(t), Clock: clock, Rand: seeded{}},
		Policy: host.Policy{Capabilities: env.Plugin.Manifest.Capabilities}, Cases: pcs})
}
