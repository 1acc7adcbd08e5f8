// A small JSON reader for the request envelope. The guard reads a handful of
// keys from one document per call, so a tree of plain values is enough; it
// keeps every copy of a repeated key, so the guard can check them all.

export const enum Kind {
  Null,
  Bool,
  Num,
  Str,
  Arr,
  Obj,
}

export class Value {
  kind: Kind = Kind.Null;
  str: string = "";
  num: f64 = 0;
  flag: bool = false;
  // Array elements, or object member values (keys[i] names items[i]).
  items: Array<Value> = [];
  keys: Array<string> = [];

  constructor(kind: Kind) {
    this.kind = kind;
  }

  // get returns the first member named key, or null.
  get(key: string): Value | null {
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) return this.items[i];
    }
    return null;
  }

  // all returns every member named key: a document may repeat a key, and
  // consumers disagree on which copy wins.
  all(key: string): Array<Value> {
    const out = new Array<Value>();
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) out.push(this.items[i]);
    }
    return out;
  }

  // strings returns the value's string elements (a string is one element).
  strings(): Array<string> {
    const out = new Array<string>();
    if (this.kind == Kind.Str) {
      out.push(this.str);
    } else if (this.kind == Kind.Arr) {
      for (let i = 0; i < this.items.length; i++) {
        if (this.items[i].kind == Kind.Str) out.push(this.items[i].str);
      }
    }
    return out;
  }
}

const maxDepth = 128;

// parse reads one JSON document, or returns null when it is not valid JSON.
export function parse(buf: Uint8Array): Value | null {
  const p = new Parser(buf);
  const v = p.value(0);
  if (v === null) return null;
  p.space();
  return p.pos == buf.length ? v : null;
}

class Parser {
  buf: Uint8Array;
  pos: i32 = 0;

  constructor(buf: Uint8Array) {
    this.buf = buf;
  }

  space(): void {
    while (this.pos < this.buf.length) {
      const c = this.buf[this.pos];
      if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) return;
      this.pos++;
    }
  }

  value(depth: i32): Value | null {
    if (depth > maxDepth) return null;
    this.space();
    if (this.pos >= this.buf.length) return null;
    const c = this.buf[this.pos];
    if (c == 0x7b) return this.object(depth);
    if (c == 0x5b) return this.array(depth);
    if (c == 0x22) {
      const s = this.string();
      if (s === null) return null;
      const v = new Value(Kind.Str);
      v.str = s;
      return v;
    }
    if (this.word("true")) {
      const v = new Value(Kind.Bool);
      v.flag = true;
      return v;
    }
    if (this.word("false")) return new Value(Kind.Bool);
    if (this.word("null")) return new Value(Kind.Null);
    return this.number();
  }

  object(depth: i32): Value | null {
    const v = new Value(Kind.Obj);
    this.pos++; // {
    this.space();
    if (this.pos < this.buf.length && this.buf[this.pos] == 0x7d) {
      this.pos++;
      return v;
    }
    while (true) {
      this.space();
      if (this.pos >= this.buf.length || this.buf[this.pos] != 0x22) return null;
      const k = this.string();
      if (k === null) return null;
      this.space();
      if (this.pos >= this.buf.length || this.buf[this.pos] != 0x3a) return null;
      this.pos++;
      const m = this.value(depth + 1);
      if (m === null) return null;
      v.keys.push(k);
      v.items.push(m);
      this.space();
      if (this.pos >= this.buf.length) return null;
      const c = this.buf[this.pos++];
      if (c == 0x7d) return v;
      if (c != 0x2c) return null;
    }
  }

  array(depth: i32): Value | null {
    const v = new Value(Kind.Arr);
    this.pos++; // [
    this.space();
    if (this.pos < this.buf.length && this.buf[this.pos] == 0x5d) {
      this.pos++;
      return v;
    }
    while (true) {
      const e = this.value(depth + 1);
      if (e === null) return null;
      v.items.push(e);
      this.space();
      if (this.pos >= this.buf.length) return null;
      const c = this.buf[this.pos++];
      if (c == 0x5d) return v;
      if (c != 0x2c) return null;
    }
  }

  // string reads a quoted string at pos, decoding escapes.
  string(): string | null {
    this.pos++; // opening quote
    let out = "";
    let start = this.pos;
    while (this.pos < this.buf.length) {
      const c = this.buf[this.pos];
      if (c == 0x22) {
        out += this.text(start, this.pos);
        this.pos++;
        return out;
      }
      if (c < 0x20) return null;
      if (c != 0x5c) {
        this.pos++;
        continue;
      }
      out += this.text(start, this.pos);
      this.pos++;
      if (this.pos >= this.buf.length) return null;
      const e = this.buf[this.pos++];
      if (e == 0x22) out += '"';
      else if (e == 0x5c) out += "\\";
      else if (e == 0x2f) out += "/";
      else if (e == 0x62) out += "\b";
      else if (e == 0x66) out += "\f";
      else if (e == 0x6e) out += "\n";
      else if (e == 0x72) out += "\r";
      else if (e == 0x74) out += "\t";
      else if (e == 0x75) {
        // \uXXXX: one UTF-16 code unit; a surrogate pair arrives as two.
        if (this.pos + 4 > this.buf.length) return null;
        let unit: i32 = 0;
        for (let i = 0; i < 4; i++) {
          const h = hex(this.buf[this.pos + i]);
          if (h < 0) return null;
          unit = (unit << 4) | h;
        }
        this.pos += 4;
        out += String.fromCharCode(unit);
      } else return null;
      start = this.pos;
    }
    return null;
  }

  text(start: i32, end: i32): string {
    if (end <= start) return "";
    return String.UTF8.decodeUnsafe(this.buf.dataStart + <usize>start, <usize>(end - start));
  }

  word(w: string): bool {
    const n = w.length;
    if (this.pos + n > this.buf.length) return false;
    for (let i = 0; i < n; i++) {
      if (<i32>this.buf[this.pos + i] != w.charCodeAt(i)) return false;
    }
    this.pos += n;
    return true;
  }

  number(): Value | null {
    const start = this.pos;
    while (this.pos < this.buf.length) {
      const c = this.buf[this.pos];
      if ((c >= 0x30 && c <= 0x39) || c == 0x2d || c == 0x2b || c == 0x2e || c == 0x65 || c == 0x45) {
        this.pos++;
      } else break;
    }
    if (this.pos == start) return null;
    const v = new Value(Kind.Num);
    v.num = parseFloat(this.text(start, this.pos));
    if (isNaN(v.num)) return null;
    return v;
  }
}

function hex(c: u8): i32 {
  if (c >= 0x30 && c <= 0x39) return <i32>c - 0x30;
  if (c >= 0x61 && c <= 0x66) return <i32>c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return <i32>c - 0x41 + 10;
  return -1;
}
