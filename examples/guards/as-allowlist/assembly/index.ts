// as-allowlist: a Warden tenant guard written in AssemblyScript with the
// extism PDK. Before a configured email tool runs, it checks every recipient
// in the configured argument fields against the tenant's allowed domains and
// rejects the call (ARG_REJECTED, with a next step) when one is outside them
// or is not an email address. Calls of any other tool pass.
//
// It speaks the Warden-over-extism ABI (host/extism.go): it exports
// warden_manifest and warden_handle, reads the request envelope with the
// PDK's input function, and reports its one result through the warden_*
// functions of "extism:host/user", each argument the offset of an extism
// memory block.

import { Host, Memory } from "@extism/as-pdk";
import { Kind, Value, parse } from "./json";
import "./abort"; // the guard's abort (asconfig.json: use abort=assembly/abort/guardAbort)

@external("extism:host/user", "warden_pass")
declare function warden_pass(args: u64, facts: u64): void;

@external("extism:host/user", "warden_rejected")
declare function warden_rejected(code: u64, reason: u64, next: u64): void;

@external("extism:host/user", "warden_log")
declare function warden_log(msg: u64): void;

// block copies s into a new extism memory block; 0 stands for "".
function block(s: string): u64 {
  if (s.length == 0) return 0;
  return Memory.allocateString(s).offset;
}

const manifest = `{
  "name": "as-allowlist",
  "version": "1.0.0",
  "abi": 1,
  "role": "guard",
  "phases": ["before"],
  "description": "rejects email recipients outside the tenant's allowed domains",
  "configSchema": {
    "type": "object",
    "additionalProperties": false,
    "required": ["tool", "fields", "domains"],
    "properties": {
      "tool": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
      "fields": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
      "domains": {"type": "array", "minItems": 1,
        "items": {"type": "string", "pattern": "^(\\\\*\\\\.)?[A-Za-z0-9-]+(\\\\.[A-Za-z0-9-]+)+$"}}
    }
  },
  "limits": {"memoryPages": 256}
}`;

export function warden_manifest(): i32 {
  Host.output(Uint8Array.wrap(String.UTF8.encode(manifest)));
  return 0;
}

export function warden_handle(): i32 {
  const req = parse(Host.input());
  if (req === null) abort("the request envelope is not JSON");
  const config = req!.get("config");
  if (config === null || config.kind != Kind.Obj) abort("no config");
  const tool = req!.get("tool");
  const want = config!.get("tool");
  if (tool === null || want === null || tool.str != want.str) {
    warden_pass(0, 0);
    return 0;
  }
  const en = isEnglish(req!.get("locale"));
  // The bound arguments are what the tool will receive; before binding, the
  // model's own.
  let args = req!.get("bound");
  if (args === null) args = req!.get("args");
  if (args === null || args.kind != Kind.Obj) {
    // Missing or broken arguments are ArgPolicy's to reject.
    warden_pass(0, 0);
    return 0;
  }
  const domains = lower(config!.get("domains"));
  const fields = config!.get("fields")!.strings();

  const outside = new Array<string>();
  for (let f = 0; f < fields.length; f++) {
    const copies = args.all(fields[f]);
    for (let c = 0; c < copies.length; c++) {
      const v = copies[c];
      if (v.kind == Kind.Null) continue;
      if (!(v.kind == Kind.Str || (v.kind == Kind.Arr && v.strings().length == v.items.length))) {
        reject(en ? "[" + fields[f] + "] must be an email address or an array of them"
                  : "参数 [" + fields[f] + "] 须是邮箱地址或邮箱地址数组", fixArgs(en));
        return 0;
      }
      const list = v.strings();
      for (let i = 0; i < list.length; i++) {
        const addr = addressOf(list[i]);
        const domain = domainOf(addr);
        if (domain.length == 0) {
          reject(en ? quote(list[i]) + " in [" + fields[f] + "] is not an email address"
                    : "参数 [" + fields[f] + "] 中的 " + quote(list[i]) + " 不是邮箱地址", fixArgs(en));
          return 0;
        }
        if (!allowed(domain, domains) && !outside.includes(addr)) outside.push(addr);
      }
    }
  }
  if (outside.length == 0) {
    warden_pass(0, 0);
    return 0;
  }
  const rules = config!.get("domains")!.strings();
  if (en) {
    reject((outside.length == 1 ? "recipient " : "recipients ") + outside.join(", ") +
      (outside.length == 1 ? " is" : " are") + " outside the allowed domains (" + rules.join(", ") + ")",
      "ask the user with builtin_node_follow_up for recipients within the allowed domains; do not replace or drop recipients on your own");
  } else {
    reject("收件人 " + outside.join("、") + " 不在允许的域名（" + rules.join("、") + "）之内",
      "调用 builtin_node_follow_up 请用户提供允许域名内的收件人；不要自行替换或删去收件人");
  }
  return 0;
}

function reject(reason: string, next: string): void {
  warden_rejected(block("ARG_REJECTED"), block(reason), block(next));
}

// fixArgs is the host's NEXT_FIX_ARGS text (abi/hints.go).
function fixArgs(en: bool): string {
  return en
    ? "fix the fields above to match the tool definition and call again; if you cannot tell the values, ask the user with builtin_node_follow_up"
    : "按工具定义修正上述字段后再调用；无法确定取值时调用 builtin_node_follow_up 询问用户";
}

function isEnglish(v: Value | null): bool {
  return v !== null && v.kind == Kind.Str && v.str.startsWith("en");
}

function lower(v: Value | null): Array<string> {
  const out = new Array<string>();
  if (v === null) return out;
  const s = v.strings();
  for (let i = 0; i < s.length; i++) out.push(s[i].toLowerCase());
  return out;
}

// addressOf takes the address out of `Name <user@host>`, or trims a bare one.
function addressOf(s: string): string {
  let a = s.trim();
  const lt = a.lastIndexOf("<");
  if (lt >= 0 && a.endsWith(">")) a = a.substring(lt + 1, a.length - 1).trim();
  return a;
}

// domainOf returns the lower-case domain of an address with exactly one "@",
// a non-empty local part and no spaces or separators, or "" for anything
// else: "a@evil.com, b@corp.com" must not pass as one address of corp.com.
function domainOf(addr: string): string {
  const at = addr.indexOf("@");
  if (at <= 0 || at != addr.lastIndexOf("@") || at == addr.length - 1) return "";
  for (let i = 0; i < addr.length; i++) {
    const c = addr.charCodeAt(i);
    if (c <= 0x20 || c == 0x2c || c == 0x3b || c == 0x3c || c == 0x3e || c == 0x22) return "";
  }
  let d = addr.substring(at + 1).toLowerCase();
  if (d.endsWith(".")) d = d.substring(0, d.length - 1);
  return d;
}

// allowed reports whether domain matches a rule: "corp.example" matches only
// itself, "*.corp.example" only its subdomains.
function allowed(domain: string, rules: Array<string>): bool {
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i];
    if (r.startsWith("*.")) {
      const suffix = r.substring(1);
      if (domain.length > suffix.length && domain.endsWith(suffix)) return true;
    } else if (domain == r) {
      return true;
    }
  }
  return false;
}

function quote(s: string): string {
  const max = 40;
  return '"' + (s.length > max ? s.substring(0, max) + "…" : s) + '"';
}
