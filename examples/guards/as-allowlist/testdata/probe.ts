// A test fixture, not an example: a guard that tries what the sandbox must
// deny (the real clock, the file system) and rejects every call with what it
// saw, so the Go test can assert on it. Built by allowlist_test.go with
// `npx asc testdata/probe.ts --target probe`.

import { Host, Memory } from "@extism/as-pdk";
import "../assembly/abort";

@external("extism:host/user", "warden_rejected")
declare function warden_rejected(code: u64, reason: u64, next: u64): void;

@external("extism:host/user", "warden_now")
declare function warden_now(): i64;

@external("wasi_snapshot_preview1", "clock_time_get")
declare function clock_time_get(id: u32, precision: u64, out: usize): u16;

@external("wasi_snapshot_preview1", "fd_prestat_get")
declare function fd_prestat_get(fd: u32, out: usize): u16;

@external("wasi_snapshot_preview1", "path_open")
declare function path_open(dirfd: u32, dirflags: u32, path: usize, pathLen: usize, oflags: u16,
  rightsBase: u64, rightsInheriting: u64, fdflags: u16, out: usize): u16;

export function warden_manifest(): i32 {
  Host.output(Uint8Array.wrap(String.UTF8.encode(`{"name":"as-probe","version":"1.0.0","abi":1,"role":"guard","phases":["before"]}`)));
  return 0;
}

export function warden_handle(): i32 {
  const buf = new ArrayBuffer(16);
  const p = changetype<usize>(buf);
  const now = warden_now();
  const clockErr = clock_time_get(0, 1, p);
  const wall = load<u64>(p);
  const prestat = fd_prestat_get(3, p);
  const path = String.UTF8.encode("etc/passwd");
  const open = path_open(3, 0, changetype<usize>(path), <usize>path.byteLength, 0, 0x2, 0, 0, p);
  const seen = "now=" + now.toString() + " wall=" + wall.toString() + " clockErrno=" + clockErr.toString() +
    " prestatErrno=" + prestat.toString() + " openErrno=" + open.toString();
  warden_rejected(Memory.allocateString("ARG_REJECTED").offset, Memory.allocateString(seen).offset,
    Memory.allocateString("nothing; this is a probe").offset);
  return 0;
}
